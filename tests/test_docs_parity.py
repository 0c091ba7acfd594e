"""The Chinese user guide keeps step with the English one, page by page and section by section.

The English user guide is the site's Home, Install and Guarantees pages and every page under
``docs/guide/``; the Chinese guide holds one page for each, at the same path under ``docs/zh/``.
For every pair:

- each page exists in both languages;
- each ``## ``/``### `` heading of the English page has one on the Chinese page, at the same
  level and in the same order. A Chinese heading names the English one by its anchor,
  ``## 快速上手 {#quickstart}``, so a link to ``#quickstart`` works in both languages and the
  sections pair up however they are worded;
- each section (and the top of the page, before its first heading) holds as many ``python``
  examples in both languages.

Every example of both guides runs in ``tests/test_readme.py``; the site builds with both in
``tests/test_docs.py``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import markdown
import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
ZH = DOCS / "zh"
#: The pages of the user guide outside ``guide/``; Performance, Development and the API
#: reference stay English, and the Chinese pages link to them.
TOP_PAGES = ("index.md", "install.md", "guarantees.md")
#: The name of the page the made-up guides below hold (not a page of the repository).
PAGE = "page"
ANCHOR = re.compile(r"\s*\{#([^}\s]+)\}\s*$")


@dataclass(frozen=True)
class Section:
    """One ``## ``/``### `` section of a page (level 0: the top of the page, before them)."""

    level: int
    anchor: str
    title: str
    examples: int  # python blocks up to the next heading of any level

    def __str__(self) -> str:
        return "the top of the page" if not self.level else f"'{'#' * self.level} {self.title}'"


def user_guide(root: Path) -> set[str]:
    """The user-guide pages under ``root``, as paths relative to it."""
    pages = {name for name in TOP_PAGES if (root / name).is_file()}
    return pages | {page.relative_to(root).as_posix() for page in (root / "guide").glob("*.md")}


def _english_anchors(text: str) -> list[str]:
    """The anchors the site gives the ``##``/``###`` headings of ``text``, in order."""
    md = markdown.Markdown(extensions=["attr_list", "toc", "pymdownx.superfences"])
    md.convert(text)
    anchors: list[str] = []

    def walk(tokens: list[dict]) -> None:
        for token in tokens:
            if token["level"] in (2, 3):
                anchors.append(token["id"])
            walk(token["children"])

    walk(md.toc_tokens)
    return anchors


def outline(text: str, anchors: list[str] | None = None) -> list[Section]:
    """The sections of a page: the top first, then each ``##``/``###`` heading outside code.

    ``anchors``: the anchors of the headings in order (the English page's, as the site makes
    them); without it, each heading's own ``{#anchor}``, or ``""`` when it has none.
    """
    found: list[list] = [[0, "", "", 0]]
    fenced = False
    for line in text.splitlines():
        if line.startswith("```"):
            if not fenced and line.startswith("```python"):
                found[-1][3] += 1
            fenced = not fenced
            continue
        match = None if fenced else re.match(r"(#{2,3}) (.+)$", line)
        if match:
            title = match.group(2)
            own = ANCHOR.search(title)
            found.append([len(match.group(1)), own.group(1) if own else "",
                          ANCHOR.sub("", title).strip(), 0])
    if anchors is not None:
        assert len(anchors) == len(found) - 1, "a heading the site does not see"
        for section, anchor in zip(found[1:], anchors):
            section[1] = anchor
    return [Section(*section) for section in found]


def compare(english: str, chinese: str, page: str) -> list[str]:
    """What the Chinese page ``page`` lacks or holds beyond the English one, one line each."""
    en = outline(english, _english_anchors(english))
    zh = outline(chinese)
    where = f"docs/zh/{page}"
    problems = [f"{where}: heading {s} has no {{#anchor}} naming its English section"
                for s in zh[1:] if not s.anchor]
    en_by, zh_by = {s.anchor: s for s in en}, {s.anchor: s for s in zh if s.anchor or not s.level}
    problems += [f"{where} lacks the section {s} (#{s.anchor}) of docs/{page}"
                 for s in en[1:] if s.anchor not in zh_by]
    problems += [f"{where}: section {s} (#{s.anchor}) is not a section of docs/{page}"
                 for s in zh[1:] if s.anchor and s.anchor not in en_by]
    shared = [s.anchor for s in en if s.anchor in zh_by]
    in_zh_order = [s.anchor for s in zh if (s.anchor or not s.level) and s.anchor in en_by]
    if [a for a in in_zh_order if a in shared] != shared:
        problems.append(f"{where}: the sections are not in the order of docs/{page}")
    for anchor in shared:
        e, z = en_by[anchor], zh_by[anchor]
        if e.level != z.level:
            problems.append(f"{where}: section {z} (#{anchor}) is at level {z.level},"
                            f" {e} of docs/{page} at level {e.level}")
        if e.examples != z.examples:
            problems.append(f"{where}: {z} holds {z.examples} python example(s),"
                            f" {e} of docs/{page} holds {e.examples}")
    return problems


