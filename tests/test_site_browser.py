"""The documentation site as a reader sees it: rendered in a real browser, searched, measured.

The site is built as ``make docs`` builds it, served on 127.0.0.1 and opened in Debian's
headless chromium (``make test`` installs it, with a CJK font, before the suite runs),
driven by playwright with no browser of its own. At a desktop width (1280 px):

- an English and a Chinese query typed into the search box each list every page whose text
  holds the word (Chinese has no spaces: the build splits it into words for the index);
- no example on a page written under ``docs/`` is wider than its column, so none hides
  behind a horizontal scroll; the column holds ``COLUMN`` characters of the code font,
  the width ``tests/test_docs.py`` holds every example's source to. An example is a block
  fenced with a language (``python``, ``bash``, ``console``, ...); a bare fence shows a
  program's output as it prints it. The API reference is made from the docstrings and left
  out;
- the Chinese pages speak Chinese: the interface's labels, the navigation and the table of
  contents.
"""

from __future__ import annotations

import functools
import html.parser
import re
import subprocess
import threading
import urllib.parse
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.test_docs import COLUMN, DOCS, build_site, examples

CHROMIUM = Path("/usr/bin/chromium")
#: A browser that fetches nothing by itself: this machine's network is closed, and without
#: these flags chromium keeps trying.
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]
DESKTOP = {"width": 1280, "height": 900}
MISSING = ("the site's browser check needs Debian's chromium and a CJK font, which `make test`"
           " installs; by hand: apt-get install -y chromium fonts-wqy-microhei")


# --------------------------------------------------------------------------
# The site, served, and a browser
# --------------------------------------------------------------------------


class QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_site(tmp_path_factory.mktemp("site"))


@pytest.fixture(scope="module")
def base_url(site: Path) -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0),
                                 functools.partial(QuietHandler, directory=str(site)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}/"
    server.shutdown()
    thread.join()


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    if not CHROMIUM.is_file():
        pytest.fail(f"{CHROMIUM} is missing: {MISSING}")
    fonts = subprocess.run(["fc-list", ":lang=zh"], capture_output=True, text=True)
    if not fonts.stdout.strip():
        pytest.fail(f"no CJK font: Chinese would be measured as empty boxes; {MISSING}")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(tmp_path_factory.mktemp("chromium-profile")), executable_path=str(CHROMIUM),
            args=FLAGS, headless=True, viewport=DESKTOP)
        yield context
        context.close()


@pytest.fixture()
def page(browser):
    tab = browser.new_page()
    yield tab
    tab.close()


def pages(site: Path) -> list[str]:
    """Every page of the built site, as its URL relative to the site's root."""
    urls = []
    for built in sorted(site.rglob("index.html")):
        folder = built.parent.relative_to(site).as_posix()
        urls.append("" if folder == "." else f"{folder}/")
    return urls


# --------------------------------------------------------------------------
# Search
# --------------------------------------------------------------------------


class ArticleText(html.parser.HTMLParser):
    """The text of a built page's ``<article>``: what the reader reads and search indexes."""

    def __init__(self) -> None:
        super().__init__()
        self.depth, self.parts = 0, []

    def handle_starttag(self, tag: str, attrs: object) -> None:
        if tag == "article" or self.depth:
            self.depth += 1

    def handle_endtag(self, tag: str) -> None:
        if self.depth:
            self.depth -= 1

    def handle_data(self, data: str) -> None:
        if self.depth:
            self.parts.append(data)


def article_text(built: Path) -> str:
    parser = ArticleText()
    parser.feed(built.read_text(encoding="utf-8"))
    return " ".join(parser.parts)


def holding(site: Path, word: re.Pattern[str]) -> set[str]:
    """The pages whose article holds ``word``."""
    return {url for url in pages(site)
            if word.search(article_text(site / url / "index.html"))}


def search(page, base_url: str, start: str, query: str) -> set[str]:
    """Type ``query`` into the search box of page ``start``: the pages the results list."""
    page.goto(base_url + start)
    said = page.locator(".md-search-result__meta")
    # The line above the results, in the page's language: "Type to start searching" once the
    # index is loaded, then the count of results ("20 matching documents", "找到 8 个…") or
    # that there are none.
    words = page.evaluate("JSON.parse(document.querySelector('#__config').textContent)"
                          ".translations")
    box = page.locator(".md-search__input")
    box.click()
    page.wait_for_function("""ready => document.querySelector('.md-search-result__meta')
                                             .textContent === ready""",
                           arg=words["search.result.placeholder"], timeout=20_000)
    # The search box reads its value on a key's release: an input method's last key, here.
    box.fill(query)
    box.press("End")
    page.wait_for_function(
        """none => {
            const said = document.querySelector('.md-search-result__meta').textContent;
            return said === none || /\\d/.test(said);
        }""", arg=words["search.result.none"], timeout=20_000)
    counted = re.search(r"\d+", said.inner_text())
    expected = int(counted.group()) if counted else 0
    items = page.locator(".md-search-result__item")
    # The list shows ten results, and four more each time it is scrolled to its end.
    for _ in range(expected):
        if items.count() >= expected:
            break
        page.evaluate("""() => {
            const wrap = document.querySelector('.md-search__scrollwrap');
            wrap.scrollTop = 0; wrap.dispatchEvent(new Event('scroll'));
        }""")
        page.wait_for_timeout(100)
        page.evaluate("""() => {
            const wrap = document.querySelector('.md-search__scrollwrap');
            wrap.scrollTop = wrap.scrollHeight; wrap.dispatchEvent(new Event('scroll'));
        }""")
        page.wait_for_timeout(150)
    # each result is a page: its first link, then its sections' (":scope > a" is the page's)
    links = page.eval_on_selector_all(
        ".md-search-result__item", "items => items.map(item => item.querySelector('a').href)")
    assert len(links) == expected, f"the search listed {len(links)} of its {expected} results"
    return {urllib.parse.urlsplit(link).path.removeprefix(
        urllib.parse.urlsplit(base_url).path) for link in links}


