#!/usr/bin/env python3
"""Checks the user-facing Markdown of the repository: README.md and every page under docs/.

* Every relative link resolves: the file or directory exists inside the repository, and an
  anchor (`page.md#section`, `#section`) names a heading or an explicit id of the target page.
  Anchors are computed as the page's renderer computes them: GitHub's rules for README.md (read
  on GitHub or in an editor), Python-Markdown's (mkdocs) for pages under docs/. mkdocs --strict
  checks the docs pages too; README.md is outside its docs_dir, so this is its only check.
* No page refers to the project's issue tracker by number ("issue 37", "issues 35/36", "#37"):
  a user reads what works, not which issue did it. Links to other projects' trackers are URLs
  and are not counted.

Usage: check_links.py [REPO_ROOT]  (default: the repository holding this file). Prints one line
per problem, `path:line: message`, and exits 1 if there is any.
"""
import re
import sys
import unicodedata
from pathlib import Path

_FENCE = re.compile(r"^\s*(```|~~~)")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_INLINE_CODE = re.compile(r"(`+)(.+?)\1")
# [text](target "title") and ![alt](target); the target may be wrapped in <>.
_INLINE_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
_REF_DEF = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$")
_HTML_LINK = re.compile(r"""\b(?:href|src)\s*=\s*["']([^"']+)["']""")
_EXPLICIT_ID = re.compile(r"""\{\s*#([\w-]+)[^}]*\}|\b(?:id|name)\s*=\s*["']([^"']+)["']""")
_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")
_URL = re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.-]*://\S+")
# "issue 37", "issues 35/36", "Issue #12", and a bare "#37" (not an HTML entity like &#10;).
_ISSUE = re.compile(r"\bissues?\s+#?\d+|(?<![\w&/#])#\d+\b", re.IGNORECASE)


def user_facing_pages(root):
    """README.md and every Markdown page under docs/, sorted."""
    pages = [root / "README.md"] if (root / "README.md").is_file() else []
    docs = root / "docs"
    if docs.is_dir():
        pages += sorted(docs.rglob("*.md"))
    return pages


def _heading_text(raw):
    """The text a renderer makes of a heading's Markdown: code spans, emphasis and links
    reduced to their words, trailing {#id} attributes dropped."""
    text = re.sub(r"\{[^}]*\}\s*$", "", raw)
    text = _INLINE_CODE.sub(lambda m: m.group(2), text)
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"<[^>]+>", "", text)
    return re.sub(r"(\*\*|__|\*|_)(.+?)\1", r"\2", text)


def slug_github(text):
    """GitHub's heading anchor: lower case, punctuation dropped, each space a hyphen."""
    text = text.strip().lower()
    text = "".join(c for c in text if c.isalnum() or c in " -_" or unicodedata.category(c) == "Mn")
    return text.replace(" ", "-")


def slug_mkdocs(text):
    """Python-Markdown's toc slugify (mkdocs' default): ASCII only, punctuation dropped,
    runs of spaces and hyphens one hyphen."""
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    text = re.sub(r"[^\w\s-]", "", text).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def _lines_outside_code(text):
    """(line number, line) of every line outside fenced code blocks."""
    fence = None
    for number, line in enumerate(text.splitlines(), 1):
        m = _FENCE.match(line)
        if m:
            if fence is None:
                fence = m.group(1)
            elif m.group(1) == fence:
                fence = None
            continue
        if fence is None:
            yield number, line


def anchors(page, github):
    """Every anchor a link into `page` may name: its headings' slugs (with the renderer's
    suffixes for repeated headings) and its explicit ids."""
    slug = slug_github if github else slug_mkdocs
    seen, result = {}, set()
    for _, line in _lines_outside_code(page.read_text(encoding="utf-8")):
        for m in _EXPLICIT_ID.finditer(line):
            result.add(m.group(1) or m.group(2))
        m = _HEADING.match(line)
        if not m:
            continue
        base = slug(_heading_text(m.group(2)))
        n = seen.get(base, 0)
        seen[base] = n + 1
        result.add(base if n == 0 else (f"{base}-{n}" if github else f"{base}_{n}"))
    return result


def _links(line):
    without_code = _INLINE_CODE.sub("", line)
    for pattern in (_INLINE_LINK, _REF_DEF, _HTML_LINK):
        for m in pattern.finditer(without_code):
            yield m.group(1)


def check(root):
    """Every problem found, as `path:line: message` strings."""
    root = Path(root).resolve()
    problems = []
    anchor_cache = {}
    for page in user_facing_pages(root):
        rel = page.relative_to(root)
        github = page == root / "README.md"
        text = page.read_text(encoding="utf-8")

        for number, line in enumerate(text.splitlines(), 1):
            words = _URL.sub("", line)
            for m in _ISSUE.finditer(words):
                problems.append(f"{rel}:{number}: refers to an issue by number: '{m.group(0)}'")

        for number, line in _lines_outside_code(text):
            for target in _links(line):
                if not target or _SCHEME.match(target) or target.startswith("//"):
                    continue
                path_part, _, fragment = target.partition("#")
                dest = page if not path_part else (page.parent / path_part).resolve()
                if root not in dest.parents and dest != root:
                    problems.append(f"{rel}:{number}: link '{target}' leaves the repository")
                    continue
                if not dest.exists():
                    problems.append(f"{rel}:{number}: link '{target}': "
                                    f"{dest.relative_to(root)} does not exist")
                    continue
                if not fragment:
                    continue
                if dest.suffix != ".md" or not dest.is_file():
                    problems.append(f"{rel}:{number}: link '{target}': an anchor into "
                                    f"{dest.relative_to(root)}, which is not a Markdown page")
                    continue
                key = (dest, github)
                if key not in anchor_cache:
                    anchor_cache[key] = anchors(dest, github)
                if fragment not in anchor_cache[key]:
                    problems.append(f"{rel}:{number}: link '{target}': "
                                    f"{dest.relative_to(root)} has no anchor '#{fragment}'")
    return problems


def main(argv):
    root = Path(argv[1]) if len(argv) > 1 else Path(__file__).resolve().parents[2]
    problems = check(root)
    for p in problems:
        print(p)
    pages = len(user_facing_pages(Path(root).resolve()))
    print(f"check_links: {pages} pages, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
