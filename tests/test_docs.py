"""The docs stay a manual: short pages that say how things are now, links that resolve.

Cheap checks on README.md and docs/: every page within its length, every relative link (and its
#anchor) pointing at something that exists, and no dated or per-session entries outside the
decision records (docs/decisions/), which are where the history of a choice belongs.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
DECISIONS = DOCS / "decisions"
MAX_PAGE_LINES = 300
MAX_DECISION_LINES = 40

PAGES = sorted(DOCS.rglob("*.md"))
LINKED = [ROOT / "README.md", *PAGES]

FENCE = re.compile(r"^(```|~~~).*?^\1", re.MULTILINE | re.DOTALL)
LINK = re.compile(r"\]\(([^()\s]+)\)")
HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.MULTILINE)
# A date such as 2026-11-29, but not a Kedro run id / save version (2026-11-26T07.41.04.417Z),
# which pages show as an example of the format.
DATE = re.compile(r"\b20\d\d-[01]\d-[0-3]\d(?!T\d\d\.)")
SESSION = re.compile(r"\bsessions? \d+", re.IGNORECASE)


def _text(path: Path) -> str:
    """A page without its fenced code blocks (code may hold anything)."""
    return FENCE.sub("", path.read_text(encoding="utf-8"))


def _slug(heading: str) -> str:
    """The anchor GitHub gives a heading: markup dropped, lower case, punctuation removed,
    spaces to hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link's text
    text = text.replace("`", "").replace("*", "").strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    anchors = set()
    for heading in HEADING.findall(_text(path)):
        slug = _slug(heading)
        count = seen.get(slug, 0)
        anchors.add(slug if count == 0 else f"{slug}-{count}")
        seen[slug] = count + 1
    return anchors


def _name(path: Path) -> str:
    return str(path.relative_to(ROOT))


def test_there_are_pages_to_check():
    assert (DOCS / "performance.md") in PAGES and any(p.parent == DECISIONS for p in PAGES)


@pytest.mark.parametrize("page", PAGES, ids=_name)
def test_page_is_short(page):
    limit = MAX_DECISION_LINES if page.parent == DECISIONS and page.name != "README.md" else MAX_PAGE_LINES
    lines = len(page.read_text(encoding="utf-8").splitlines())
    assert lines <= limit, f"{_name(page)} has {lines} lines, more than {limit}: split it or move history to git"


@pytest.mark.parametrize("page", LINKED, ids=_name)
def test_relative_links_resolve(page):
    broken = []
    for target in LINK.findall(_text(page)):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
            continue
        file_part, _, anchor = target.partition("#")
        linked = (page.parent / file_part).resolve() if file_part else page
        if not linked.exists():
            broken.append(f"{target}: no file {linked}")
        elif anchor and linked.suffix == ".md" and anchor not in _anchors(linked):
            broken.append(f"{target}: no heading with anchor #{anchor} in {_name(linked)}")
    assert not broken, f"{_name(page)}: " + "; ".join(broken)


@pytest.mark.parametrize("page", [p for p in LINKED if p.parent != DECISIONS], ids=_name)
def test_no_dated_or_session_entries_outside_decision_records(page):
    text = _text(page)
    found = DATE.findall(text) + SESSION.findall(text)
    assert not found, (f"{_name(page)} holds dated or per-session entries {sorted(set(found))}: say how things are "
                       "now, and put what was tried in a decision record (docs/decisions/) or leave it to git")


def test_every_decision_record_is_indexed_and_shaped():
    index = (DECISIONS / "README.md").read_text(encoding="utf-8")
    records = sorted(p for p in DECISIONS.glob("[0-9][0-9][0-9]-*.md"))
    assert records
    for record in records:
        text = record.read_text(encoding="utf-8")
        assert f"({record.name})" in index, f"{record.name} is not listed in docs/decisions/README.md"
        assert "**Question.**" in text and "**Decision.**" in text, f"{record.name} lacks a Question or a Decision"
    numbers = [record.name[:3] for record in records]
    assert len(numbers) == len(set(numbers)), f"two decision records share a number: {numbers}"
