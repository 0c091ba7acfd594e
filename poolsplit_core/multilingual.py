# multilingual.py -- pool-split retrieval beyond English: words in any script, CJK tokens.
#
# MIT License
#
# Copyright (c) 2026 The poolsplit authors
#
# Permission is hereby granted, free of charge, to any person obtaining a copy
# of this software and associated documentation files (the "Software"), to deal
# in the Software without restriction, including without limitation the rights
# to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
# copies of the Software, and to permit persons to whom the Software is
# furnished to do so, subject to the following conditions:
#
# The above copyright notice and this permission notice shall be included in all
# copies or substantial portions of the Software.
#
# THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
# IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
# FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
# AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
# LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
# OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
# SOFTWARE.
"""Beyond English: a word reader for any script and a token counter for CJK text.

The default scorer reads ``[a-z0-9]`` words and the default counter counts a
quarter of the length: right for English, blind to Chinese, Japanese and
Korean, where a 400-character paragraph is about 400 tokens and a "word" is
a run of characters with no spaces. This module adds both, opt-in:

- :func:`unicode_words`, the word reader of ``make_scorer(words="unicode")``;
- :func:`cjk_token_counter`, a token counter that counts a CJK character as
  about one token.

Standard library only, Python 3.9+. Copy it beside ``poolsplit.py`` (it
imports the core as its package sibling, else as the top-level module
``poolsplit``) and ``import multilingual``: importing it names its reader
``"unicode"`` for :func:`make_scorer`. The poolsplit package imports it.

>>> from datetime import datetime, timezone
>>> store = [{"id": "m", "content": "周五前完成数据库迁移"}, {"id": "x", "content": "午饭吃什么"}]
>>> pools = [core.Pool("all", max_tokens=40, max_entries=1)]
>>> got = core.retrieve_pools(store, pools, {"message": "数据库迁移"},
...                           scorer=core.make_scorer(words="unicode"),
...                           token_counter=cjk_token_counter,
...                           now=datetime(2026, 1, 1, tzinfo=timezone.utc))
>>> [e["id"] for e in got["all"]]
['m']
"""

from __future__ import annotations

import re
import unicodedata
from typing import TYPE_CHECKING, Callable, Dict, FrozenSet, Optional, Set

if TYPE_CHECKING or __package__:  # the package's poolsplit_core.poolsplit
    from . import poolsplit as core
else:  # copied beside poolsplit.py: both are top-level modules
    import poolsplit as core

__version__ = "0.1.0"

__all__ = ["cjk_token_counter", "unicode_words"]

# The core's names this file uses: the default scorer's words and stopwords.
_STOPWORDS = core._STOPWORDS
_word_sets = core._word_sets


# Everything in this section is opt-in: the default scorer, counter and every
# default path above and below never call it.
#
# Han, Hiragana, Katakana and Hangul have no spaces between words, so a run of
# them is read as its overlapping bigrams (the CJK-bigram analysis of search
# engines). Their punctuation (U+3000-303F, full-width forms) is read as a
# separator first, by category.
_CJK_RANGES = (
    (0x1100, 0x11FF),  # Hangul Jamo
    (0x2E80, 0x2FDF),  # CJK and Kangxi radicals
    (0x3005, 0x3007),  # iteration mark, closing mark, ideographic zero
    (0x3021, 0x3029),  # Hangzhou numerals
    (0x3031, 0x3035),  # kana repeat marks
    (0x3038, 0x303C),
    (0x3041, 0x30FF),  # Hiragana, Katakana
    (0x3131, 0x318E),  # Hangul compatibility Jamo
    (0x31F0, 0x31FF),  # Katakana phonetic extensions
    (0x3400, 0x4DBF),  # CJK extension A
    (0x4E00, 0x9FFF),  # CJK unified ideographs
    (0xA960, 0xA97F),  # Hangul Jamo extended-A
    (0xAC00, 0xD7FF),  # Hangul syllables, Jamo extended-B
    (0xF900, 0xFAFF),  # CJK compatibility ideographs
    (0xFF66, 0xFFDC),  # half-width Katakana and Hangul
    (0x1B000, 0x1B16F),  # kana supplement, extended-A, small kana
    (0x20000, 0x3134F),  # CJK extensions B to G, compatibility supplement
)
_CJK_CLASS = "".join(f"{chr(lo)}-{chr(hi)}" for lo, hi in _CJK_RANGES)
_CJK_RUN = re.compile(f"[{_CJK_CLASS}]+")
# What the token counter counts as about one token each: CJK letters, and
# CJK punctuation and full-width forms.
_CJK_CHAR = re.compile(f"[{_CJK_CLASS}\u3000-\u303f\uff00-\uffef]")
_CJK_CHARS = re.compile(_CJK_CHAR.pattern + "+")  # runs of them: one match a run, not a char
_VARIATION_SELECTORS = frozenset(
    [*range(0x180B, 0x180E), *range(0xFE00, 0xFE10), *range(0xE0100, 0xE01F0)])