@pytest.mark.parametrize(("start", "query", "word"), [
    # as the search reads English: a word starts after a space, a hyphen or punctuation
    ("", "budget", re.compile(r"(?<![A-Za-z0-9_])budget", re.I)),
    ("zh/", "预算", re.compile("预算")),
], ids=["english", "chinese"])
def test_a_search_lists_every_page_that_holds_the_word(site, base_url, page, start, query,
                                                       word):
    expected = holding(site, word)
    assert len(expected) >= 5, f"only {sorted(expected)} hold {query!r}: pick a commoner word"
    found = search(page, base_url, start, query)
    missing = sorted(expected - found)
    assert not missing, f"searching {query!r} does not list {missing}"


# --------------------------------------------------------------------------
# Examples within their column
# --------------------------------------------------------------------------

#: The blocks of a page that are examples (fenced with a language other than ``text``).
EXAMPLES = """() => [...document.querySelectorAll('.md-content .highlight')]
    .filter(box => [...box.classList].some(c => c.startsWith('language-'))
                   && !box.classList.contains('language-text'))
    .map(box => box.querySelector('pre > code'))"""
#: For each example too wide for its column: its widest line and the two widths.
TOO_WIDE = EXAMPLES + """.filter(code => code.scrollWidth > code.clientWidth)
    .map(code => ({overflow: code.scrollWidth - code.clientWidth, width: code.clientWidth,
                   line: code.textContent.split('\\n')
                             .reduce((a, b) => (b.length > a.length ? b : a))}))"""
#: How many characters of the code font a code block holds across.
CHARACTERS = """() => {
    const code = document.querySelector('.md-content pre > code');
    const style = getComputedStyle(code);
    const probe = document.createElement('span');
    probe.textContent = 'x'.repeat(200);
    code.appendChild(probe);
    const each = probe.getBoundingClientRect().width / 200;
    probe.remove();
    const room = code.clientWidth - parseFloat(style.paddingLeft)
                 - parseFloat(style.paddingRight);
    return room / each;
}"""


def written_pages(site: Path) -> list[str]:
    """The pages written under ``docs/``: every page but the generated API reference."""
    return [url for url in pages(site) if not url.startswith("reference/") and url != "404/"]


def test_a_code_block_holds_the_column_the_examples_are_wrapped_to(base_url, page):
    page.goto(base_url + "guide/core/")
    held = page.evaluate(CHARACTERS)
    assert held >= COLUMN, (f"a code block holds {held:.1f} characters at {DESKTOP['width']} px;"
                            f" the examples are wrapped to {COLUMN}")


def test_no_example_on_a_page_of_the_docs_is_wider_than_its_column(site, base_url, page):
    too_wide, shown = {}, 0
    for url in written_pages(site):
        page.goto(base_url + url)
        shown += page.evaluate(f"() => ({EXAMPLES})().length")
        if found := page.evaluate(TOO_WIDE):
            too_wide[url or "(home)"] = found
    written = sum(len(examples(source)) for source in DOCS.rglob("*.md")
                  if not source.is_relative_to(DOCS / "reference"))
    assert shown == written, f"the pages show {shown} examples of the {written} written"
    assert not too_wide, f"examples wider than their column at {DESKTOP['width']} px: {too_wide}"


# --------------------------------------------------------------------------
# The Chinese pages in Chinese
# --------------------------------------------------------------------------


def test_the_chinese_pages_label_their_interface_and_navigation_in_chinese(site, base_url,
                                                                           page):
    for url in [url for url in pages(site) if url.startswith("zh/")]:
        page.goto(base_url + url)
        assert page.evaluate("document.documentElement.lang") == "zh", url
        labels = page.evaluate("""() => {
            const text = (selector) => [...document.querySelectorAll(selector)]
                .filter(node => !node.closest('.md-nav--secondary'))  // the page's own toc
                .map(node => node.textContent.trim()).filter(Boolean);
            return {
                "the search box": [document.querySelector('.md-search__input')
                                   .placeholder],
                "the table of contents": [...document.querySelectorAll(
                    '.md-sidebar--secondary .md-nav__title')].map(node => node.textContent.trim()),
                "the navigation": text('.md-sidebar--primary .md-nav__link'),
                "the footer": text('.md-footer__direction'),
            };
        }""")
        assert labels["the navigation"], f"{url}: no navigation found"
        # a label in Latin letters alone is English, but for names and the link to English
        names = {"poolsplit", "English", "LangChain", "LlamaIndex", "LangGraph"}
        english = {where: found for where, texts in labels.items()
                   if (found := [text for text in texts if text not in names
                                 and not re.search(r"[\u4e00-\u9fff]", text)])}
        assert not english, f"{url}: English labels on a Chinese page: {english}"