def parity_problems(english_root: Path, chinese_root: Path) -> list[str]:
    """Every difference between the two guides: pages in one language only, then sections."""
    en, zh = user_guide(english_root), {
        page.relative_to(chinese_root).as_posix() for page in chinese_root.rglob("*.md")}
    problems = [f"docs/{page} has no Chinese page docs/zh/{page}" for page in sorted(en - zh)]
    problems += [f"docs/zh/{page} has no English user-guide page docs/{page}"
                 for page in sorted(zh - en)]
    for page in sorted(en & zh):
        problems += compare((english_root / page).read_text(encoding="utf-8"),
                            (chinese_root / page).read_text(encoding="utf-8"), page)
    return problems


# --------------------------------------------------------------------------
# The tests
# --------------------------------------------------------------------------


def test_the_chinese_guide_has_every_page_and_section_of_the_english_one():
    assert user_guide(DOCS) >= {"index.md", "install.md", "guarantees.md", "guide/core.md",
                                "guide/langgraph.md", "guide/tenancy.md"}
    problems = parity_problems(DOCS, ZH)
    assert not problems, "the Chinese guide differs from the English one:\n" + "\n".join(problems)


ENGLISH = """# Page

Intro.

## First

```python
print(1)
```

### Detail

## Second

```python
print(2)
```
"""


@pytest.fixture
def guides(tmp_path: Path) -> tuple[Path, Path]:
    english, chinese = tmp_path / "docs", tmp_path / "docs" / "zh"
    (english / "guide").mkdir(parents=True)
    (chinese / "guide").mkdir(parents=True)
    (english / "guide" / f"{PAGE}.md").write_text(ENGLISH, encoding="utf-8")
    return english, chinese


def write(root: Path, page: str, text: str) -> None:
    (root / page).write_text(text, encoding="utf-8")


def test_a_faithful_pair_passes(guides):
    english, chinese = guides
    write(chinese, f"guide/{PAGE}.md", "# 页面\n\n## 第一 {#first}\n\n```python\nprint(1)\n```\n\n"
          "### 细节 {#detail}\n\n## 第二 {#second}\n\n```python\nprint(2)\n```\n")
    assert parity_problems(english, chinese) == []


def test_a_missing_section_is_reported_by_page_and_heading(guides):
    english, chinese = guides
    write(chinese, f"guide/{PAGE}.md", "# 页面\n\n## 第一 {#first}\n\n```python\nprint(1)\n```\n\n"
          "### 细节 {#detail}\n")
    assert parity_problems(english, chinese) == [
        f"docs/zh/guide/{PAGE}.md lacks the section '## Second' (#second) of docs/guide/{PAGE}.md"]


def test_a_page_in_one_language_only_is_reported(guides):
    english, chinese = guides
    only = "only-here"  # (a page the repository does not hold: named, not cited)
    write(chinese, f"guide/{only}.md", "# 多余\n")
    assert parity_problems(english, chinese) == [
        f"docs/guide/{PAGE}.md has no Chinese page docs/zh/guide/{PAGE}.md",
        f"docs/zh/guide/{only}.md has no English user-guide page docs/guide/{only}.md"]


def test_a_changed_nesting_order_or_example_count_is_reported(guides):
    english, chinese = guides
    write(chinese, f"guide/{PAGE}.md", "# 页面\n\n```python\nprint(0)\n```\n\n## 第一 {#first}\n\n"
          "## 细节 {#detail}\n\n## 第二 {#second}\n\n```python\nprint(2)\n```\n\n## 无名\n")
    assert parity_problems(english, chinese) == [
        f"docs/zh/guide/{PAGE}.md: heading '## 无名' has no {{#anchor}} naming its English section",
        f"docs/zh/guide/{PAGE}.md: the top of the page holds 1 python example(s),"
        f" the top of the page of docs/guide/{PAGE}.md holds 0",
        f"docs/zh/guide/{PAGE}.md: '## 第一' holds 0 python example(s),"
        f" '## First' of docs/guide/{PAGE}.md holds 1",
        f"docs/zh/guide/{PAGE}.md: section '## 细节' (#detail) is at level 2,"
        f" '### Detail' of docs/guide/{PAGE}.md at level 3"]
    write(chinese, f"guide/{PAGE}.md", "# 页面\n\n## 第二 {#second}\n\n```python\nprint(2)\n```\n\n"
          "## 第一 {#first}\n\n```python\nprint(1)\n```\n\n### 细节 {#detail}\n")
    assert parity_problems(english, chinese) == [
        f"docs/zh/guide/{PAGE}.md: the sections are not in the order of docs/guide/{PAGE}.md"]


def test_code_is_not_read_as_headings():
    text = "# P\n\n```python\n## not a heading\nprint(1)\n```\n\n## Real\n"
    assert [(s.level, s.title, s.examples) for s in outline(text)] == [(0, "", 1), (2, "Real", 0)]