_CJK, _COMMON = "\x00cjk", ""  # the two classes of word characters that are not a script


class _LazyTable(Dict[int, Optional[int]]):
    """A ``str.translate`` table filled on first sight of each character (C speed after).

    A character ``rule`` accepts becomes ``into`` (None deletes it); the rest stay.
    """

    def __init__(self, rule: Callable[[str], bool], into: Optional[int]) -> None:
        super().__init__()
        self.rule, self.into = rule, into

    def __missing__(self, code: int) -> Optional[int]:
        self[code] = value = self.into if self.rule(chr(code)) else code
        return value


def _dropped(ch: str) -> bool:
    """Format characters (zero-width joiners, soft hyphens, ...) and variation selectors."""
    return unicodedata.category(ch) == "Cf" or ord(ch) in _VARIATION_SELECTORS


def _separates(ch: str) -> bool:
    """Neither a letter, a mark, a decimal digit, nor a CJK character."""
    category = unicodedata.category(ch)
    if category[0] in "LM" or category == "Nd":
        return False
    return not (category[0] == "N" and _CJK_RUN.fullmatch(ch))


_DROPS = _LazyTable(_dropped, None)  # deleted
_SPACES = _LazyTable(_separates, ord(" "))
_SCRIPT: Dict[str, str] = {}  # character -> its class: _CJK, _COMMON or a script's name


def _script_of(ch: str) -> str:
    """The class of a word character: CJK, common (marks, digits, modifiers) or its script."""
    got = _SCRIPT.get(ch)
    if got is None:
        category = unicodedata.category(ch)
        if _CJK_RUN.fullmatch(ch):
            got = _CJK
        elif category[0] == "M" or category in ("Nd", "Lm"):
            got = _COMMON  # joins the run it is in: Devanagari vowel signs stay in their word
        else:  # a letter: its script is the first word of its name (LATIN, CYRILLIC, ...)
            got = unicodedata.name(ch, "").split(" ", 1)[0]
        _SCRIPT[ch] = got
    return got


# Characters the fold leaves as they are, or turns into another separator
# (full-width punctuation, the ideographic space): a text of only these reads
# the same words unfolded, and skips the costly fold (most Chinese text).
_FOLDS_ALIKE = re.compile(
    "[^\x00-\x40\x5b-\x7f\u2018\u2019\u201c\u201d\u3000-\u3003\u3008-\u3011"
    "\u3041-\u3096\u30a1-\u30fa\u30fc\u4e00-\u9fff\uac00-\ud7a3"
    "\uff01\uff08\uff09\uff0c\uff1a\uff1b\uff1f]")


def _fold(text: str) -> str:
    """NFKC, casefold, NFKC again, after dropping format characters and variation selectors."""
    text = text.translate(_DROPS)
    return unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text).casefold())


