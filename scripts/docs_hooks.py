"""What the documentation site needs beyond mkdocs-material and mkdocstrings.

Both are named in ``mkdocs.yml``:

- ``on_files``, an mkdocs hook, puts ``benchmarks/profiles.png`` (the plot
  ``make bench-profiles`` writes) into the site as ``assets/profiles.png``, and
  ``benchmarks/langgraph.png`` (the plot ``bench_langgraph.py`` writes) as
  ``assets/langgraph.png``, so the performance page shows the plots of the last
  runs, with no copy to keep in step;
- ``on_nav``, ``on_page_context`` and ``on_page_content`` give the Chinese guide
  (every page under ``zh/``) a site of its own: the theme's labels in Chinese
  (the search box, "目录", the footer; ``scripts/docs_theme/partials/language.html``
  reads the language this hook gives each page), a navigation of the Chinese pages
  with links to the pages that exist only in English, and previous/next links that
  stay within one language. The English pages' navigation ends in one link to the
  Chinese guide;
- ``DoctestFences``, a griffe extension used by the API reference, shows the
  ``>>>`` examples of the docstrings as Python code (Markdown would read them as
  prose: ``['fix', 'a']`` in an output line looks like a link reference, and the
  strict build fails on it), the docstrings' Sphinx roles (``:func:`coverage```)
  as code, and a reST literal block's ``::`` as ``:`` (Markdown shows the
  indented block as code already, but would print the ``::``).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import griffe
from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files
from mkdocs.structure.nav import Link, Navigation, Section
from mkdocs.structure.pages import Page

#: Files outside ``docs/`` that the site shows: path in the site -> path in the repository.
GENERATED = {"assets/profiles.png": "benchmarks/profiles.png",
             "assets/langgraph.png": "benchmarks/langgraph.png"}
FENCE = "```"
#: A Sphinx cross-reference role, ``:func:`name``` or ``:class:`~module.Name```.
ROLE = re.compile(r":(?:py:)?(?:func|class|mod|meth|attr|data|exc|obj):`(~?)([^`]+)`")


def on_files(files: Files, config: MkDocsConfig) -> Files:
    """Add the files of ``GENERATED`` to the site, read from where they are made."""
    root = Path(config.config_file_path).parent
    for uri, source in GENERATED.items():
        files.append(File.generated(config, uri, abs_src_path=str(root / source)))
    return files


#: The folder of the Chinese guide, and the title of its section in ``mkdocs.yml``'s nav.
ZH, ZH_SECTION = "zh/", "中文"
#: The pages that exist only in English, as the Chinese navigation names them (site URLs).
ENGLISH_ONLY = {"English": "", "性能": "performance/", "开发": "development/",
                "API 参考": "reference/", "PostgreSQL 多服务器部署": "postgres-at-scale/"}
#: What the toc extension titles a heading's permalink, and its Chinese.
PERMALINK = ('title="Permanent link"', 'title="永久链接"')
#: The navigation of each language, made by ``on_nav`` for ``on_page_context``.
NAVIGATIONS: dict[str, Navigation] = {}


def language(url: str) -> str:
    """The language of the page at site URL ``url``: ``zh`` under ``zh/``, else ``en``.

    >>> language("zh/guide/core/"), language("guide/core/"), language("")
    ('zh', 'en', 'en')
    """
    return "zh" if url.startswith(ZH) else "en"


def on_nav(nav: Navigation, config: MkDocsConfig, files: Files) -> Navigation:
    """Split the nav by language, previous/next chained within each; the site keeps it whole."""
    chinese = next(item for item in nav.items
                   if isinstance(item, Section) and item.title == ZH_SECTION)
    english = Navigation([item for item in nav.items if item is not chinese]
                         + [Link(ZH_SECTION, ZH)],
                         [page for page in nav.pages if language(page.url) == "en"])
    links = Section("英文页面", [Link(title, url) for title, url in ENGLISH_ONLY.items()])
    zh = Navigation([chinese, links], [page for page in nav.pages if language(page.url) == "zh"])
    for each in (english, zh):
        pages = each.pages
        for before, page, after in zip([None, *pages], pages, [*pages[1:], None]):
            page.previous_page, page.next_page = before, after
    NAVIGATIONS.update(en=english, zh=zh)
    return nav


def on_page_context(context: dict[str, Any], page: Page, config: MkDocsConfig,
                    nav: Navigation) -> dict[str, Any]:
    """Render ``page`` with its language's navigation and interface labels."""
    code = language(page.url)
    page.meta["language"] = code
    context["nav"] = NAVIGATIONS.get(code, nav)
    return context


def on_page_content(html: str, page: Page, config: MkDocsConfig, files: Files) -> str:
    """Title a Chinese page's permalinks in Chinese."""
    return html.replace(*PERMALINK) if language(page.url) == "zh" else html


def fence_doctests(text: str) -> str:
    """Wrap every doctest of ``text`` in a pycon fence; leave the rest as it is.

    A doctest runs from its first ``>>>`` line to the next blank line, as
    doctest reads it; text already inside a fence is left alone.

    >>> fence_doctests("Example:\\n>>> 1 + 1\\n2\\n\\nDone.").splitlines()
    ['Example:', '', '```pycon', '>>> 1 + 1', '2', '```', '', 'Done.']
    """
    out: list[str] = []
    in_fence = in_doctest = False
    indent = ""
    for line in text.splitlines():
        stripped = line.strip()
        if in_doctest and not stripped:
            out.append(indent + FENCE)
            in_doctest = False
        if stripped.startswith(FENCE) and not in_doctest:
            in_fence = not in_fence
        elif not in_fence and not in_doctest and stripped.startswith(">>>"):
            indent = line[: len(line) - len(line.lstrip())]
            if out and out[-1].strip():
                out.append("")  # a fence opens a block of its own
            out.append(indent + FENCE + "pycon")
            in_doctest = True
        out.append(line)
    if in_doctest:
        out.append(indent + FENCE)
    return "\n".join(out)


def plain_roles(text: str) -> str:
    """Show each Sphinx role as code: its target, or with ``~`` the target's last name.

    >>> plain_roles("See :func:`coverage` and :class:`~poolsplit_core.poolsplit.Pool`.")
    'See `coverage` and `Pool`.'
    """
    return ROLE.sub(lambda m: "`" + (m[2].rsplit(".", 1)[-1] if m[1] else m[2]) + "`", text)


def literal_blocks(text: str) -> str:
    """End a paragraph that opens a reST literal block (``::``, then a blank line) with ``:``.

    >>> literal_blocks("Six commands::\\n\\n    poolsplit demo\\n")
    'Six commands:\\n\\n    poolsplit demo\\n'
    >>> literal_blocks("```\\nx::\\n\\n```")
    '```\\nx::\\n\\n```'
    """
    lines = text.split("\n")
    in_fence = False
    for i, line in enumerate(lines[:-1]):
        if line.strip().startswith(FENCE):
            in_fence = not in_fence
        elif not in_fence and line.endswith("::") and not lines[i + 1].strip():
            lines[i] = line[:-1]
    return "\n".join(lines)


class DoctestFences(griffe.Extension):
    """Fence the doctests, plain the roles and end literal blocks of every docstring, as read."""

    # on_instance, not griffe 2's on_object: griffe 1.x has it too, and a docstring
    # is complete as soon as its object is.
    def on_instance(self, *, node: Any, obj: griffe.Object, agent: Any, **kwargs: Any) -> None:
        """Rewrite ``obj``'s docstring for Markdown."""
        if obj.docstring is not None:
            obj.docstring.value = literal_blocks(plain_roles(fence_doctests(obj.docstring.value)))
