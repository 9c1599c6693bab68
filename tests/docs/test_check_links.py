"""check_links.py on small trees: it finds each kind of problem, and only those."""
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import check_links  # noqa: E402

SCRIPT = Path(__file__).resolve().parent / "check_links.py"


def write(root, files):
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


CLEAN = {
    "README.md": (
        "# Project\n\n## Two commands\n\nSee [the guide](docs/guide.md#object-storage-s3),\n"
        "[below](#two-commands), [the tree](docs/) and [a script](scripts/run.sh).\n"
        "Upstream: [a report](https://github.com/other/project/issues/502).\n"
    ),
    "scripts/run.sh": "#!/bin/sh\n",
    "docs/index.md": (
        "# Home\n\n[Guide](guide.md), [CLI](cli.md#the-strata-command), "
        "[again](guide.md#usage_1), [by id](cli.md#by-hand).\n\n"
        "```sh\n#SBATCH --nodes=4\nsee [nothing](missing.md) in code\n```\n\n"
        "An entity &#10; and `[code](missing.md)` are not links.\n"
    ),
    "docs/guide.md": "# Guide\n\n## Object storage (S3)\n\n## Usage\n\n## Usage\n",
    "docs/cli.md": "# The `strata` command\n\n<a id=\"by-hand\"></a>\n",
}


def test_clean_tree_has_no_problems(tmp_path):
    write(tmp_path, CLEAN)
    assert check_links.check(tmp_path) == []
    assert subprocess.run([sys.executable, SCRIPT, tmp_path],
                          capture_output=True).returncode == 0


def test_broken_link_is_found(tmp_path):
    write(tmp_path, CLEAN)
    write(tmp_path, {"README.md": CLEAN["README.md"] + "\n[gone](docs/missing.md)\n"})
    assert check_links.check(tmp_path) == [
        "README.md:9: link 'docs/missing.md': docs/missing.md does not exist"]


def test_missing_anchor_is_found(tmp_path):
    write(tmp_path, CLEAN)
    write(tmp_path, {"docs/guide.md": CLEAN["docs/guide.md"] + "\nSee [cli](cli.md#nope).\n"})
    assert check_links.check(tmp_path) == [
        "docs/guide.md:9: link 'cli.md#nope': docs/cli.md has no anchor '#nope'"]


def test_anchor_into_the_same_page_is_checked(tmp_path):
    write(tmp_path, CLEAN)
    write(tmp_path, {"README.md": CLEAN["README.md"] + "[up](#three-commands)\n"})
    assert check_links.check(tmp_path) == [
        "README.md:8: link '#three-commands': README.md has no anchor '#three-commands'"]


@pytest.mark.parametrize("words", ["done in issue 37", "issues 35/36 added it",
                                   "Issue #12's goal", "see #37", "(#5)"])
def test_issue_numbers_are_found(tmp_path, words):
    write(tmp_path, CLEAN)
    write(tmp_path, {"docs/guide.md": CLEAN["docs/guide.md"] + f"\nThis was {words}.\n"})
    problems = check_links.check(tmp_path)
    assert len(problems) == 1
    assert problems[0].startswith("docs/guide.md:9: refers to an issue by number")


def test_link_out_of_the_repository_is_found(tmp_path):
    repo = tmp_path / "repo"
    write(repo, CLEAN)
    write(tmp_path, {"shared/NOTES.md": "# Notes\n"})
    write(repo, {"README.md": CLEAN["README.md"] + "[notes](../shared/NOTES.md)\n"})
    assert check_links.check(repo) == [
        "README.md:8: link '../shared/NOTES.md' leaves the repository"]


def test_every_problem_is_reported_and_the_script_fails(tmp_path):
    write(tmp_path, CLEAN)
    write(tmp_path, {"docs/extra.md": "[a](nothere.md) [b](guide.md#usage-2) in issue 40\n"})
    result = subprocess.run([sys.executable, SCRIPT, tmp_path], capture_output=True, text=True)
    assert result.returncode == 1
    assert "docs/extra.md:1: link 'nothere.md': docs/nothere.md does not exist" in result.stdout
    assert "docs/guide.md has no anchor '#usage-2'" in result.stdout
    assert "refers to an issue by number: 'issue 40'" in result.stdout


def test_slugs_follow_each_renderer():
    heading = check_links._heading_text("The `strata` command: Zarr v3 — **fast**")
    assert check_links.slug_github(heading) == "the-strata-command-zarr-v3--fast"
    assert check_links.slug_mkdocs(heading) == "the-strata-command-zarr-v3-fast"