def unicode_words(text: str) -> FrozenSet[str]:
    """The words of ``text`` in any script, for stores that are not (only) English.

    >>> sorted(unicode_words("我是中国人"))
    ['中国', '国人', '我是', '是中']
    >>> sorted(unicode_words("GitHub备份 of the Straße"))
    ['github', 'strasse', '备份']

    The text is folded (format characters and variation selectors dropped;
    NFKC, casefold, NFKC: full-width Latin letters and digits read as ASCII,
    ``Straße`` reads as ``STRASSE`` does, half-width katakana as full width).
    Then, split at every character that is not a letter, mark or decimal
    digit:

    - a run of letters, marks and digits of one alphabetic script is one
      word, kept when longer than 2 characters and not one of the default
      scorer's 57 stopwords (marks stay inside their word: Devanagari does
      not break apart);
    - a run of Han, Hiragana, Katakana or Hangul gives its overlapping
      bigrams, or the single character for a run of one;
    - a run ends where the script changes (``GitHub备份``: ``github``,
      ``备份``); digits and marks join the alphabetic run they are in.

    Scripts other than CJK that are written without spaces (Thai, Lao,
    Khmer, Myanmar) need a dictionary to find their words: here a run of
    them is one word. For ASCII text these are exactly the default scorer's
    words. Pass it to
    ``make_scorer`` (``make_scorer(words="unicode")``) to score with
    it; which characters are letters follows the interpreter's Unicode tables.
    """
    if text.isascii():
        return next(_word_sets([text]))
    words: Set[str] = set()
    folded = _fold(text) if _FOLDS_ALIKE.search(text) else text
    for token in folded.translate(_SPACES).split():
        if token.isascii():
            if len(token) > 2 and token not in _STOPWORDS:
                words.add(token)
        elif _CJK_RUN.fullmatch(token):
            _add_bigrams(token, words)
        else:
            _read_runs(token, words)
    return frozenset(words)


def _add_bigrams(run: str, words: Set[str]) -> None:
    if len(run) == 1:
        words.add(run)
    else:
        words.update([run[i:i + 2] for i in range(len(run) - 1)])


def _read_runs(token: str, words: Set[str]) -> None:
    """Split a token of word characters where its script changes, and read each run."""
    start, script = 0, None  # the current run: where it starts, its script (None: not yet)
    for at, ch in enumerate(token):
        kind = _script_of(ch)
        if kind == _CJK:
            if script != _CJK:
                _add_run(token[start:at], script, words)
                start, script = at, _CJK
        elif script == _CJK:
            _add_run(token[start:at], script, words)
            start, script = at, (None if kind == _COMMON else kind)
        elif kind != _COMMON:
            if script is None:
                script = kind
            elif kind != script:
                _add_run(token[start:at], script, words)
                start, script = at, kind
    _add_run(token[start:], script, words)


def _add_run(run: str, script: Optional[str], words: Set[str]) -> None:
    if not run:
        return
    if script == _CJK:
        _add_bigrams(run, words)
    elif len(run) > 2 and run not in _STOPWORDS:
        words.add(run)


def cjk_token_counter(text: str) -> int:
    """Estimate tokens with CJK characters at about one token each, the rest at ``len // 4``.

    >>> cjk_token_counter("数据库迁移"), cjk_token_counter("x" * 40), cjk_token_counter("")
    (5, 10, 1)
    >>> cjk_token_counter("迁移 the invoices table")  # 2 + 19 // 4
    6

    An estimate, never 0: an LLM tokenizer reads a Chinese, Japanese or
    Korean character as roughly one token, where :func:`poolsplit.default_token_counter`
    (a quarter of the length) would count a 400-character Chinese paragraph
    as 100 and let CJK pools overrun their budgets about threefold. For exact
    counts plug your model's tokenizer in its place, e.g. with tiktoken::

        enc = tiktoken.get_encoding("cl100k_base")
        retrieve_pools(store, pools, token_counter=lambda text: len(enc.encode(text)))
    """
    if text.isascii():
        return max(1, len(text) // 4)
    cjk = sum(map(len, _CJK_CHARS.findall(text)))
    return max(1, cjk + (len(text) - cjk) // 4)


# make_scorer(words="unicode") reads with unicode_words from now on.
core._name_reader("unicode", unicode_words)
