"""Every relative link and #anchor in README.md, CONTRIBUTING.md and docs/*.md resolves,
anchors by GitHub's heading slugs; the README stays short and its picture is a real PNG."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^\s*(`{3,}|~{3,})")
CODE_SPAN = re.compile(r"(`+).+?\1")
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
README_MOST_LINES = 220


def outside_fences(page: Path) -> list[str]:
    """The page's lines outside fenced code blocks."""
    lines, fence = [], ""
    for line in page.read_text().splitlines():
        opened = FENCE.match(line)
        if fence:
            if opened and opened.group(1)[0] == fence[0] and len(opened.group(1)) >= len(fence):
                fence = ""
            continue
        if opened and "`" not in line[opened.end() :]:
            fence = opened.group(1)
            continue
        lines.append(line)
    return lines


def prose_lines(page: Path) -> list[str]:
    """The lines outside fenced code blocks, with inline code spans blanked."""
    return [CODE_SPAN.sub("", line) for line in outside_fences(page)]


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: its text as rendered (code, emphasis and link
    markup gone), lower-cased, punctuation dropped, each space a hyphen."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).replace("`", "").replace("*", "")
    text = re.sub(r"[^\w\- ]", "", text.lower())
    return text.replace(" ", "-")


@cache
def anchors(page: Path) -> frozenset[str]:
    slugs = [
        slug(found.group(2)) for line in outside_fences(page) if (found := HEADING.match(line))
    ]
    # A repeated heading's anchor is numbered as GitHub does: name, name-1, name-2 …
    return frozenset(
        name if not (n := slugs[:at].count(name)) else f"{name}-{n}"
        for at, name in enumerate(slugs)
    )


def links(page: Path) -> list[str]:
    return [target for line in prose_lines(page) for target in LINK.findall(line)]


def problem(page: Path, target: str) -> str | None:
    """Why `target`, a link on `page`, does not resolve (None: it does)."""
    if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # https:, mailto: …: not checked here
        return None
    path, _, anchor = target.partition("#")
    linked = (page.parent / path).resolve() if path else page
    if not linked.exists():
        return f"{target}: no such file"
    if anchor and linked.suffix == ".md" and anchor not in anchors(linked):
        return f"{target}: no heading with the anchor #{anchor} in {linked.name}"
    return None


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_every_link_resolves(page: Path) -> None:
    broken = [found for target in links(page) if (found := problem(page, target))]
    assert not broken, f"{page.relative_to(ROOT)}: {broken}"


def test_the_checker_sees_links_and_anchors() -> None:
    """Guards the test itself: the README links into docs/, and a heading with code,
    punctuation and an ampersand slugs as GitHub's does."""
    assert any(target.startswith("docs/") for target in links(ROOT / "README.md"))
    assert (
        slug("Webhook schema (`agentweb.notification/1`)") == "webhook-schema-agentwebnotification1"
    )
    assert slug("Approve & remember") == "approve--remember"
    assert slug("agentweb's own agent runtime") == "agentwebs-own-agent-runtime"


def test_every_docs_page_is_in_the_index() -> None:
    index = ROOT / "docs" / "README.md"
    listed = {(index.parent / target.partition("#")[0]).resolve() for target in links(index)}
    pages = {page.resolve() for page in (ROOT / "docs").glob("*.md")} - {index.resolve()}
    assert not pages - listed, (
        f"docs/README.md does not link {sorted(p.name for p in pages - listed)}"
    )


def test_the_readme_is_short_and_its_picture_is_a_png() -> None:
    readme = ROOT / "README.md"
    assert len(readme.read_text().splitlines()) <= README_MOST_LINES
    pictures = [
        target
        for line in prose_lines(readme)
        for target in re.findall(r"!\[[^\]]*\]\(([^)\s]+)", line)
    ]
    assert pictures, "the README shows no picture"
    for picture in pictures:
        assert (ROOT / picture).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", picture
