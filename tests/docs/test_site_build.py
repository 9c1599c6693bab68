"""The repository's mkdocs.yml fails a strict build on what docs.build must catch: a page left
out of the nav, a link to a missing page, an anchor no heading makes. Each case builds a small
site with the repository's settings (theme, extensions, validation) and only its nav replaced,
run as ctest's docs.build runs it (no --quiet: it hides the warnings --strict counts)."""
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]


def build(tmp_path, pages):
    config = yaml.safe_load((REPO / "mkdocs.yml").read_text(encoding="utf-8"))
    config["nav"] = [{"Home": "index.md"}, {"Guide": "guide.md"}]
    (tmp_path / "mkdocs.yml").write_text(yaml.safe_dump(config), encoding="utf-8")
    for name, text in pages.items():
        (tmp_path / "docs" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "docs" / name).write_text(text, encoding="utf-8")
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict",
                           "--config-file", tmp_path / "mkdocs.yml", "--site-dir", tmp_path / "site"],
                          capture_output=True, text=True, env=env)


GOOD = {"index.md": "# Home\n\nSee [the guide](guide.md#usage).\n",
        "guide.md": "# Guide\n\n## Usage\n"}


def test_a_good_site_builds(tmp_path):
    result = build(tmp_path, GOOD)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "site" / "guide" / "index.html").is_file()


@pytest.mark.parametrize("pages, message", [
    ({"extra.md": "# Extra\n"}, "not included in the \"nav\" configuration"),
    ({"index.md": "# Home\n\n[gone](missing.md)\n"}, "not found among documentation files"),
    ({"index.md": "# Home\n\n[there](guide.md#nowhere)\n"}, "does not contain an anchor '#nowhere'"),
])
def test_strict_build_fails(tmp_path, pages, message):
    result = build(tmp_path, {**GOOD, **pages})
    assert result.returncode != 0
    assert message in result.stderr
