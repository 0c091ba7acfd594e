# poolsplit.py -- pool-split retrieval for agent memory, one file.
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
"""Pool-split retrieval: fair, safe context assembly for agent memory.

When one scorer ranks a mixed memory store against one token budget, the
high-priority entry types eat the whole window and the low-priority types
never load; worse, a burst of fresh content can push a standing behavioural
correction out exactly when the agent is about to repeat the mistake. This
module gives each group of entry types its own reserved budget (a *pool*) and
loads ``scope="always"`` entries first, outside every budget, so that a
correction is never crowded out. A correction of a type no pool takes loads
too with ``always_pool=True``, in one more pool named ``"always"``.

This file is the whole engine: standard library only, Python 3.9+, no relative
imports. Copy it into a project as ``poolsplit.py`` and ``import poolsplit``.

>>> from datetime import datetime, timezone
>>> store = [
...     {"id": "c1", "type": "correction", "scope": "always",
...      "content": "Never force-push to main."},
...     {"id": "t1", "type": "task", "base_priority": 9, "content": "Ship the release notes."},
...     {"id": "s1", "type": "skill", "base_priority": 2, "content": "Bisect with git bisect run."},
... ]
>>> pools = [Pool("work", max_tokens=50, max_entries=5, types=("task", "correction")),
...          Pool("skills", max_tokens=50, max_entries=2, types=("skill",))]
>>> picked = retrieve_pools(store, pools, {"message": "release"},
...                         now=datetime(2026, 1, 1, tzinfo=timezone.utc))
>>> {name: [e["id"] for e in got] for name, got in picked.items()}
{'work': ['c1', 't1'], 'skills': ['s1']}
"""

from __future__ import annotations

import bisect
import dataclasses
import heapq
import inspect
import math
import numbers
import re
import sys
import threading
import unicodedata
from array import array
from collections import Counter, defaultdict
from dataclasses import dataclass
from datetime import date, datetime, timedelta, timezone
from itertools import accumulate, chain, filterfalse, groupby, repeat
from operator import attrgetter, itemgetter
from types import MappingProxyType
from typing import (
    AbstractSet,
    Any,
    Callable,
    Collection,
    DefaultDict,
    Dict,
    FrozenSet,
    Iterable,
    Iterator,
    List,
    Mapping,
    MutableSequence,
    NamedTuple,
    Optional,
    Sequence,
    Set,
    Tuple,
    TypeVar,
    Union,
    cast,
)

__version__ = "0.1.0"

__all__ = [
    "OUTCOMES",
    "AlwaysScopeOverflowError",
    "ConfiguredScorer",
    "Decision",
    "Explanation",
    "Ledger",
    "Pool",
    "PreparedStore",
    "__version__",
    "cjk_token_counter",
    "default_is_active",
    "default_scorer",
    "default_token_counter",
    "explain_pools",
    "make_scorer",
    "retrieve",
    "retrieve_pools",
    "unicode_words",
]

E = TypeVar("E", bound=Mapping[str, Any])
Scorer = Callable[..., float]
TokenCounter = Callable[[str], int]
ActivityTest = Callable[[Mapping[str, Any]], bool]
WordReader = Callable[[str], AbstractSet[str]]


# --------------------------------------------------------------------------
# Pool: a reserved budget
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Pool:
    """A reserved budget: a token ceiling and an entry cap for a group of types.

    >>> Pool("skills", max_tokens=400, max_entries=3, types=["skill"])
    Pool(name='skills', max_tokens=400, max_entries=3, types=('skill',))

    ``max_tokens`` and ``max_entries`` bound the *contextual* entries only;
    ``scope="always"`` entries bypass both. ``types=None`` accepts every type.
    A list or set of types is stored as a tuple (a set in sorted order), so a
    pool stays frozen and hashable. A bare string is refused: ``types="skill"``
    would otherwise mean the letters s, k, i, l.
    """

    name: str
    max_tokens: int
    max_entries: int
    types: Optional[Tuple[str, ...]] = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str):
            raise TypeError(f"Pool name must be a str, got {type(self.name).__name__}")
        if not self.name:
            raise ValueError("Pool name must be a non-empty str, got ''")
        for field in ("max_tokens", "max_entries"):
            value = getattr(self, field)
            if isinstance(value, bool) or not isinstance(value, int):
                raise TypeError(
                    f"Pool {self.name!r}: {field} must be an int, got {value!r}"
                )
            if value < 0:
                raise ValueError(f"Pool {self.name!r}: {field} must be >= 0, got {value}")
        object.__setattr__(self, "types", _check_types(self.name, self.types))

    def accepts(self, entry_type: Any) -> bool:
        """Return True when this pool draws entries of ``entry_type``.

        >>> Pool("p", 10, 1, types=("skill",)).accepts("skill")
        True
        """
        return self.types is None or entry_type in self.types


# --------------------------------------------------------------------------
# Defaults: token counter, activity test, scorer
# --------------------------------------------------------------------------


def default_token_counter(text: str) -> int:
    """Estimate the tokens of ``text`` as a quarter of its length, at least 1.

    >>> default_token_counter("four"), default_token_counter(""), default_token_counter("x" * 40)
    (1, 1, 10)

    Crude on purpose and pluggable; it never returns 0, so no entry is free.
    """
    return max(1, len(text) // 4)


def default_is_active(entry: Mapping[str, Any]) -> bool:
    """Return True when the entry's status is "active" and nothing supersedes it.

    >>> default_is_active({}), default_is_active({"status": "retired"})
    (True, False)
    >>> default_is_active({"superseded_by": "m-2"}), default_is_active({"superseded_by": None})
    (False, True)

    A missing ``status`` counts as "active"; ``superseded_by`` counts only
    when it is truthy (missing, ``None``, ``""`` and ``False`` do not).
    """
    return entry.get("status", "active") == "active" and not entry.get("superseded_by")


def default_scorer(
    entry: Mapping[str, Any],
    context: Optional[Mapping[str, Any]] = None,
    *,
    now: Optional[datetime] = None,
) -> float:
    """Score an entry: priority x recency x tag overlap x project x message overlap.

    >>> from datetime import datetime, timezone
    >>> now = datetime(2026, 4, 1, tzinfo=timezone.utc)
    >>> entry = {"base_priority": 6, "created": "2026-01-01T00:00:00Z",
    ...          "project": "atlas", "tags": ["db", "ops"],
    ...          "content": "Rotate the database credentials"}
    >>> round(default_scorer(entry, {"project": "atlas", "tags": ["db"],
    ...                              "message": "rotate credentials"}, now=now), 6)
    8.4375

    The factors (the user guide's "The default scorer, exactly", on its page The core):

    - base priority ``float(entry.get("base_priority", 5))``;
    - recency ``max(0.3, 1 - 0.7 * days / 90)``; a missing, unparseable or
      future ``created`` counts as 0 days;
    - tag overlap, only when the entry has tags: ``1 + 0.5 * shared / len(entry tags)``;
    - project: 1.0 when the entry has none, 1.5 when it equals the context's,
      else 0.5;
    - message overlap, only for a non-empty message: the share of the
      message's words found in the content; above 0.15 it multiplies by
      ``1 + 1.5 * overlap``.

    There is no access-count or frequency term: ranking never depends on what
    was retrieved before. ``now=None`` means the current UTC time.
    """
    query = _Query.from_context(context)
    return _default_score(entry, query, _utc_now(now), _label(entry, None))


# --------------------------------------------------------------------------
# The default score, factor by factor
# --------------------------------------------------------------------------

# Each factor of the table in the user guide ("The default scorer, exactly") is
# one function below. _score multiplies them in the table's order, and every
# upper bound the fast paths use is _score of the same functions, each at its
# largest, in the same order: a bound cannot drift from the score it bounds.
# (Multiplying positive floats is monotone under rounding, so a product of
# factors that are each at least as large, taken in the same order, is never
# smaller.) The message factor comes last, so a score is its partial product
# times the message factor, exactly.

_STOPWORDS = frozenset(
    "the and for are but not you all can her was one our out day has had his how"
    " man new now old see two way who did its let put say she too use that this"
    " with from they them then than have will your what when were been into some"
    " more very just over only".split()
)
_DAY_SECONDS = 86400.0


class _Query:
    """A retrieval context reduced once per call to what the scorer compares."""

    __slots__ = ("options", "project", "reader", "tags", "words")

    def __init__(self, words: FrozenSet[str], project: Any, tags: FrozenSet[str],
                 reader: Optional[WordReader] = None) -> None:
        self.words = words
        self.project = project
        self.tags = tags
        self.reader = reader  # None: W(text), the default words
        # None: recency and similarity as the default scorer's (make_scorer options otherwise)
        self.options: Optional[ConfiguredScorer] = None

    @classmethod
    def from_context(cls, context: Optional[Mapping[str, Any]],
                     reader: Optional[WordReader] = None,
                     options: Optional[ConfiguredScorer] = None) -> _Query:
        query = cls._read(context, reader)
        if options is not None and (options.relevance != "words" or options.evergreen
                                    or options.decay_days):
            query.options = options
            if options.relevance == "similarity":  # no message factor: no words to share
                query.words = frozenset()
        return query

    @classmethod
    def _read(cls, context: Optional[Mapping[str, Any]],
              reader: Optional[WordReader] = None) -> _Query:
        if context is None:
            context = {}
        if not isinstance(context, Mapping):
            raise TypeError(f"context must be a mapping or None, got {type(context).__name__}")
        message = context.get("message")
        if message is not None and not isinstance(message, str):
            raise TypeError(
                f"context['message'] must be a str or None, got {type(message).__name__}"
            )
        tags = _tag_set(context.get("tags"), "context['tags']")
        if reader is None:
            return cls(next(_word_sets([message or ""])), context.get("project"), tags)
        words = frozenset(_read_words(reader, message, "context['message']")) if message else (
            frozenset())
        return cls(words, context.get("project"), tags, reader)


def _default_score(entry: Mapping[str, Any], query: _Query, now: datetime, label: str) -> float:
    """:func:`default_scorer` for a prepared query: every field read and checked."""
    base = _base_priority(entry, label)
    tags = _tag_set(entry.get("tags"), f"{label}: tags")
    shared = _shared_words(_content(entry), query, label) if query.words else 0
    recency = _recency_of(query, entry.get("type", "note"), _time_us(entry.get("created")),
                          _epoch_us(now))
    score = _entry_score(base, recency, tags, entry.get("project"),
                         _message_factor(shared, query), query)
    if query.options is None:
        return score
    return score * query.options._similarity(entry.get("similarity"), label)


def _entry_score(base: float, recency: float, tags: Collection[str], project: Any,
                 message: float, query: _Query) -> float:
    """The default score from an entry's parsed fields (both paths score through here).

    ``recency`` is :func:`_recency_of` the entry and ``message`` its
    :func:`_message_factor` (a prepared query reads both once for many
    entries). Without its similarity factor (the caller multiplies it last,
    when there is one).
    """
    return _score(base, recency, _tag_factor(tags, query), _project_factor(project, query),
                  message)


def _recency_of(query: _Query, entry_type: Any, created_us: Optional[int], now_us: int) -> float:
    """An entry's recency factor: :func:`_recency`, or the query's options' one for its type."""
    return (_recency(created_us, now_us) if query.options is None else
            query.options._recency(entry_type, created_us, now_us))


def _score(base: float, recency: float, tags: float, project: float, message: float) -> float:
    """The default score: base priority x recency x tags x project x message, in that order."""
    return base * recency * tags * project * message


# The arithmetic of each factor is written once, in the functions below whose
# names start with an underscore and a noun (_decay, _tag_share,
# _overlap, _message_gain): they take plain numbers here and whole columns of
# numbers in the vectorized engine (poolsplit[fast]), which so computes the
# same floating-point operations in the same order, bit for bit.
_RECENCY_FLOOR = 0.3
_MESSAGE_THRESHOLD = 0.15  # the overlap above which the message factor applies
_PROJECT_NONE, _PROJECT_MATCH, _PROJECT_OTHER = 1.0, 1.5, 0.5


def _decay(age_us: float, horizon: float) -> float:
    """The linear part of recency: 1.0 at age 0, 0.3 at ``horizon`` days.

    The age, in microseconds, is taken as fractional days
    (``age_us / 1_000_000`` is exact seconds).
    """
    return 1.0 - 0.7 * (age_us / 1_000_000 / _DAY_SECONDS) / horizon


def _tag_share(shared: float, count: int) -> float:
    """The tag factor of an entry with ``count`` tags, ``shared`` of them the query's."""
    return 1 + 0.5 * shared / count


def _overlap(shared_words: float, message_words: int) -> float:
    """The share of the message's words an entry holds."""
    return shared_words / message_words


def _message_gain(overlap: float) -> float:
    """The message factor of an overlap above the threshold."""
    return 1 + 1.5 * overlap


def _recency(created_us: Optional[int], now_us: int, horizon: float = 90) -> float:
    """Linear decay over 90 days of age (``horizon``) with a floor of 0.3; at most 1.0 (age 0).

    The age is taken at ``now`` in fractional days; undated or future counts
    as 0 days. Times are integer microseconds since the epoch:
    ``delta_us / 1_000_000`` is exactly ``timedelta.total_seconds()``.
    """
    age_us = 0 if created_us is None else max(0, now_us - created_us)
    return max(_RECENCY_FLOOR, _decay(age_us, horizon))


def _tag_factor(tags: Collection[str], query: _Query) -> float:
    """``1 + 0.5 * shared / len(tags)`` for an entry with tags, else 1.0.

    At most ``_tag_factor(query.tags, query)``: every tag shared. (With no
    query tags the share is 0 and the factor exactly 1.0.)
    """
    if not tags or not query.tags:
        return 1.0
    return _tag_share(len(query.tags.intersection(tags)), len(tags))


def _project_factor(project: Any, query: _Query) -> float:
    """1.0 for an entry without a project, 1.5 for the query's project, else 0.5."""
    if project is None:
        return _PROJECT_NONE
    return _PROJECT_MATCH if project == query.project else _PROJECT_OTHER


def _message_factor(shared_words: int, query: _Query) -> float:
    """``1 + 1.5 * overlap`` when the overlap is above 0.15, else 1.0.

    ``overlap = shared_words / |W(message)|``; at most
    ``_message_factor(len(query.words), query)``: every message word shared.
    """
    if query.words:
        overlap = _overlap(shared_words, len(query.words))
        if overlap > _MESSAGE_THRESHOLD:
            return _message_gain(overlap)
    return 1.0


def _base_priority(entry: Mapping[str, Any], label: str) -> float:
    raw = entry.get("base_priority", 5)
    try:
        base = float(raw)
    except (TypeError, ValueError, OverflowError):
        raise ValueError(f"{label}: base_priority must be a number, got {raw!r}") from None
    if not math.isfinite(base):
        raise ValueError(f"{label}: base_priority must be finite, got {raw!r}")
    return base


def _shared_words(text: str, query: _Query, label: str) -> int:
    """``|W(text) & W(message)|``: only the message's words are looked for.

    With another word reader (:func:`make_scorer`), the words it reads in both.
    """
    if query.reader is None:
        # A message word not in the text at all (most of them) costs one substring test.
        lowered = text.lower()
        return sum(1 for word in query.words if word in lowered and _holds_run(lowered, word))
    return len(query.words.intersection(_read_words(query.reader, text, label)))


def _holds_run(lowered: str, word: str) -> bool:
    """Whether ``word`` (a message word) is a whole ``[a-z0-9]`` run of ``lowered``.

    Each place ``word`` occurs is checked for a run character on either side
    (a plain search: a regex per message word costs more to compile than a
    call spends reading its entries).
    """
    at, size = lowered.find(word), len(lowered)
    while at >= 0:
        end = at + len(word)
        if ((at == 0 or lowered[at - 1] not in _ALNUM)
                and (end == size or lowered[end] not in _ALNUM)):
            return True
        at = lowered.find(word, at + 1)
    return False


# W(text) is read with C-level steps only, since a build reads every entry:
# lowercase; encode to UTF-8 (every byte of a non-ASCII character is above
# 127); turn every byte but [a-z0-9] into a space; back to str (now ASCII);
# split; drop the runs of one or two characters and the stopwords. That is
# the set of [a-z0-9] runs of text.lower() longer than 2 characters and not
# stopwords. (Words stay str: dicts and sets have a fast path for str keys.)
_ALNUM = "abcdefghijklmnopqrstuvwxyz0123456789"
_SPACED = bytes(byte if byte in _ALNUM.encode("ascii") else 32 for byte in range(256))
_NOT_WORDS = frozenset((*_ALNUM, *(a + b for a in _ALNUM for b in _ALNUM), *_STOPWORDS))


def _word_sets(texts: Iterable[str]) -> Iterator[FrozenSet[str]]:
    """W(text) for each of ``texts``."""
    encoded = map(str.encode, map(str.lower, texts), repeat("utf-8"), repeat("replace"))
    spaced = map(bytes.decode, map(bytes.translate, encoded, repeat(_SPACED)))
    return map(frozenset.difference, map(frozenset, map(str.split, spaced)), repeat(_NOT_WORDS))


def _cost(entry: Mapping[str, Any], index: int, token_counter: TokenCounter) -> int:
    """``token_count`` when a positive int, else the counter's (at least 1)."""
    count = entry.get("token_count")
    if isinstance(count, int) and not isinstance(count, bool) and count > 0:
        return count
    text = _content(entry)
    if token_counter is default_token_counter:
        return max(1, len(text) // 4)
    return _check_count(token_counter(text), _label(entry, index))



# --------------------------------------------------------------------------
# Beyond English: a Unicode word reader, a CJK token counter, the scorer factory
# --------------------------------------------------------------------------

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
    :func:`make_scorer` (``make_scorer(words=unicode_words)``) to score with
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
    Korean character as roughly one token, where :func:`default_token_counter`
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


#: The word readers a scorer's options can name as data (``{"words": "unicode"}``).
WORD_READERS: Mapping[str, Optional[WordReader]] = MappingProxyType(
    {"ascii": None, "unicode": unicode_words})

#: What ``relevance=`` can name: which factors measure an entry's relevance to the message.
RELEVANCES = ("words", "similarity", "both")
_DECAY_DAYS = 90  # the default scorer's decay horizon


class ConfiguredScorer:
    """The default score with options: what :func:`make_scorer` returns.

    >>> scorer = make_scorer(words=unicode_words)
    >>> scorer
    ConfiguredScorer(words='unicode')
    >>> entry = {"content": "数据库迁移今晚完成"}
    >>> default_scorer(entry, {"message": "数据库迁移"}), scorer(entry, {"message": "数据库迁移"})
    (5.0, 12.5)

    Called like :func:`default_scorer` (``scorer(entry, context, now=now)``).
    Its options are plain attributes, so the prepared paths can read them and
    keep their speed: a :class:`PreparedStore` built with this scorer indexes
    each entry with its word reader. Two scorers with the same options are
    equal. :meth:`to_data` writes the options as JSON-ready data
    (``make_scorer(**scorer.to_data())`` reads them back), for named options
    only.

    The score, exactly (every option absent gives :func:`default_scorer`, bit
    for bit: the extra factor is then 1.0, and ``x * 1.0 == x``)::

        base x recency(type) x tags x project x message x similarity

    Options (keyword-only):

    - ``words``: the word reader of the message factor, ``text -> set of
      str``; ``None`` (or ``"ascii"``) is the default ``[a-z0-9]`` words,
      ``"unicode"`` is :func:`unicode_words`. A reader that returns anything
      but a set of strings is refused, naming the entry.
    - ``relevance``: ``"words"`` (default) keeps the message factor of the
      default scorer and no similarity factor; ``"similarity"`` drops the
      message factor (1.0) for the similarity factor; ``"both"`` multiplies
      the two.
    - ``similarity_weight`` (default 1.5, finite, >= 0): the similarity factor
      is ``1 + similarity_weight * s``, with ``s`` the entry's ``similarity``
      (a retriever's score) clamped to ``[0, 1]``; 1.0 for an entry without
      one (``None`` or missing). A ``similarity`` that is not a finite real
      number is refused, naming the entry. Used only when ``relevance`` is
      ``"similarity"`` or ``"both"``.
    - ``evergreen``: entry types that do not decay: their recency is 1.0 at
      any age (corrections and preferences are often evergreen).
    - ``decay_days``: ``{type: days}``, the decay horizon of a type:
      recency is ``max(0.3, 1 - 0.7 * age_days / days)`` (90 for a type not
      named; an evergreen type ignores it). Days are finite and > 0.

    Base, tags and project are the default scorer's factors.
    """

    __slots__ = ("_frozen", "_horizons", "decay_days", "evergreen", "relevance",
                 "similarity_weight", "words")
    #: The option names, in the order ``repr`` and ``to_data`` list them.
    OPTIONS: Tuple[str, ...] = ("words", "relevance", "similarity_weight", "evergreen",
                                "decay_days")
    #: Each option's default, the value that leaves :func:`default_scorer` as it is.
    DEFAULTS: Mapping[str, Any] = MappingProxyType({
        "words": None, "relevance": "words", "similarity_weight": 1.5, "evergreen": (),
        "decay_days": ()})

    def __init__(self, *, words: Union[str, WordReader, None] = None, relevance: str = "words",
                 similarity_weight: float = 1.5, evergreen: Iterable[str] = (),
                 decay_days: Optional[Mapping[str, float]] = None) -> None:
        if isinstance(words, str):
            if words not in WORD_READERS:
                raise ValueError(f"words must be one of {', '.join(map(repr, WORD_READERS))},"
                                 f" a callable or None, got {words!r}")
            words = WORD_READERS[words]
        elif words is not None and not callable(words):
            raise TypeError(f"words must be a word reader (text -> set of str), a name or None,"
                            f" got {type(words).__name__}")
        self.words: Optional[WordReader] = words
        if relevance not in RELEVANCES:
            raise ValueError(f"relevance must be one of {', '.join(map(repr, RELEVANCES))},"
                             f" got {relevance!r}")
        self.relevance: str = relevance
        self.similarity_weight: float = _check_number(similarity_weight, "similarity_weight",
                                                      positive=False)
        if isinstance(evergreen, str):
            raise TypeError(f"evergreen must be a collection of types, not a bare str:"
                            f" write evergreen=[{evergreen!r}]")
        if not isinstance(evergreen, Iterable):
            raise TypeError(f"evergreen must be a collection of types,"
                            f" got {type(evergreen).__name__}")
        kept = tuple(evergreen)
        for entry_type in kept:
            if not isinstance(entry_type, str):
                raise TypeError(f"evergreen must hold entry types (str), got {entry_type!r}")
        self.evergreen: Tuple[str, ...] = tuple(sorted(set(kept)))
        if decay_days is None:
            decay_days = {}
        if not isinstance(decay_days, Mapping):
            raise TypeError(f"decay_days must be a mapping {{type: days}},"
                            f" got {type(decay_days).__name__}")
        horizons = []
        for entry_type, days in decay_days.items():
            if not isinstance(entry_type, str):
                raise TypeError(f"decay_days keys must be entry types (str), got {entry_type!r}")
            horizons.append((entry_type, _check_number(days, f"decay_days[{entry_type!r}]",
                                                       positive=True)))
        self.decay_days: Tuple[Tuple[str, float], ...] = tuple(sorted(horizons))
        self._horizons: Dict[str, float] = dict(horizons)
        self._frozen: FrozenSet[str] = frozenset(self.evergreen)

    def __call__(self, entry: Mapping[str, Any], context: Optional[Mapping[str, Any]] = None,
                 *, now: Optional[datetime] = None) -> float:
        """Score ``entry`` as :func:`default_scorer` does, with these options."""
        query = _Query.from_context(context, self.words, self)
        return _default_score(entry, query, _utc_now(now), _label(entry, None))

    @property
    def uses_similarity(self) -> bool:
        """True when the score reads an entry's ``similarity``."""
        return self.relevance != "words"

    def _recency(self, entry_type: Any, created_us: Optional[int], now_us: int) -> float:
        """The recency factor of an entry of ``entry_type`` (at most 1.0, at age 0)."""
        if not self._frozen and not self._horizons:
            return _recency(created_us, now_us)
        if entry_type in self._frozen if _hashable(entry_type) else False:
            return 1.0
        horizon = self._horizons.get(entry_type, _DECAY_DAYS) if _hashable(entry_type) else (
            _DECAY_DAYS)
        return _recency(created_us, now_us, horizon)

    def _similarity(self, value: Any, label: str) -> float:
        """The similarity factor: ``1 + weight * clamp(similarity, 0, 1)``, 1.0 without one."""
        if value is None or self.relevance == "words":
            return 1.0
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise ValueError(f"{label}: similarity must be a number (a retriever's score),"
                             f" got {value!r}")
        share = float(value)
        if not math.isfinite(share):
            raise ValueError(f"{label}: similarity must be finite, got {value!r}")
        return 1 + self.similarity_weight * min(1.0, max(0.0, share))

    def _key(self) -> Tuple[Any, ...]:
        return tuple(getattr(self, name) for name in self.OPTIONS)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ConfiguredScorer):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        shown = []
        for name in self.OPTIONS:
            value = getattr(self, name)
            if value != self.DEFAULTS[name]:
                if name == "words":
                    value = _reader_name(value) or value
                elif name == "decay_days":
                    value = dict(value)
                elif name == "evergreen":
                    value = list(value)
                shown.append(f"{name}={value!r}")
        return f"ConfiguredScorer({', '.join(shown)})"

    def to_data(self) -> Dict[str, Any]:
        """The options as JSON-ready data; ``TypeError`` for an option that is unnamed code.

        >>> make_scorer(words="unicode").to_data()
        {'words': 'unicode'}
        >>> make_scorer(relevance="both", evergreen=["correction"]).to_data()
        {'words': 'ascii', 'relevance': 'both', 'evergreen': ['correction']}

        ``words`` is always written; every other option only when it is not
        its default.
        """
        name = "ascii" if self.words is None else _reader_name(self.words)
        if name is None:
            raise TypeError(f"scorer option words is a custom word reader"
                            f" ({getattr(self.words, '__qualname__', self.words)!r}),"
                            f" which is code, not data; name one of {', '.join(WORD_READERS)}")
        data: Dict[str, Any] = {"words": name}
        for option in self.OPTIONS[1:]:
            value = getattr(self, option)
            if value != self.DEFAULTS[option]:
                data[option] = (dict(value) if option == "decay_days" else
                                list(value) if option == "evergreen" else value)
        return data

    def _walks_with(self, reader: Optional[WordReader]) -> bool:
        """True when a prepared index read with ``reader`` can answer for this scorer.

        An option the prepared walk does not bound must make this False (the
        store then answers statelessly, correctly). The walk bounds every
        option but another word reader: recency per type is still highest
        for the newest entry of a group (one type), and never above 1.0; the
        similarity factor is 1.0 for every entry the walk streams, since an
        entry that carries a ``similarity`` is scored exactly (not streamed),
        as every ``extra=`` candidate is.
        """
        return self.words is reader


def make_scorer(*, words: Union[str, WordReader, None] = None, relevance: str = "words",
                similarity_weight: float = 1.5, evergreen: Iterable[str] = (),
                decay_days: Optional[Mapping[str, float]] = None) -> ConfiguredScorer:
    """Build the default scorer with options; with none, it scores as :func:`default_scorer`.

    >>> chinese = make_scorer(words=unicode_words)
    >>> round(chinese({"content": "周五前完成数据库迁移"}, {"message": "数据库迁移"}), 3)
    12.5
    >>> make_scorer()({"content": "x"}, {"message": "x"}) == default_scorer({"content": "x"},
    ...                                                                   {"message": "x"})
    True

    A hybrid of lexical overlap and a vector search's similarity, with
    corrections that never decay and episodes that fade in a week:

    >>> from datetime import datetime, timezone
    >>> hybrid = make_scorer(relevance="both", similarity_weight=2.0,
    ...                      evergreen=["correction"], decay_days={"episode": 7})
    >>> now = datetime(2026, 4, 1, tzinfo=timezone.utc)
    >>> old = "2025-01-01T00:00:00Z"
    >>> hybrid({"type": "correction", "created": old}, now=now)
    5.0
    >>> round(hybrid({"type": "episode", "created": "2026-03-29T00:00:00Z",
    ...               "content": "deploy", "similarity": 0.5}, {"message": "deploy"}, now=now), 6)
    17.5

    (5 x (1 - 0.7 x 3 / 7) x (1 + 1.5 x 1) x (1 + 2.0 x 0.5) = 5 x 0.7 x 2.5 x 2.)
    See :class:`ConfiguredScorer` for the options and the exact formula. Pass
    the result as ``scorer=`` to :func:`retrieve_pools` and the other
    functions, and to :class:`PreparedStore` (which then indexes with its
    word reader and walks best-first for every option).
    """
    return ConfiguredScorer(words=words, relevance=relevance,
                            similarity_weight=similarity_weight, evergreen=evergreen,
                            decay_days=decay_days)


def _check_number(value: Any, what: str, *, positive: bool) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{what} must be a number, got {value!r}")
    number = float(value)
    if not math.isfinite(number) or number < 0 or (positive and number == 0):
        raise ValueError(f"{what} must be finite and {'> 0' if positive else '>= 0'},"
                         f" got {value!r}")
    return number


def _reader_name(reader: Any) -> Optional[str]:
    for name, known in WORD_READERS.items():
        if known is reader:
            return name
    return None


#: The options of :func:`default_scorer`: every option absent.
_PLAIN = ConfiguredScorer()


def _options_of(scorer: Any) -> Optional[ConfiguredScorer]:
    """The options a scorer is the default score with; None for any other scorer."""
    if scorer is default_scorer:
        return _PLAIN
    return scorer if type(scorer) is ConfiguredScorer else None


def _read_words(reader: WordReader, text: str, label: str) -> AbstractSet[str]:
    """``reader(text)``, checked: a set of str, else a TypeError naming the entry."""
    got = reader(text)
    if reader is unicode_words:
        return got
    if not isinstance(got, AbstractSet) or isinstance(got, Mapping):
        raise TypeError(f"{label}: the word reader must return a set of str,"
                        f" got {type(got).__name__}")
    for word in got:
        if not isinstance(word, str):
            raise TypeError(f"{label}: the word reader must return a set of str,"
                            f" got {word!r} in it")
    return got


def _entry_words(reader: WordReader, text: str, entry: Mapping[str, Any],
                 i: int) -> AbstractSet[str]:
    """:func:`_read_words` of a stored entry's text (a build reads every entry).

    The entry's label is built only to name it when the words are refused.
    """
    try:
        return _read_words(reader, text, "")
    except TypeError:  # refused: again, this time naming the entry
        return _read_words(reader, text, _label(entry, i))


# --------------------------------------------------------------------------
# retrieve: fill one pool
# --------------------------------------------------------------------------


def retrieve(
    entries: Iterable[E],
    pool: Pool,
    context: Optional[Mapping[str, Any]] = None,
    *,
    scorer: Scorer = default_scorer,
    token_counter: TokenCounter = default_token_counter,
    is_active: ActivityTest = default_is_active,
    now: Optional[datetime] = None,
    max_always_tokens: Optional[int] = None,
) -> List[E]:
    """Fill one pool: every active always-scope entry, then the best-scored rest.

    >>> store = [{"id": "a", "content": "x" * 40}, {"id": "fix", "scope": "always"},
    ...          {"id": "b", "base_priority": 9, "content": "y" * 40}]
    >>> [e["id"] for e in retrieve(store, Pool("all", max_tokens=10, max_entries=1))]
    ['fix', 'b']

    Active entries of the pool's types are split into always-scope and
    contextual ones. The always-scope ones load first, in input order, outside
    ``max_tokens`` and ``max_entries``. The contextual ones are sorted by
    ``(-score, created, id, input index)`` and taken greedily: one that does
    not fit the tokens left is skipped and the scan goes on; the scan stops
    when ``max_entries`` are taken. An entry costs its ``token_count`` when
    that is a positive int, else ``token_counter(str(content))``.

    The returned dicts are the input objects themselves; nothing is mutated.
    A scorer is called as ``scorer(entry, context, now=now)`` (without
    ``now`` when it takes no such parameter) and must return a finite number;
    ``now`` is the call's instant, read once per call (the current UTC time
    when ``now=None``), so every entry is scored at the same moment.

    ``max_always_tokens`` caps the always tier: when the always-scope entries
    that load cost more, the call raises :class:`AlwaysScopeOverflowError`
    rather than drop one (``None``, the default: no ceiling).
    """
    if not isinstance(pool, Pool):
        raise TypeError(f"pool must be a Pool, got {type(pool).__name__}")
    call = _Call(entries, context, scorer, token_counter, is_active, now, max_always_tokens)
    picked = call.fill(pool, taken=frozenset())
    call.always.check_ceiling()
    return picked


# --------------------------------------------------------------------------
# retrieve_pools: fill several pools from one store
# --------------------------------------------------------------------------


def retrieve_pools(
    entries: Iterable[E],
    pools: Sequence[Pool],
    context: Optional[Mapping[str, Any]] = None,
    *,
    scorer: Scorer = default_scorer,
    token_counter: TokenCounter = default_token_counter,
    is_active: ActivityTest = default_is_active,
    now: Optional[datetime] = None,
    max_always_tokens: Optional[int] = None,
    always_pool: bool = False,
) -> Dict[str, List[E]]:
    """Fill several pools in order; an entry lands in at most one pool.

    >>> store = [{"id": "t", "type": "task"}, {"id": "n", "type": "note"}]
    >>> got = retrieve_pools(store, [Pool("tasks", 10, 5, types=("task",)),
    ...                              Pool("anything", 10, 5)])
    >>> {name: [e["id"] for e in picked] for name, picked in got.items()}
    {'tasks': ['t'], 'anything': ['n']}

    An entry taken by an earlier pool is invisible to later ones (by object
    identity, so entries without an ``"id"`` dedupe too); pool ``i`` gets
    exactly what :func:`retrieve` gives over the entries no earlier pool took.
    The result's keys follow the pool order. Duplicate pool names raise
    ``ValueError``; a single ``Pool`` instead of a sequence raises ``TypeError``.
    Each entry is tested, scored and measured at most once per call.
    ``max_always_tokens`` caps the always tier of the whole call (all pools
    together), as for :func:`retrieve`.

    ``always_pool=True`` loads every active always-scope entry, even one
    whose type no pool accepts: those load in one more pool named
    ``"always"``, after the others, in input order, outside every budget
    and counted by ``max_always_tokens``. The key is there only when at
    least one entry loads in it; the other pools get exactly what they get
    without the option. A pool of the caller's named ``"always"`` is then
    refused (``ValueError``).

    >>> store = [{"id": "fix", "type": "correction", "scope": "always"},
    ...          {"id": "t", "type": "task"}]
    >>> got = retrieve_pools(store, [Pool("tasks", 10, 5, types=("task",))],
    ...                      always_pool=True)
    >>> {name: [e["id"] for e in picked] for name, picked in got.items()}
    {'tasks': ['t'], 'always': ['fix']}
    """
    checked = _call_pools(_check_pools(pools), always_pool)
    call = _Call(entries, context, scorer, token_counter, is_active, now, max_always_tokens)
    taken: Set[int] = set()
    result: Dict[str, List[E]] = {}
    for pool in checked:
        picked = call.fill(pool, taken=taken)
        taken.update(id(entry) for entry in picked)
        if _shown(pool, len(picked)):
            result[pool.name] = picked
    call.always.check_ceiling()
    return result


# --------------------------------------------------------------------------
# THE INVARIANT: always-scope entries load first, outside every budget
# --------------------------------------------------------------------------


class _AlwaysTier:
    """The always-scope step that every fill, stateless and prepared, starts with.

    A pool loads every usable always-scope entry of its types, in input
    order, before its budget opens, and charges them to neither
    ``max_tokens`` nor ``max_entries``: so no amount of fresh, high-scoring
    content can crowd a behavioural correction out. That is the reason this
    library exists. The only limit is the call's ``max_always_tokens``, which
    raises (never drops) when the tier costs more.

    Each entry lands in at most one pool, so a type's always-scope entries
    load in the first pool of the call that accepts the type; a later pool
    that accepts it too finds them taken. (An entry object is of one type and
    one scope, so no other pool's pick can be one of them.) With
    ``always_pool=True`` a call ends with one more pool of every type and no
    room (:data:`_ALWAYS_POOL`): its load is the tier no pool's types
    accepted, so then every usable always-scope entry loads.
    """

    __slots__ = ("by_type", "cost", "entries", "limit", "loaded", "pools")

    def __init__(
        self,
        by_type: Iterable[Tuple[Any, Sequence[int]]],
        entries: Sequence[Mapping[str, Any]],
        cost: Callable[[int], int],
        limit: Optional[int],
    ) -> None:
        self.by_type = by_type  # (entry type, its always-scope entries in input order)
        self.entries, self.cost = entries, cost
        self.limit = _check_limit(limit)
        self.loaded: List[int] = []
        self.pools: List[Pool] = []  # the pools loaded so far, in call order

    def load(self, pool: Pool, usable: Optional[Callable[[int], bool]] = None) -> List[int]:
        """The always-scope entries ``pool`` loads first: every usable one of its types.

        ``usable`` is the call's filter (a tenant's, ``include=``); the types an
        earlier pool accepted are that pool's.
        """
        earlier = self.pools
        lists = [members for entry_type, members in self.by_type if pool.accepts(entry_type)
                 and not any(done.accepts(entry_type) for done in earlier)]
        earlier.append(pool)
        # (each list is in input order already: one type's tier needs no sort)
        tier = list(lists[0]) if len(lists) == 1 else sorted(chain.from_iterable(lists))
        if usable is not None:
            tier = list(filter(usable, tier))
        self.loaded.extend(tier)
        return tier

    def check_ceiling(self) -> None:
        """Raise :class:`AlwaysScopeOverflowError` when the loaded tier costs over the limit."""
        if self.limit is not None:
            total = sum(map(self.cost, self.loaded))
            if total > self.limit:
                raise AlwaysScopeOverflowError([self.entries[i] for i in self.loaded], total,
                                               self.limit)


# --------------------------------------------------------------------------
# The stateless engine
# --------------------------------------------------------------------------


class _Candidate(NamedTuple):
    """A heap item: an entry scored exactly, ordered by the spec's sort key."""

    neg_score: Any
    created: str
    id: str
    position: int  # in the input (stateless) or in the store then extras (prepared)


class _Marker(NamedTuple):
    """A heap item: an upper bound standing for entries not yet scored exactly.

    Its text fields are "" and its kind is negative, so it sorts before every
    candidate of an equal score: a candidate pops only when no marker can
    still beat it, and the fill order is the one of exact keys.
    """

    neg_bound: float
    created: str  # always ""
    id: str  # always ""
    kind: int  # _LAZY, _STREAM or _START
    ref: int  # the entry (_LAZY), the stream (_STREAM), the next stream to start (_START)


# Heap items are built with tuple.__new__(_Marker, (...)): the same named
# tuple, without the Python frame of its constructor (a hot path).
_new = tuple.__new__

_LAZY = -1  # stateless: an entry whose message factor is not computed yet
_STREAM = -1  # prepared: a started stream's next entry
_START = -2  # prepared: the streams not started yet


class _Call:
    """One call's work: each entry is tested, scored and measured at most once."""

    def __init__(
        self,
        entries: Iterable[Any],
        context: Optional[Mapping[str, Any]],
        scorer: Scorer,
        token_counter: TokenCounter,
        is_active: ActivityTest,
        now: Optional[datetime],
        max_always_tokens: Optional[int] = None,
    ) -> None:
        self.entries = _check_entries(entries)
        for name, fn in (("scorer", scorer), ("token_counter", token_counter),
                         ("is_active", is_active)):
            if not callable(fn):
                raise TypeError(f"{name} must be callable, got {type(fn).__name__}")
        self.context = context
        # The default score with options (default_scorer, make_scorer) is
        # computed here, factor by factor; any other scorer is called.
        self.options = _options_of(scorer)
        self.query = _Query.from_context(
            context, self.options.words if self.options is not None else None, self.options)
        self.now = _utc_now(now)
        self.now_us = _epoch_us(self.now)
        self.scorer = scorer
        self.scorer_takes_now = scorer is default_scorer or _takes_now(scorer)
        self.token_counter = token_counter
        self.active = [i for i, entry in enumerate(self.entries) if is_active(entry)]
        self.scores: Dict[int, Any] = {}
        self.partial_scores: Dict[int, float] = {}
        self.costs: Dict[int, int] = {}
        entries_ = self.entries
        # The active entries by scope and type, each list in input order: a pool
        # reads only the lists of its types (a type no dict can key is kept apart).
        self.contextual: Dict[Any, List[int]] = {}
        self.unkeyed: List[int] = []
        always: Dict[Any, List[int]] = {}
        always_unkeyed: List[Tuple[Any, Sequence[int]]] = []
        for i in self.active:
            entry = entries_[i]
            entry_type = entry.get("type", "note")
            keyed = type(entry_type) is str or _hashable(entry_type)
            if entry.get("scope") != "always":
                if keyed:
                    self.contextual.setdefault(entry_type, []).append(i)
                else:
                    self.unkeyed.append(i)
            elif keyed:
                always.setdefault(entry_type, []).append(i)
            else:
                always_unkeyed.append((entry_type, (i,)))
        self.always = _AlwaysTier([*always.items(), *always_unkeyed], entries_, self.cost,
                                  max_always_tokens)

    def fill(
        self,
        pool: Pool,
        taken: AbstractSet[int],
        trace: Optional[Dict[int, Decision]] = None,
        ledgers: Optional[Dict[str, Ledger]] = None,
    ) -> List[Any]:
        """Fill one pool; with ``trace``, record a Decision per entry considered.

        Without a trace, the default scorer's message factor (the costly part)
        is computed only for entries that can still win: each enters the heap
        as a :class:`_Marker` bounding its score over every message factor,
        and is scored exactly when popped.
        """
        entries = self.entries
        always = self.always.load(pool)
        picked: List[Any] = [entries[i] for i in always]

        lazy = trace is None and self.options is not None and bool(self.query.words)
        message_max = _message_factor(len(self.query.words), self.query)
        contextual: List[Any] = []
        members: List[int] = []
        if pool is not _ALWAYS_POOL:  # (always_pool=True: that pool holds its always tier alone)
            members = [i for entry_type, listed in self.contextual.items()
                       if pool.accepts(entry_type) for i in listed]
            members += [i for i in self.unkeyed if pool.accepts(entries[i].get("type", "note"))]
        for i in members:
            if id(entries[i]) in taken:
                continue
            if lazy:
                partial = self.partial_score(i)
                # The largest score over the message factor's range [1, max].
                bound = max(partial, partial * message_max)
                if self.query.options is not None:  # times the similarity factor (>= 1)
                    similarity = self.similarity(i)
                    bound = max(bound, bound * similarity)
                contextual.append(_new(_Marker, (-bound, "", "", _LAZY, i)))
            else:
                contextual.append(self.key(i))

        heapq.heapify(contextual)
        tokens_left, slots_left = pool.max_tokens, pool.max_entries
        skipped: List[Tuple[int, int]] = []  # (index, tokens left at its turn)
        while contextual and slots_left > 0 and tokens_left > 0:
            item = heapq.heappop(contextual)
            i = item[-1]
            cost = self.cost(i)
            if type(item) is _Marker:  # score exactly, unless it can never fit
                if cost <= tokens_left:
                    heapq.heappush(contextual, self.key(i))
                continue
            if cost <= tokens_left:
                picked.append(entries[i])
                tokens_left -= cost
                slots_left -= 1
                if trace is not None:
                    trace[i] = self.decision(i, "selected", pool, rank=len(picked) - 1)
            elif trace is not None:
                skipped.append((i, tokens_left))

        if trace is not None and ledgers is not None:
            for rank, i in enumerate(always):
                trace[i] = Decision(entries[i], i, "always", pool.name,
                                    cost=self.cost(i), rank=rank)
            for i, left in skipped:
                trace[i] = self.decision(i, "over_tokens", pool, tokens_left=left)
            # The scan ended early: the cap was reached, or no token is left.
            late = "over_entries" if slots_left == 0 else "over_tokens"
            for key in contextual:
                trace[key[-1]] = self.decision(key[-1], late, pool, tokens_left=(
                    tokens_left if late == "over_tokens" else None))
            ledgers[pool.name] = Ledger(
                pool.name, pool.max_tokens, pool.max_entries,
                tokens_used=pool.max_tokens - tokens_left,
                selected=pool.max_entries - slots_left,
                always=len(always),
                always_tokens=sum(self.cost(i) for i in always),
                skipped_tokens=len(skipped) + (len(contextual) if late == "over_tokens" else 0),
                skipped_entries=len(contextual) if late == "over_entries" else 0,
            )
        return picked

    def decision(self, i: int, outcome: str, pool: Pool, *, rank: Optional[int] = None,
                 tokens_left: Optional[int] = None) -> Decision:
        return Decision(self.entries[i], i, outcome, pool.name, score=self.score(i),
                        cost=self.cost(i), tokens_left=tokens_left, rank=rank)

    def key(self, i: int) -> _Candidate:
        entry = self.entries[i]
        return _new(_Candidate, (-self.score(i), _sort_text(entry, "created"),
                                 _sort_text(entry, "id"), i))

    def partial_score(self, i: int) -> float:
        """The default score with its message factor at 1 (validated once).

        An entry's label is built only to name it in an error: most entries
        never need one, and building it costs as much as scoring them.
        """
        partial = self.partial_scores.get(i)
        if partial is None:
            entry = self.entries[i]
            try:
                value = self._partial(entry, "")
            except (TypeError, ValueError):  # refused: again, this time naming the entry
                value = self._partial(entry, _label(entry, i))
            partial = self.partial_scores[i] = _checked(value, entry, i)
        return partial

    def _partial(self, entry: Mapping[str, Any], label: str) -> float:
        tags = _tag_set(entry.get("tags"), f"{label}: tags")
        created_us = _time_us_kept(entry.get("created"))
        options = self.query.options
        recency = (_recency(created_us, self.now_us) if options is None else
                   options._recency(entry.get("type", "note"), created_us, self.now_us))
        return _score(_base_priority(entry, label), recency, _tag_factor(tags, self.query),
                      _project_factor(entry.get("project"), self.query), 1.0)

    def score(self, i: int) -> Any:
        if i not in self.scores:
            entry = self.entries[i]
            if self.options is not None:
                # (A word reader's output is checked naming the entry: it is user code.)
                shared = (_shared_words(_content(entry), self.query,
                                        _label(entry, i) if self.query.reader else "")
                          if self.query.words else 0)
                # The message factor comes last: the score is the partial times it, exactly
                # (then times the similarity factor of a make_scorer option, when used).
                value: Any = self.partial_score(i) * _message_factor(shared, self.query)
                if self.query.options is not None:
                    value = value * self.similarity(i)
            elif self.scorer_takes_now:
                value = self.scorer(entry, self.context, now=self.now)
            else:
                value = self.scorer(entry, self.context)
            self.scores[i] = _checked(value, entry, i)
        return self.scores[i]

    def cost(self, i: int) -> int:
        if i not in self.costs:
            self.costs[i] = _cost(self.entries[i], i, self.token_counter)
        return self.costs[i]

    def similarity(self, i: int) -> float:
        """The similarity factor of a make_scorer option (1.0 without one)."""
        entry = self.entries[i]
        options = cast(ConfiguredScorer, self.query.options)
        try:
            return options._similarity(entry.get("similarity"), "")
        except ValueError:  # refused: again, this time naming the entry
            return options._similarity(entry.get("similarity"), _label(entry, i))


# --------------------------------------------------------------------------
# explain_pools: account for every entry and every token
# --------------------------------------------------------------------------

#: The closed set of outcomes an entry can have, in the order they are decided.
OUTCOMES = ("inactive", "no_pool", "always", "selected", "over_entries", "over_tokens")


@dataclass(frozen=True)
class Decision:
    """Why one input entry was or was not loaded.

    ``outcome`` is one of :data:`OUTCOMES`. ``pool`` is the pool it was decided
    in (the last pool that considered it when none loaded it; ``None`` for
    ``inactive`` and ``no_pool``). ``score`` is set for contextual entries,
    ``cost`` wherever a pool considered the entry, ``tokens_left`` (the near
    miss) for ``over_tokens``, and ``rank`` (0-based load order in its pool)
    for loaded entries.
    """

    entry: Mapping[str, Any]
    index: int
    outcome: str
    pool: Optional[str] = None
    score: Optional[float] = None
    cost: Optional[int] = None
    tokens_left: Optional[int] = None
    rank: Optional[int] = None

    @property
    def loaded(self) -> bool:
        """True for ``always`` and ``selected``."""
        return self.outcome in ("always", "selected")


def _loaded(entry: Mapping[str, Any], index: int, outcome: str, pool: str,
            score: Optional[float], cost: int, rank: int) -> Decision:
    """``Decision(entry, index, outcome, pool, score=..., cost=..., rank=...)``, cheaper.

    A frozen dataclass's ``__init__`` sets each of its eight fields through
    ``object.__setattr__``, and :meth:`PreparedStore.decide` builds one per
    loaded entry (2,000 a query with a large always tier): this fills the new
    instance's fields in one step instead, at under half the cost.
    """
    decision = object.__new__(Decision)
    object.__setattr__(decision, "__dict__", {
        "entry": entry, "index": index, "outcome": outcome, "pool": pool, "score": score,
        "cost": cost, "tokens_left": None, "rank": rank})
    return decision


@dataclass(frozen=True)
class Ledger:
    """One pool's budget after the fill: what was spent, left and skipped.

    Always-scope tokens are accounted (``always_tokens``) but never charged
    to ``tokens_used``: they sit outside the budget.
    """

    pool: str
    max_tokens: int
    max_entries: int
    tokens_used: int
    selected: int
    always: int
    always_tokens: int
    skipped_tokens: int
    skipped_entries: int

    @property
    def tokens_left(self) -> int:
        """Tokens of ``max_tokens`` not spent on contextual entries."""
        return self.max_tokens - self.tokens_used


@dataclass(frozen=True)
class Explanation:
    """The plain-data account of one :func:`explain_pools` call."""

    decisions: Tuple[Decision, ...]
    ledgers: Dict[str, Ledger]

    def loaded(self) -> Dict[str, List[Decision]]:
        """The loaded decisions per pool, in load order (pool order as keys)."""
        out: Dict[str, List[Decision]] = {name: [] for name in self.ledgers}
        for decision in self.decisions:
            if decision.loaded and decision.pool is not None:
                out[decision.pool].append(decision)
        for picked in out.values():
            picked.sort(key=lambda d: d.rank if d.rank is not None else -1)
        return out


def explain_pools(
    entries: Iterable[Mapping[str, Any]],
    pools: Sequence[Pool],
    context: Optional[Mapping[str, Any]] = None,
    *,
    scorer: Scorer = default_scorer,
    token_counter: TokenCounter = default_token_counter,
    is_active: ActivityTest = default_is_active,
    now: Optional[datetime] = None,
    max_always_tokens: Optional[int] = None,
    always_pool: bool = False,
) -> Explanation:
    """Run :func:`retrieve_pools` and say why each entry was or was not loaded.

    >>> store = [{"id": "fix", "scope": "always"}, {"id": "old", "status": "retired"},
    ...          {"id": "big", "content": "x" * 400}, {"id": "small"}]
    >>> got = explain_pools(store, [Pool("all", max_tokens=20, max_entries=5)])
    >>> [(d.entry["id"], d.outcome) for d in got.decisions]
    [('fix', 'always'), ('old', 'inactive'), ('big', 'over_tokens'), ('small', 'selected')]
    >>> got.ledgers["all"].tokens_used, got.ledgers["all"].skipped_tokens
    (1, 1)

    One :class:`Decision` per input entry, in input order, and one
    :class:`Ledger` per pool. The loaded entries, per pool and in load order
    (:meth:`Explanation.loaded`), are exactly what :func:`retrieve_pools`
    returns for the same arguments. To account for every token it measures
    every entry a pool considered, always-scope ones and those the fill
    never reached included, so a ``token_counter`` that fails on such an
    entry raises here where :func:`retrieve_pools` would not have asked.
    With ``max_always_tokens``, an always tier costing more raises
    :class:`AlwaysScopeOverflowError`, as :func:`retrieve_pools` does.

    With ``always_pool=True`` (see :func:`retrieve_pools`), an always-scope
    entry whose type no pool accepts is ``always`` in the pool ``"always"``
    rather than ``no_pool``, and that pool has a ledger (no budget: its
    ``always`` and ``always_tokens`` count its entries) only when at least
    one entry loads in it.
    """
    checked = _call_pools(_check_pools(pools), always_pool)
    call = _Call(entries, context, scorer, token_counter, is_active, now, max_always_tokens)
    trace: Dict[int, Decision] = {}
    ledgers: Dict[str, Ledger] = {}
    taken: Set[int] = set()
    for pool in checked:
        picked = call.fill(pool, taken=taken, trace=trace, ledgers=ledgers)
        taken.update(id(entry) for entry in picked)
        if not _shown(pool, len(picked)):
            del ledgers[pool.name]
    call.always.check_ceiling()
    active = set(call.active)
    decisions = []
    for i, entry in enumerate(call.entries):
        if i in trace:
            decisions.append(trace[i])
        else:
            outcome = "no_pool" if i in active else "inactive"
            decisions.append(Decision(entry, i, outcome))
    return Explanation(tuple(decisions), ledgers)


class AlwaysScopeOverflowError(ValueError):
    """The always-scope entries of a call cost more than its ``max_always_tokens``.

    Raised instead of dropping a correction (which would break the one
    invariant) and instead of silently blowing up the context. ``entries``
    are the always-scope entries that loaded, ``total`` their cost.
    """

    def __init__(self, entries: Sequence[Mapping[str, Any]], total: int, limit: int) -> None:
        self.entries = tuple(entries)
        self.total = total
        self.limit = limit
        named = ", ".join(_label(entry, None) for entry in self.entries)
        super().__init__(
            f"always-scope entries cost {total} tokens, more than max_always_tokens={limit}:"
            f" {named}"
        )


# --------------------------------------------------------------------------
# PreparedStore: the same answers, prepared once for many queries
# --------------------------------------------------------------------------


class PreparedStore:
    """A memory store prepared once and queried many times, same answers as the functions.

    >>> from datetime import datetime, timezone
    >>> store = PreparedStore([{"id": "fix", "scope": "always"},
    ...                        {"id": "a", "content": "deploy the api"}, {"id": "b"}])
    >>> got = store.retrieve_pools([Pool("all", max_tokens=10, max_entries=1)],
    ...                            {"message": "deploy"},
    ...                            now=datetime(2026, 1, 1, tzinfo=timezone.utc))
    >>> [e["id"] for e in got["all"]]
    ['fix', 'a']
    >>> store.add({"id": "c", "content": "deploy the api now"})
    >>> store.upsert({"id": "a", "content": "deploy the web app"})  # replaces "a" in place
    >>> store.delete("b")
    >>> [e["id"] for e in store.entries]
    ['fix', 'a', 'c']

    Building reads every entry once: activity, type, scope, cost, parsed
    ``created``, tags and the words of its content. Entries of one type,
    priority and project form a group whose order by score is known before
    any query (recency only falls with age), and per type and project every
    word and tag lists its entries newest first. A default-scorer query walks these lists
    best-first, each behind an upper bound of what it can still yield, and
    stops when the pool's cap or budget is met: it scores exactly only the
    entries that can still matter. Results are identical to
    :func:`retrieve_pools` over :attr:`entries` (same objects, same order).

    A living store: :meth:`add` appends, :meth:`upsert` replaces the entry
    with the same ``id`` in its place (so ties break as before) or appends,
    :meth:`delete` removes one by ``id`` -- none of them rebuilds. Entries
    without an ``id`` can be added but not upserted or deleted; an ``id``
    held by several stored entries (allowed, as in a plain list) makes
    upsert and delete refuse it as ambiguous. An entry is read when it is
    written: one the default scorer would refuse (a non-numeric
    ``base_priority``, ``tags`` that are not strings) is refused then, naming
    it, rather than on every later query. The store notices nothing changed
    inside an entry afterwards: upsert the changed entry, or :meth:`rebuild`.

    Tenants: with ``partition_key="user_id"`` the store is prepared per value
    of that key, and a query whose ``where`` names that key (as a tenant
    filter does) walks only that tenant's entries, so it costs what the
    tenant's share costs.

    Filters on any other key need no declaring: a ``where`` without the
    partition key (any ``where``, on an unpartitioned store) walks a *view*.
    The first query that filters on a key groups the entries by their value
    of it (one pass, then kept current by every write), and the first query
    for a value indexes that value's entries alone, so it too costs what the
    matching share costs, and answers exactly the same. Memory: a view costs
    one index per value queried (a key's values hold each entry at most
    once: at most one more index of the store per key) and 8 bytes per entry
    for its groups; the store keeps the views of at most four keys, dropping
    the least recently used. A key that some entry holds an unhashable value
    for (a list, a set: it may equal a filter's value, as a set equals a
    frozenset) gets no parts; on an unpartitioned store a value more than
    half the entries hold walks the whole index, filtered (about what its
    matching half would cost, at most twice), rather than copy most of it.
    On a partitioned store, a filter none of whose keys a view serves
    reads every entry (stateless).

    ``scorer`` is what queries score with unless they name another; a
    :func:`make_scorer` scorer is indexed with its word reader
    (``PreparedStore(entries, scorer=make_scorer(words=unicode_words))``
    prepares a Chinese store) and walked like the default one, whatever its
    relevance, evergreen and decay options (an entry that carries a
    ``similarity``, as an ``extra=`` candidate does, is scored exactly
    rather than streamed). A query with a scorer the index cannot bound (a
    custom callable, or another word reader) falls back to the stateless
    path, correctly. The store may be
    shared by threads: queries and writes take one lock, so a query never
    sees a write half done.

    ``engine`` chooses how the store is indexed and walked, never what it
    answers: ``"python"`` is this file's best-first walk (standard library
    only); ``"numpy"`` scores every candidate of a query at once in columns
    and sorts only the best of each pool, so its time does not depend on how
    the store's scores are spread (``pip install 'poolsplit[fast]'``; it
    ships with the poolsplit package, not with this file alone). ``"auto"``
    (the default) takes numpy when it is there. Both give the same answers,
    bit for bit.
    """

    def __init__(
        self,
        entries: Iterable[Mapping[str, Any]] = (),
        *,
        scorer: Scorer = default_scorer,
        token_counter: TokenCounter = default_token_counter,
        is_active: ActivityTest = default_is_active,
        partition_key: Optional[str] = None,
        engine: str = "auto",
    ) -> None:
        for name, fn in (("scorer", scorer), ("token_counter", token_counter),
                         ("is_active", is_active)):
            if not callable(fn):
                raise TypeError(f"{name} must be callable, got {type(fn).__name__}")
        if partition_key is not None and not isinstance(partition_key, str):
            raise TypeError(f"partition_key must be a str or None, got {partition_key!r}")
        #: The engine that indexes and walks the store: "python" or "numpy".
        self.engine = _engine_name(engine)
        self._engine = _ENGINES[self.engine]
        self.scorer = scorer
        options = _options_of(scorer)
        self.words: Optional[WordReader] = options.words if options is not None else None
        self.token_counter = token_counter
        self.is_active = is_active
        self.partition_key = partition_key
        self._lock = threading.Lock()
        self._slots: List[Mapping[str, Any]] = []
        self.rebuild(entries)

    # invariants:
    # 1) _slots holds every entry ever written since the last rebuild, in
    #    write order; a deleted one is _DELETED there, and its position is in
    #    _gaps (sorted; a delete puts a new list there, as a query's positions
    #    may read the old one after the lock is released). The live entries,
    #    in order, are the store's entries.
    # 2) Each part (one per partition value; one in all when unpartitioned)
    #    is an _Index over its entries in slot order, with slots[n] the slot
    #    of its n-th entry (None for the one part: the n-th slot); a deleted
    #    entry is _DELETED in its part too. A part's slots are only ever
    #    appended to, never changed in the middle (positions read them late).
    # 3) _by_id maps each hashable id held by one entry to its slot, and
    #    _shared_ids each id held by several to their slots.
    # 4) _views maps at most _VIEW_KEYS filter keys, least recently queried
    #    first, to a _View. In the view of key k, members[v] lists ascending
    #    the live slots whose entry holds k with a hashable value that a dict
    #    files under v, and members[_ODD] those holding an unhashable value;
    #    an entry lacking k is in no list, and no list is empty. parts[v],
    #    when built, is a part as in 2) whose live slots are members[v]: the
    #    index of members[v] at its build, kept since (an add appends, an
    #    upsert in place replaces, a delete leaves _DELETED). A write that
    #    would put a slot in the middle of a built part's slots drops that
    #    part instead (it is built again, from members, when next queried),
    #    and a view that holds _ODD has no parts at all.

    @property
    def entries(self) -> List[Mapping[str, Any]]:
        """The stored entries, in the order they were added (a new list)."""
        with self._lock:
            return [entry for entry in self._slots if entry is not _DELETED]

    def __len__(self) -> int:
        return len(self._slots) - len(self._gaps)

    def rebuild(self, entries: Optional[Iterable[Mapping[str, Any]]] = None) -> None:
        """Prepare again from ``entries`` (default: the stored ones)."""
        listed = _check_entries(self.entries if entries is None else entries)
        key = self.partition_key
        parts: Dict[Any, _Part] = {}
        if key is None:
            part = parts[_WHOLE] = _Part(self._engine, self.token_counter, self.is_active, None,
                                         self.words)
            part.index.build(list(listed))
        else:
            members: Dict[Any, List[Mapping[str, Any]]] = {}
            for slot, entry in enumerate(listed):
                value = _partition_of(entry, key, slot)
                if value not in parts:
                    parts[value] = _Part(self._engine, self.token_counter, self.is_active,
                                         _positions(), self.words)
                    members[value] = []
                cast(MutableSequence[int], parts[value].slots).append(slot)
                members[value].append(entry)
            for value, part in parts.items():
                part.index.build(members[value])
        gaps: List[int] = []
        by_id: Dict[Any, int] = {}
        shared_ids: Dict[Any, List[int]] = {}
        for slot, entry in enumerate(listed):
            _file_id(by_id, shared_ids, entry.get("id"), slot)
        views: Dict[str, _View] = {}  # every view is made again when next queried
        with self._lock:
            self._slots, self._gaps, self._parts = listed, gaps, parts
            self._by_id, self._shared_ids, self._views = by_id, shared_ids, views

    def add(self, entry: Mapping[str, Any]) -> None:
        """Add one entry at the end, without a rebuild; it is never mutated."""
        with self._lock:
            self._check_new(entry)
            self._append(entry)

    def upsert(self, entry: Mapping[str, Any]) -> None:
        """Replace the stored entry with this entry's ``id`` in its place, or add it.

        >>> store = PreparedStore([{"id": "a", "content": "old"}, {"id": "b"}])
        >>> store.upsert({"id": "a", "content": "new"})
        >>> [(e["id"], e.get("content")) for e in store.entries]
        [('a', 'new'), ('b', None)]

        Raises ValueError for an entry without an ``id`` (use :meth:`add`),
        for an ``id`` that several stored entries hold, and for a
        replacement that would move the entry to another partition.
        """
        with self._lock:
            self._check_new(entry)
            slot = self._slot_of(entry.get("id"), "upsert", entry_without_id=True)
            if slot is None:
                self._append(entry)
                return
            part, n = self._locate(slot)
            if self.partition_key is not None:
                old = _partition_of(self._slots[slot], self.partition_key, slot)
                new = _partition_of(entry, self.partition_key, slot)
                if old != new:
                    raise ValueError(
                        f"{_label(entry, slot)}: upsert cannot move an entry to another"
                        f" partition ({self.partition_key}={old!r} to {new!r});"
                        f" delete it, then add the new one"
                    )
            part.index.replace(n, entry)
            replaced, self._slots[slot] = self._slots[slot], entry
            self._keep_views(slot, replaced, entry)

    def delete(self, entry_id: Any) -> None:
        """Remove the stored entry with this ``id``, without a rebuild.

        Raises KeyError when no stored entry has the id, ValueError when
        several do.
        """
        with self._lock:
            slot = self._slot_of(entry_id, "delete")
            if slot is None:
                raise KeyError(f"no stored entry has id={entry_id!r}")
            part, n = self._locate(slot)
            part.index.remove(n)
            deleted, self._slots[slot] = self._slots[slot], _DELETED
            self._gaps = gaps = self._gaps[:]  # a new list (invariant 1)
            bisect.insort(gaps, slot)
            del self._by_id[entry_id]  # a shared id is refused before this
            self._keep_views(slot, deleted, None)

    def get(self, entry_id: Any, default: Optional[Mapping[str, Any]] = None,
            ) -> Optional[Mapping[str, Any]]:
        """The stored entry with this ``id``, or ``default`` when none has it.

        >>> store = PreparedStore([{"id": "a", "content": "old"}])
        >>> store.get("a")["content"], store.get("b")
        ('old', None)

        Raises ValueError when several stored entries hold the id (as upsert
        and delete do), TypeError for an unhashable id.
        """
        if entry_id is None:
            return default
        with self._lock:
            slot = self._slot_of(entry_id, "get")
            return default if slot is None else self._slots[slot]

    def retrieve_pools(
        self,
        pools: Sequence[Pool],
        context: Optional[Mapping[str, Any]] = None,
        *,
        scorer: Optional[Scorer] = None,
        now: Optional[datetime] = None,
        where: Optional[Mapping[str, Any]] = None,
        max_always_tokens: Optional[int] = None,
        always_pool: bool = False,
    ) -> Dict[str, List[Mapping[str, Any]]]:
        """What :func:`retrieve_pools` gives over the stored entries (``where`` as for decide).

        ``scorer=None`` (in every query method) is the store's own scorer;
        ``always_pool`` (in every query method) is as for :func:`retrieve_pools`,
        over the kept entries.
        """
        checked = _check_pools(pools)
        scorer = self.scorer if scorer is None else scorer
        walked = self._walk(_call_pools(checked, always_pool), context, scorer, now, [], where,
                            None, max_always_tokens)
        if walked is None:
            decided = self.decide(checked, context, scorer=scorer, now=now, where=where,
                                  max_always_tokens=max_always_tokens, always_pool=always_pool)
            return {name: [d.entry for d in picked] for name, picked in decided.items()}
        entries, filled, _, _ = walked
        get = entries.__getitem__
        return {name: [*map(get, got.always), *map(get, map(_POSITION, got.selected))]
                for name, got in filled.items()}

    def explain_pools(
        self,
        pools: Sequence[Pool],
        context: Optional[Mapping[str, Any]] = None,
        *,
        scorer: Optional[Scorer] = None,
        now: Optional[datetime] = None,
        extra: Sequence[Mapping[str, Any]] = (),
        where: Optional[Mapping[str, Any]] = None,
        include: Optional[Callable[[Mapping[str, Any]], bool]] = None,
        max_always_tokens: Optional[int] = None,
        always_pool: bool = False,
    ) -> Explanation:
        """What :func:`explain_pools` gives over the stored entries (every entry is read).

        ``extra``, ``where`` and ``include`` are as for :meth:`decide`;
        entries they reject get no record at all (another tenant's entries
        are not even named). A Decision's ``index`` is its position among the
        stored entries followed by ``extra``.
        """
        checked = _check_pools(pools)
        scorer = self.scorer if scorer is None else scorer
        keep = _both(_matcher(where), include)
        entries = self._entries_with(_check_entries(extra))
        return self._stateless(entries, checked, context, scorer, now, keep, max_always_tokens,
                               always_pool)

    def decide(
        self,
        pools: Sequence[Pool],
        context: Optional[Mapping[str, Any]] = None,
        *,
        scorer: Optional[Scorer] = None,
        now: Optional[datetime] = None,
        extra: Sequence[Mapping[str, Any]] = (),
        where: Optional[Mapping[str, Any]] = None,
        include: Optional[Callable[[Mapping[str, Any]], bool]] = None,
        max_always_tokens: Optional[int] = None,
        always_pool: bool = False,
    ) -> Dict[str, List[Decision]]:
        """The loaded entries of each pool as Decisions (score, cost, rank), in load order.

        ``extra`` entries join this query only (e.g. a vector search's
        candidates), after the stored ones. ``where`` keeps only the entries
        that hold every one of its keys with an equal value, and ``include``
        only those it accepts -- always-scope ones too -- before pool-split
        runs (a tenant filter; an entry lacking a key does not match). On a
        partitioned store, a ``where`` naming the partition key walks that
        partition alone. The result equals ``explain_pools(...).loaded()``
        over the kept entries; a Decision's ``index`` is its position among
        the stored entries followed by ``extra``. ``max_always_tokens`` is as
        for :func:`retrieve_pools`, over the kept entries, and so is
        ``always_pool`` (an always-scope entry filtered out does not load).
        """
        checked = _check_pools(pools)
        scorer = self.scorer if scorer is None else scorer
        extra = _check_entries(extra)
        walked = self._walk(_call_pools(checked, always_pool), context, scorer, now, extra,
                            where, include, max_always_tokens)
        if walked is None:
            entries = self._entries_with(extra)
            keep = _both(_matcher(where), include)
            return self._stateless(entries, checked, context, scorer, now, keep,
                                   max_always_tokens, always_pool).loaded()
        chosen, filled, positions, cost = walked
        out: Dict[str, List[Decision]] = {}
        for name, got in filled.items():
            decided = [_loaded(chosen[i], at, "always", name, None, cost(i), rank)
                       for rank, (i, at) in enumerate(zip(got.always, positions(got.always)))]
            ranked = len(decided)
            selected = [p.position for p in got.selected]
            decided += [_loaded(chosen[i], at, "selected", name, p.score, p.cost, ranked + n)
                        for n, (i, at, p) in enumerate(zip(
                            selected, positions(selected), got.selected))]
            out[name] = decided
        return out

    def _walk(
        self,
        pools: List[Pool],
        context: Optional[Mapping[str, Any]],
        scorer: Scorer,
        now: Optional[datetime],
        extra: List[Mapping[str, Any]],
        where: Optional[Mapping[str, Any]],
        include: Optional[Callable[[Mapping[str, Any]], bool]],
        max_always_tokens: Optional[int],
    ) -> Optional[Tuple[Dict[int, Mapping[str, Any]], Dict[str, _Filled],
                        Callable[[List[int]], List[int]], Callable[[int], int]]]:
        """The prepared walk: the entries it indexed into, each pool's fill, positions and costs.

        ``positions`` maps a list of the walk's entry numbers to their
        positions among the live entries (then the extras).

        None when the walk cannot answer: a scorer other than the default
        score with this index's word reader, or a partitioned store queried
        with no filter a part serves (:meth:`_part_for`).
        """
        keep = _both(_matcher(where), include)
        options = _options_of(scorer)
        if options is None or not options._walks_with(self.words):
            return None
        with self._lock:  # a query never sees a write half done
            part = self._part_for(where)
            if part is None:
                return None
            index = part.index
            entries = index.entries + extra if extra else index.entries
            query = index.query(entries, context, now, keep, max_always_tokens, options)
            filled = query.run(pools)
            stored, live = len(index.entries), len(self)
            slots = part.slots
            gaps = self._gaps

            def position(n: int) -> int:  # among the live entries, then the extras
                if n >= stored:
                    return live + n - stored
                slot = n if slots is None else slots[n]
                return slot - bisect.bisect_left(gaps, slot)

            def positions(numbers: List[int]) -> List[int]:
                if slots is None and not gaps and not extra:  # a whole store, nothing deleted
                    return numbers
                return [position(n) for n in numbers]

            # The loaded entries and their costs, read under the lock: a write
            # after it replaces the index's list items in place.
            chosen = {i: entries[i] for got in filled.values()
                      for i in chain(got.always, map(_POSITION, got.selected))}
            costs = {i: query.cost(i) for i in chosen}
            return chosen, filled, positions, costs.__getitem__

    def _check_new(self, entry: Any) -> None:
        if not isinstance(entry, Mapping):
            raise TypeError(
                f"entry at index {len(self._slots)} must be a mapping (dict),"
                f" got {type(entry).__name__}"
            )

    def _append(self, entry: Mapping[str, Any]) -> None:
        slot = len(self._slots)
        if self.partition_key is None:
            part = self._parts[_WHOLE]
        else:
            value = _partition_of(entry, self.partition_key, slot)
            if value not in self._parts:
                self._parts[value] = _Part(self._engine, self.token_counter, self.is_active,
                                           _positions(), self.words)
            part = self._parts[value]
        part.index.insert(entry)  # reads (and may refuse) the entry before anything changes
        if part.slots is not None:
            part.slots.append(slot)
        self._slots.append(entry)
        _file_id(self._by_id, self._shared_ids, entry.get("id"), slot)
        self._keep_views(slot, None, entry)

    def _part_for(self, where: Optional[Mapping[str, Any]]) -> Optional[_Part]:
        """The part a query filtered by ``where`` walks (under the lock); None: no part serves.

        A ``where`` naming the partition key walks that partition; else one
        of its keys walks its view's part (:meth:`_view_part`); else an
        unpartitioned store walks its whole index. ``where`` itself still
        filters every entry the walk reads.
        """
        key = self.partition_key
        if key is not None and where is not None and key in where:
            value = where[key]
            part = self._parts.get(value) if _hashable(value) else None
            return part if part is not None else self._part_of([])
        part = self._view_part(where) if where else None
        if part is None and key is None:
            return self._parts[_WHOLE]
        return part

    def _view_part(self, where: Mapping[str, Any]) -> Optional[_Part]:
        """The part of ``where``'s value in the view of one of its keys; None: no view serves.

        Keys already viewed are tried first, then the others, each in
        ``where``'s order; a key is viewed when first tried. A view passes
        when an entry holds an unhashable value for its key, and so does a
        value more than half the entries hold on an unpartitioned store
        (its whole index, filtered, costs about what that half would, at
        most twice, and is not copied).
        """
        views = self._views
        keys = [key for key, value in where.items() if _hashable(value)]
        keys.sort(key=lambda key: key not in views)  # (a stable sort: where's order within)
        for key in keys:
            view = views.pop(key, None)
            if view is None:
                view = self._view_of(key)
                while len(views) >= _VIEW_KEYS:
                    del views[next(iter(views))]  # the least recently queried key
            views[key] = view  # the most recently queried key last
            if _ODD in view.members:
                continue
            members = view.members.get(where[key])
            if members is None:
                return self._part_of([])
            part = view.parts.get(where[key])
            if part is None:
                if self.partition_key is None and 2 * len(members) > len(self):
                    continue
                part = view.parts[where[key]] = self._part_of(members)
            return part
        return None

    def _view_of(self, key: str) -> _View:
        """The view of ``key``: the live entries' slots grouped by value, in one pass."""
        view = _View()
        members = view.members
        for slot, entry in enumerate(self._slots):
            value = _view_value(entry, key)  # (a deleted slot holds no key)
            if value is not _MISSING:
                if value not in members:
                    members[value] = _positions()
                members[value].append(slot)
        return view

    def _part_of(self, members: Sequence[int]) -> _Part:
        """A part indexing the entries of these live slots (ascending)."""
        part = _Part(self._engine, self.token_counter, self.is_active, _positions(members),
                     self.words)
        part.index.build([self._slots[slot] for slot in members])
        return part

    def _keep_views(self, slot: int, old: Optional[Mapping[str, Any]],
                    new: Optional[Mapping[str, Any]]) -> None:
        """Keep every view current (invariant 4) as ``slot`` changes from ``old`` to ``new``.

        None is no entry: ``old`` of an add, ``new`` of a delete.
        """
        for key, view in self._views.items():
            members, parts = view.members, view.parts
            before, after = _view_value(old, key), _view_value(new, key)
            group = members.get(before)  # None: the entry was in no group
            if group is not None and group is members.get(after):  # the same group: in place
                part = parts.get(before)
                if part is not None:
                    part.index.replace(_slot_at(part, slot), cast(Mapping[str, Any], new))
                continue
            if group is not None:  # out of its old group
                del group[bisect.bisect_left(group, slot)]
                part = parts.get(before)
                if not group:
                    del members[before]
                    parts.pop(before, None)
                elif part is not None and new is None:
                    part.index.remove(_slot_at(part, slot))
                elif part is not None:
                    del parts[before]  # (a part's slots never lose one: invariant 2)
            if after is not _MISSING:  # into its new group
                group = members.get(after)
                if group is None:
                    group = members[after] = _positions()
                bisect.insort(group, slot)
                part = parts.get(after)
                if part is not None:
                    held = cast(MutableSequence[int], part.slots)
                    if held and held[-1] > slot:
                        del parts[after]  # built again, in slot order, when next queried
                    else:
                        held.append(slot)
                        part.index.insert(cast(Mapping[str, Any], new))
            if _ODD in members:
                parts.clear()

    def _locate(self, slot: int) -> Tuple[_Part, int]:
        """The part that holds a stored slot, and the slot's position in it."""
        if self.partition_key is None:
            return self._parts[_WHOLE], slot
        part = self._parts[_partition_of(self._slots[slot], self.partition_key, slot)]
        return part, bisect.bisect_left(cast(MutableSequence[int], part.slots), slot)

    def _slot_of(self, entry_id: Any, verb: str, entry_without_id: bool = False) -> Optional[int]:
        if entry_id is None:
            raise ValueError(
                f"{verb} needs an entry with an 'id'" + (
                    "; add() takes entries without one" if entry_without_id else ", got None")
            )
        if not _hashable(entry_id):
            raise TypeError(f"{verb}: id must be hashable, got {entry_id!r}")
        slots = self._shared_ids.get(entry_id)
        if slots is not None:
            at = ", ".join(str(s - bisect.bisect_left(self._gaps, s)) for s in slots)
            raise ValueError(f"{verb}: id={entry_id!r} is held by {len(slots)} stored entries"
                             f" (at {at}); {verb} needs a unique id")
        return self._by_id.get(entry_id)

    def _entries_with(self, extra: List[Mapping[str, Any]]) -> List[Mapping[str, Any]]:
        """The stored entries then ``extra``, copied under the lock for a stateless pass.

        A copy, not the stored list: a write may land while the pass runs.
        """
        with self._lock:
            return [*(entry for entry in self._slots if entry is not _DELETED), *extra]

    def _stateless(
        self,
        entries: List[Mapping[str, Any]],
        pools: List[Pool],
        context: Optional[Mapping[str, Any]],
        scorer: Scorer,
        now: Optional[datetime],
        include: Optional[Callable[[Mapping[str, Any]], bool]],
        max_always_tokens: Optional[int],
        always_pool: bool = False,
    ) -> Explanation:
        """explain_pools over the kept entries, with indices into ``entries``."""
        kept = list(range(len(entries))) if include is None else [
            i for i, entry in enumerate(entries) if include(entry)]
        got = explain_pools([entries[i] for i in kept], pools, context, scorer=scorer,
                            token_counter=self.token_counter, is_active=self.is_active,
                            now=now, max_always_tokens=max_always_tokens,
                            always_pool=always_pool)
        if include is None:
            return got
        return Explanation(
            tuple(dataclasses.replace(d, index=kept[d.index]) for d in got.decisions),
            got.ledgers,
        )


# A word or tag list read _SPLIT_AFTER entries deep is split by message factor, when
# its kind's lists of the message's words hold at most _SPLIT_RATIO of its entries:
# counting them costs little then, and a Python pass over many sharing entries
# would cost more than the loose bound it tightens (long texts share many words).
_SPLIT_RATIO = 0.25
_SPLIT_AFTER = 2

#: The engines a PreparedStore can index and walk with, by name. "python" is
#: this file's; the poolsplit package adds "numpy" when numpy is installed
#: (``pip install 'poolsplit[fast]'``: poolsplit_core/_vectorized.py).
_ENGINES: Dict[str, Callable[..., _Index]] = {}
_AUTO: Optional[str] = None  # what "auto" means when set (the test suite runs each engine)


def _engine_name(engine: Any) -> str:
    """The engine ``engine`` names: "auto" is the fastest one installed."""
    if engine == "auto":
        if _AUTO is not None:
            return _AUTO
        return "numpy" if "numpy" in _ENGINES else "python"
    if engine in _ENGINES:
        return cast(str, engine)
    if engine == "numpy":
        raise ImportError("engine='numpy' needs numpy and the poolsplit package:"
                          " pip install 'poolsplit[fast]'")
    raise ValueError(f"engine must be 'auto', 'python' or 'numpy', got {engine!r}")


_UNDATED = -(1 << 62)  # sorts before every real time key: undated counts as newest
#: What a deleted entry's position holds: no list of an index names it.
_DELETED: Mapping[str, Any] = MappingProxyType({})
_WHOLE = object()  # the one part of an unpartitioned store


def _positions(positions: Iterable[int] = ()) -> MutableSequence[int]:
    """A list of entry positions, compact (8 bytes each), that changes in place.

    Made from a packed list (a ``bytearray``, see :func:`_opened`), it holds
    its 8-byte positions: iterating the packed list itself gives its bytes.
    """
    return array("q", positions)


def _opened(lists: Dict[str, Sequence[int]], item: str) -> MutableSequence[int]:
    """The list of ``item`` in a kind's ``lists``, opened: an array (an empty one if none).

    A build packs each word and tag list into a ``bytearray`` (8 bytes a
    position): a store holds hundreds of thousands of them, which the
    garbage collector would scan on every full collection if they were
    containers it tracks (lists, or ``array`` since Python 3.10) and which
    would make the build itself trigger those collections. A list is
    opened, once, when a query first reads it or a change first touches it.
    """
    postings = lists.get(item)
    if type(postings) is not array:
        postings = lists[item] = _positions(postings or ())
    return cast(MutableSequence[int], postings)


_FIRST = itemgetter(0)
_PACKED = sys.byteorder  # a position packed as array('q') holds it

_MISSING = object()  # the partition of entries without the partition key


class _Part:
    """One partition of a PreparedStore: an index and the store slot of each of its entries."""

    __slots__ = ("index", "slots")

    def __init__(self, engine: Callable[..., _Index], token_counter: TokenCounter,
                 is_active: ActivityTest, slots: Optional[MutableSequence[int]],
                 words: Optional[WordReader]) -> None:
        self.index = engine(token_counter, is_active, words)
        self.slots = slots  # ascending; None: the n-th entry is in the n-th slot


def _slot_at(part: _Part, slot: int) -> int:
    """The position of a store slot in a part that holds it."""
    return bisect.bisect_left(cast(MutableSequence[int], part.slots), slot)


_VIEW_KEYS = 4  # a PreparedStore keeps the views of this many filter keys at most
_ODD = object()  # a view's group of the entries whose value is unhashable


class _View:
    """A PreparedStore's entries grouped by their value of one filter key (invariant 4)."""

    __slots__ = ("members", "parts")

    def __init__(self) -> None:
        self.members: Dict[Any, MutableSequence[int]] = {}  # value -> its live slots, ascending
        self.parts: Dict[Any, _Part] = {}  # value -> the part of its members, once queried


def _view_value(entry: Optional[Mapping[str, Any]], key: str) -> Any:
    """The group of ``entry`` in the view of ``key``: its value, _ODD, or _MISSING (no group).

    An entry lacking the key is in no group, as a ``where`` on it keeps no
    such entry; neither is "no entry" (None).
    """
    if entry is None or key not in entry:
        return _MISSING
    value = entry[key]
    return value if _hashable(value) else _ODD


class _Facts:
    """What the prepared path keeps of one active entry (:data:`_INACTIVE` for the rest)."""

    __slots__ = ("active", "always", "base", "cost", "created_us", "group", "sort_key", "tags",
                 "type", "words")

    def __init__(self, entry: Mapping[str, Any], i: int, token_counter: TokenCounter) -> None:
        self.active = True
        self.type: Any = entry.get("type", "note")
        self.always = entry.get("scope") == "always"
        self.cost = _cost(entry, i, token_counter)
        self.group: Optional[Tuple[Any, float, Any]] = None  # None: scored exactly
        self.base = 0.0
        self.created_us: Optional[int] = None
        self.sort_key: Tuple[str, str] = ("", "")
        self.tags: Tuple[str, ...] = ()
        self.words: Collection[str] = ()  # W(content), filled in by _Index.facts_of
        if self.always:
            return
        self.sort_key = (_sort_text(entry, "created"), _sort_text(entry, "id"))
        self.created_us = _time_us(entry.get("created"))
        # What the default scorer would refuse is refused now, naming the entry
        # (the label is built only then: a build reads every entry).
        try:
            base = _base_priority(entry, "")
            tags = tuple(_tag_set(entry.get("tags"), ""))
        except (TypeError, ValueError):
            base, tags = math.nan, ()
        if base != base:  # refused above: check again, this time naming the entry
            label = _label(entry, i)
            base = _base_priority(entry, label)
            tags = tuple(_tag_set(entry.get("tags"), f"{label}: tags"))
        project = entry.get("project")
        if not _hashable((self.type, project)) or entry.get("similarity") is not None:
            return  # irregular: scored exactly (a make_scorer option may weigh its similarity)
        # Only positive, comfortably finite priorities have a known order
        # (newest first) inside their group; the rest are scored exactly.
        if 0 < base < 1e300:
            self.group = (self.type, base, project)
            self.base, self.tags = base, tags

    @property
    def time_key(self) -> int:
        return _UNDATED if self.created_us is None else -self.created_us


#: The facts of every inactive entry: nothing loads it.
_INACTIVE = _Facts.__new__(_Facts)
_INACTIVE.active, _INACTIVE.always, _INACTIVE.type, _INACTIVE.cost = False, False, None, 0
_INACTIVE.group, _INACTIVE.base, _INACTIVE.created_us = None, 0.0, None
_INACTIVE.sort_key, _INACTIVE.tags, _INACTIVE.words = ("", ""), (), ()


class _Index:
    """The prepared data of a PreparedStore."""

    def __init__(self, token_counter: TokenCounter, is_active: ActivityTest,
                 words: Optional[WordReader] = None) -> None:
        self.token_counter, self.is_active = token_counter, is_active
        self.words = words  # the word reader; None: W(text)
        self.entries: List[Mapping[str, Any]] = []
        self.facts: List[_Facts] = []
        self.always: Dict[Any, List[int]] = {}  # type -> always-scope entries, store order
        self.always_unhashable: List[Tuple[Any, List[int]]] = []  # (type, [entry]) pairs
        self.irregular: List[int] = []
        self.groups: Dict[Tuple[Any, float, Any], MutableSequence[int]] = {}  # newest first
        self.min_cost: Dict[Tuple[Any, float, Any], List[int]] = {}  # of group[j:]
        # (type, project) -> word or tag -> entries, newest first
        self.by_word: Dict[Tuple[Any, Any], Dict[str, Sequence[int]]] = {}
        self.by_tag: Dict[Tuple[Any, Any], Dict[str, Sequence[int]]] = {}
        self.max_base: Dict[Tuple[Any, Any], float] = {}  # highest regular priority
        self.kind_size: Dict[Tuple[Any, Any], int] = defaultdict(int)  # regular entries
        # (is a tag, kind, word or tag) -> suffix-minimum cost of that list, made when a
        # query first reads the list and dropped when the list changes.
        self.list_low: Dict[Tuple[bool, Tuple[Any, Any], str], List[int]] = {}
        self.vocabulary: Dict[str, str] = {}  # one string object per distinct word
        # Pool types -> its groups and (type, project) kinds; cleared when either set grows.
        self.layout: Dict[Any, Tuple[List[Tuple[Any, float, Any]], List[Tuple[Any, Any]]]] = {}
        # (pool types, query project) -> group streams and ceilings; cleared with the layout.
        self.streams_cache: Dict[Any, Tuple[List[_Stream], List[float]]] = {}

    def facts_of(self, entries: Sequence[Mapping[str, Any]], start: int) -> List[_Facts]:
        """The facts of ``entries`` (store indices from ``start``); words are read in bulk."""
        facts = [_Facts(entry, i, self.token_counter) if self.is_active(entry) else _INACTIVE
                 for i, entry in enumerate(entries, start)]
        reader = self.words
        if reader is None:
            # (Positions, not (facts, entry) pairs: tuples that hold objects stay
            # in the collector's lists, and a long build would promote them all.)
            regular = [n for n, f in enumerate(facts) if f.group is not None]
            texts = [_content(entries[n]) for n in regular]
            for n, words in zip(regular, _word_sets(texts)):
                facts[n].words = tuple(words)
            return facts
        for i, (f, entry) in enumerate(zip(facts, entries), start):
            if f.group is not None:
                f.words = _entry_words(reader, _content(entry), entry, i)
        return facts

    def build(self, entries: List[Mapping[str, Any]]) -> None:
        """Index ``entries`` into this empty index.

        Regular entries are indexed newest first, so every group, word and
        tag list comes out in order; and one (type, project) kind after
        another, whose word and tag lists are packed (:func:`_opened`).
        """
        self.entries = entries
        self.facts = every = self.facts_of(entries, 0)
        kinds: Dict[Tuple[Any, Any], int] = {}
        order = []
        for i, facts in enumerate(every):
            self.register(i, facts)
            if facts.group is not None:
                number = kinds.setdefault((facts.type, facts.group[2]), len(kinds))
                order.append((number, facts.time_key, i))
        order.sort()
        for _, run in groupby(order, _FIRST):
            members = [i for _, _, i in run]
            for i in members:
                kind = self.file_group(i, every[i])
            words: DefaultDict[str, bytearray] = defaultdict(bytearray)
            tags: DefaultDict[str, bytearray] = defaultdict(bytearray)
            for i in members:
                facts = every[i]
                code = i.to_bytes(8, _PACKED)
                for item in facts.words:
                    words[item] += code
                for item in facts.tags:
                    tags[item] += code
            self.by_word[kind], self.by_tag[kind] = dict(words), dict(tags)
        self.min_cost = {g: self.suffix_min(members) for g, members in self.groups.items()}

    def register(self, i: int, facts: _Facts) -> None:
        """File an always-scope or irregular entry (kept in store order)."""
        if facts.active and facts.always:
            if _hashable(facts.type):
                bisect.insort(self.always.setdefault(facts.type, []), i)
            else:  # a type no dict can key (a list): the scorer still takes it
                pairs = self.always_unhashable  # rare: kept in store order by hand
                pairs.insert(bisect.bisect([members[0] for _, members in pairs], i),
                             (facts.type, [i]))
        elif facts.active and facts.group is None:
            bisect.insort(self.irregular, i)

    def file(self, i: int, facts: _Facts) -> None:
        """Append a regular entry to its group and to its kind's word and tag lists."""
        kind = self.file_group(i, facts)
        for by, items in ((self.by_word, facts.words), (self.by_tag, facts.tags)):
            lists = by.setdefault(kind, {})
            for item in items:
                _opened(lists, item).append(i)

    def file_group(self, i: int, facts: _Facts) -> Tuple[Any, Any]:
        """Append a regular entry to its group; its (type, project) kind."""
        group = cast(Tuple[Any, float, Any], facts.group)
        vocabulary = self.vocabulary.setdefault
        facts.words = tuple(map(vocabulary, facts.words, facts.words))
        if group not in self.groups:
            self.groups[group] = _positions()
            self.layout.clear()
            self.streams_cache.clear()
        self.groups[group].append(i)
        kind = (facts.type, group[2])
        self.kind_size[kind] += 1
        if facts.base > self.max_base.get(kind, 0.0):
            if kind not in self.max_base:
                self.layout.clear()
                self.streams_cache.clear()
            self.max_base[kind] = facts.base
        return kind

    def time_key(self, i: int) -> int:
        return self.facts[i].time_key

    def query(
        self,
        entries: List[Mapping[str, Any]],
        context: Optional[Mapping[str, Any]],
        now: Optional[datetime],
        include: Optional[Callable[[Mapping[str, Any]], bool]],
        max_always_tokens: Optional[int],
        options: Optional[ConfiguredScorer],
    ) -> _PreparedQuery:
        """One query over this index (and ``entries`` past its own: the query's extras)."""
        return _PreparedQuery(self, entries, context, now, include, max_always_tokens, options)

    def layout_for(self, pool: Pool) -> Tuple[List[Tuple[Any, float, Any]],
                                              List[Tuple[Any, Any]]]:
        """The groups and (type, project) kinds a pool draws from (cached)."""
        got = self.layout.get(pool.types)
        if got is None:
            got = ([g for g in self.groups if pool.accepts(g[0])],
                   [kind for kind in self.max_base if pool.accepts(kind[0])])
            self.layout[pool.types] = got
        return got

    def group_streams(self, pool: Pool, query: _Query) -> Tuple[List[_Stream], List[float]]:
        """The pool's group streams and their ceilings, which depend on the query's project only.

        Cached per (pool types, project) beside the layout, and cleared with
        it: a group's members change in place, its key never does.
        """
        cache_key = (pool.types, query.project) if _hashable(query.project) else None
        got = self.streams_cache.get(cache_key) if cache_key is not None else None
        if got is None:
            no_tag, no_word = _tag_factor((), query), _message_factor(0, query)  # both 1.0
            top_recency = _recency(None, 0)  # recency is at most this (age 0)
            streams, ceilings = [], []
            for group in self.layout_for(pool)[0]:
                project = _project_factor(group[2], query)
                streams.append(_new(_Stream, (self.groups[group], group, self.min_cost[group],
                                              no_tag, project, no_word)))
                ceilings.append(_score(group[1], top_recency, no_tag, project, no_word))
            got = (streams, ceilings)
            if cache_key is not None:
                if len(self.streams_cache) > 256:  # projects are the users': keep it small
                    self.streams_cache.clear()
                self.streams_cache[cache_key] = got
        return got

    def suffix_min(self, members: Sequence[int]) -> List[int]:
        """The lowest cost of ``members[j:]`` for each ``j``."""
        out = list(accumulate(map(_COST, map(self.facts.__getitem__, reversed(members))), min))
        out.reverse()
        return out

    def list_min(self, is_tag: bool, kind: Tuple[Any, Any], item: str) -> List[int]:
        """The suffix-minimum cost of a word or tag list (made once, until the list changes)."""
        key = (is_tag, kind, item)
        low = self.list_low.get(key)
        if low is None:
            members = _opened((self.by_tag if is_tag else self.by_word)[kind], item)
            low = self.list_low[key] = self.suffix_min(members)
        return low

    def insert(self, entry: Mapping[str, Any]) -> None:
        """Add one entry at the end, keeping every list in order."""
        i = len(self.entries)
        facts = self.facts_of([entry], i)[0]  # may refuse the entry: nothing changed yet
        self.entries.append(entry)
        self.facts.append(facts)
        self.place(i)

    def replace(self, i: int, entry: Mapping[str, Any]) -> None:
        """Put ``entry`` at position ``i`` in place of the entry there."""
        facts = self.facts_of([entry], i)[0]  # may refuse the entry: nothing changed yet
        self.unplace(i)
        self.entries[i], self.facts[i] = entry, facts
        self.place(i)

    def remove(self, i: int) -> None:
        """Delete the entry at position ``i``; the position stays, holding nothing."""
        self.unplace(i)
        self.entries[i], self.facts[i] = _DELETED, _INACTIVE

    def place(self, i: int) -> None:
        """File entry ``i`` into every list it belongs to, each kept in order."""
        facts = self.facts[i]
        self.register(i, facts)
        if facts.active and not facts.always and facts.group is not None:
            self.place_regular(i, facts)

    def place_regular(self, i: int, facts: _Facts) -> None:
        """File a regular entry into its group and its kind's word and tag lists, in order."""
        self.file(i, facts)  # appends at the end of each list; put it in its place
        group = cast(Tuple[Any, float, Any], facts.group)
        key = self.time_key
        members = self.groups[group]
        members.pop()
        at = _insort(members, i, key)
        low = self.min_cost.setdefault(group, [])
        low.insert(at, min(facts.cost, low[at]) if at < len(low) else facts.cost)
        j = at - 1
        while j >= 0 and low[j] > facts.cost:
            low[j] = facts.cost
            j -= 1
        kind = (facts.type, group[2])
        drop = self.list_low.pop
        for is_tag, lists, items in ((False, self.by_word[kind], facts.words),
                                     (True, self.by_tag[kind], facts.tags)):
            for item in items:
                postings = _opened(lists, item)
                postings.pop()
                _insort(postings, i, key)
                drop((is_tag, kind, item), None)

    def unplace(self, i: int) -> None:
        """Take entry ``i`` out of every list it is in (the inverse of :meth:`place`).

        The kind's top priority stays as it was: a bound may only be loose,
        never low.
        """
        facts = self.facts[i]
        if not facts.active:
            return
        if facts.always:
            if _hashable(facts.type):
                self.always[facts.type].remove(i)
            else:
                self.always_unhashable.remove(next(
                    pair for pair in self.always_unhashable if pair[1][0] == i))
            return
        if facts.group is None:
            self.irregular.remove(i)
            return
        self.unplace_regular(i, facts)

    def unplace_regular(self, i: int, facts: _Facts) -> None:
        """Take a regular entry out of its group and its kind's word and tag lists."""
        key = self.time_key
        members = self.groups[cast(Tuple[Any, float, Any], facts.group)]
        self.kind_size[(facts.type, cast(Tuple[Any, float, Any], facts.group)[2])] -= 1
        at = _locate(members, i, key)
        del members[at]
        low = self.min_cost[cast(Tuple[Any, float, Any], facts.group)]
        del low[at]
        every = self.facts
        for j in range(at - 1, -1, -1):  # the suffix minimums before it may rise
            was = low[j]
            low[j] = min(every[members[j]].cost, low[j + 1]) if j + 1 < len(low) else (
                every[members[j]].cost)
            if low[j] == was:
                break
        kind = (facts.type, cast(Tuple[Any, float, Any], facts.group)[2])
        drop = self.list_low.pop
        for is_tag, lists, items in ((False, self.by_word[kind], facts.words),
                                     (True, self.by_tag[kind], facts.tags)):
            for item in items:
                postings = _opened(lists, item)
                del postings[_locate(postings, i, key)]
                drop((is_tag, kind, item), None)


_ENGINES["python"] = _Index


def _locate(members: Sequence[int], i: int, key: Callable[[int], int]) -> int:
    """Where ``i`` stands in ``members`` (sorted by ``key``, equals in any order)."""
    target, lo, hi = key(i), 0, len(members)
    while lo < hi:
        mid = (lo + hi) // 2
        if key(members[mid]) < target:
            lo = mid + 1
        else:
            hi = mid
    while members[lo] != i:
        lo += 1
    return lo


def _insort(members: MutableSequence[int], i: int, key: Callable[[int], int]) -> int:
    """Insert ``i`` into ``members`` (sorted by ``key``) after its equals; return where."""
    target, lo, hi = key(i), 0, len(members)
    while lo < hi:
        mid = (lo + hi) // 2
        if key(members[mid]) <= target:
            lo = mid + 1
        else:
            hi = mid
    members.insert(lo, i)
    return lo


class _Pick(NamedTuple):
    """One contextual entry a prepared query selected."""

    position: int  # in the store, then this query's extras
    score: float
    cost: int


class _Filled(NamedTuple):
    """One pool's fill in a prepared query: its always tier, then what it selected, in order."""

    always: List[int]  # positions, in store order
    selected: List[_Pick]


_POSITION = itemgetter(0)  # a _Pick's position
_COST = attrgetter("cost")  # a _Facts' cost


class _Stream(NamedTuple):
    """Entries newest first that one heap marker stands for, and how to bound them.

    A group stream (type, priority, project) owes entries that share no tag
    and no word with the query: its tag and message factors are 1. A word or
    tag stream of a (type, project) kind owes entries that may share both: it
    carries the kind's top priority and the largest tag and message factors.
    """

    members: Sequence[int]
    group: Tuple[Any, float, Any]  # (type, base priority or the kind's top one, project)
    low: Sequence[int]  # the lowest cost of members[j:], for each j
    tags: float  # the largest tag factor an entry of this stream can have
    project: float  # the project factor of every entry of this stream
    message: float  # the largest message factor an entry of this stream can have


class _Lists(NamedTuple):
    """The word or the tag lists of one (type, project) kind that a query reads.

    They share one bound before they are read, so they start together, when
    the walk reaches that bound: a list never started costs nothing but its
    name here (a query names hundreds of lists and reads a few).
    """

    is_tag: bool
    kind: Tuple[Any, Any]
    lists: Dict[str, Sequence[int]]  # the kind's lists, by word or tag (see _opened)
    items: Collection[str]  # the query's words or tags among them
    group: Tuple[Any, float, Any]  # (type, the kind's top priority, project)
    tags: float  # the largest tag factor of an entry in these lists
    project: float
    message: float  # the largest message factor of an entry in these lists


class _PreparedQuery:
    """One default-scorer query over a prepared index: a best-first walk with bounds.

    The heap holds :class:`_Candidate` items (entries scored exactly) and
    :class:`_Marker` items (bounds standing for entries not yet read).

    # invariants:
    1) A stream's marker bound is >= the score of every entry the stream still
       owes: it is :func:`_score` of the same factor functions, each at its
       largest for what is left (recency of the stream's next entry, as
       streams run newest first and recency only falls with age).
    2) Every unread entry that can still load is owed by at least one stream
       with a marker in the heap, or by the _START marker, whose bound (recency
       at most 1) is >= every not-yet-started stream's (a group stream, or a
       kind's word or tag lists, which start together: :class:`_Lists`).
    3) A marker sorts before every candidate of an equal score, so a candidate
       pops only when nothing unread can beat it: the fill order is the
       stateless one, ``(-score, created, id, index)``.
    4) A stream skips an entry only when it can never load in this pool: taken
       by an earlier pool, filtered out by ``include``, already seen, or
       costing more than the tokens left (tokens only decrease); a stream's
       suffix-minimum cost skips its whole tail at once.
    5) Always-scope entries are never in a stream: :class:`_AlwaysTier` loads
       them first, outside the budget.
    6) A word or tag list that is split stops; its parts, which hold every
       unread entry it owed, newest first, take its place under their own
       (lower or equal) bounds, so 1) and 2) hold on.
    """

    def __init__(
        self,
        index: _Index,
        entries: List[Mapping[str, Any]],
        context: Optional[Mapping[str, Any]],
        now: Optional[datetime],
        include: Optional[Callable[[Mapping[str, Any]], bool]],
        max_always_tokens: Optional[int],
        options: Optional[ConfiguredScorer] = None,
    ) -> None:
        self.index, self.entries, self.include = index, entries, include
        self.query = _Query.from_context(context, index.words, options)
        self.now = _utc_now(now)
        self.now_us = _epoch_us(self.now)
        self.facts = index.facts
        stored = len(index.entries)
        extras = range(stored, len(entries))
        if extras:  # this query's extras
            self.facts = index.facts + index.facts_of(entries[stored:], stored)
        facts = self.facts
        self.exact = list(index.irregular) + [
            i for i in extras if facts[i].active and not facts[i].always]
        by_type: Iterable[Tuple[Any, Sequence[int]]] = index.always.items()
        extra_always = [(facts[i].type, (i,)) for i in extras if facts[i].always]
        if extra_always or index.always_unhashable:
            by_type = [*by_type, *index.always_unhashable, *extra_always]
        self.always = _AlwaysTier(by_type, entries, lambda i: facts[i].cost, max_always_tokens)
        self.scores: Dict[int, float] = {}
        # The message factor of each count of shared words (for the split lists).
        query = self.query
        self.message_factors = [_message_factor(k, query) for k in range(len(query.words) + 1)]
        # Per (type, project) kind, each entry's count of shared message words
        # (made when the kind is first read), and the fill's whole lists.
        self.shared: Dict[Tuple[Any, Any], Tuple[Optional[Mapping[int, int]],
                                                 AbstractSet[int]]] = {}
        self.unsplit: Dict[int, Tuple[bool, Tuple[Any, Any]]] = {}  # (is a tag, kind)
        # Per stream, the recency of the entry its marker stands on (read next).
        self.next_recency: Dict[int, float] = {}

    def run(self, pools: List[Pool]) -> Dict[str, _Filled]:
        taken: Set[int] = set()
        out: Dict[str, _Filled] = {}
        get = self.entries.__getitem__
        for pool in pools:
            filled = self.fill(pool, taken)  # (its always tier is no later pool's: _AlwaysTier)
            taken.update(map(id, map(get, map(_POSITION, filled.selected))))
            if _shown(pool, len(filled.always)):
                out[pool.name] = filled
        self.always.check_ceiling()
        return out

    def cost(self, i: int) -> int:
        return self.facts[i].cost

    def usable(self, i: int, pool: Pool, taken: AbstractSet[int]) -> bool:
        facts = self.facts[i]
        entry = self.entries[i]
        return (facts.active and pool.accepts(facts.type) and id(entry) not in taken
                and (self.include is None or bool(self.include(entry))))

    def score(self, i: int, recency: Optional[float] = None) -> float:
        """Entry ``i``'s score; ``recency``, when given, is its :func:`_recency_of` (the walk's)."""
        if i not in self.scores:
            facts = self.facts[i]
            group = facts.group
            if group is not None:
                # Regular entries: 0 < base < 1e300 keeps the product finite.
                query = self.query
                shared = len(query.words.intersection(facts.words)) if query.words else 0
                if recency is None:
                    recency = _recency_of(query, facts.type, facts.created_us, self.now_us)
                # (A regular entry has no similarity: its similarity factor is 1.0.)
                self.scores[i] = _entry_score(facts.base, recency, facts.tags, group[2],
                                              self.message_factors[shared], query)
            else:
                entry = self.entries[i]
                label = _label(entry, i)
                value = _default_score(entry, self.query, self.now, label)
                self.scores[i] = _check_score(value, label)
        return self.scores[i]

    def open(self, pool: Pool, taken: AbstractSet[int]) -> Tuple[List[int], List[_Candidate]]:
        """A pool's start, in every engine: its always tier loaded, its exactly-scored candidates.

        The candidates (irregular entries and this query's extras) are
        scored now; an empty list when the pool has no room at all.
        """
        include = self.include
        always = self.always.load(pool, None if include is None else (
            lambda i: bool(include(self.entries[i]))))
        if pool.max_entries == 0 or pool.max_tokens == 0:
            return always, []
        return always, [self.key(i) for i in self.exact if self.usable(i, pool, taken)]

    def fill(self, pool: Pool, taken: AbstractSet[int]) -> _Filled:
        facts = self.facts
        always, exact = self.open(pool, taken)
        heap: List[Any] = exact  # candidates, and markers beside them
        picked: List[_Pick] = []
        tokens_left, slots_left = pool.max_tokens, pool.max_entries
        if slots_left == 0 or tokens_left == 0:
            return _Filled(always, picked)
        streams, starts, ceilings = self.streams(pool)
        order = sorted(range(len(starts)), key=ceilings.__getitem__, reverse=True)
        if order:
            heap.append(_new(_Marker, (-ceilings[order[0]], "", "", _START, 0)))
        cursor = [0] * len(streams)
        seen: Set[int] = set()
        heapq.heapify(heap)
        push, pop, push_pop = heapq.heappush, heapq.heappop, heapq.heappushpop
        held: Optional[_Marker] = None  # a marker on its way into the heap
        while slots_left > 0 and tokens_left > 0:
            # Pushing the held marker and popping the least item, in one step
            # (the marker itself, untouched, when it is still the least).
            if held is not None:
                item, held = push_pop(heap, held), None
            elif heap:
                item = pop(heap)
            else:
                break
            if type(item) is _Marker:
                if item.kind == _START:  # start the next streams, and stand for the rest
                    at = item.ref
                    what = starts[order[at]]
                    for s in ((what,) if isinstance(what, int) else
                              self.start(what, streams, cursor)):
                        marker = self.marker(streams, cursor, s, taken, tokens_left, seen)
                        if marker is not None:
                            push(heap, marker)
                    if at + 1 < len(order):
                        held = _new(_Marker, (-ceilings[order[at + 1]], "", "", _START, at + 1))
                    continue
                s = item.ref  # a started stream: visit its next entry
                if cursor[s] >= _SPLIT_AFTER and s in self.unsplit:
                    parts = self.split(streams, s, cursor)
                    if parts is not None:  # the parts owe the rest of it
                        for part in parts:
                            marker = self.marker(streams, cursor, part, taken, tokens_left,
                                                 seen)
                            if marker is not None:
                                push(heap, marker)
                        continue
                i = streams[s].members[cursor[s]]
                cursor[s] += 1
                if i not in seen and self.visitable(i, pool, taken, tokens_left):
                    seen.add(i)
                    push(heap, self.key(i, self.next_recency[s]))
                held = self.marker(streams, cursor, s, taken, tokens_left, seen)
                continue
            i = item.position
            cost = facts[i].cost
            if cost <= tokens_left:
                picked.append(_new(_Pick, (i, self.scores[i], cost)))
                tokens_left -= cost
                slots_left -= 1
        return _Filled(always, picked)

    def streams(self, pool: Pool) -> Tuple[List[_Stream], List[Union[int, _Lists]],
                                           List[float]]:
        """The pool's group streams, what the walk starts, and a bound for each before it starts.

        What starts is a group stream (its index) or a kind's word or tag
        lists (:class:`_Lists`, made streams by :meth:`start`). The lists
        are bounded as if their entries shared every message word the kind
        holds; read past their first ``_SPLIT_AFTER`` entries, the rest of a
        list is split by its entries' real message factors (:meth:`split`),
        each part bounded by its own.
        """
        index, query = self.index, self.query
        _, kinds = index.layout_for(pool)
        group_streams, group_ceilings = index.group_streams(pool, query)
        streams, ceilings = list(group_streams), list(group_ceilings)
        starts: List[Union[int, _Lists]] = list(range(len(streams)))
        no_tag = _tag_factor((), query)  # 1.0
        top_recency = _recency(None, 0)  # recency is at most this (age 0)
        all_tags = _tag_factor(query.tags, query)  # every tag of the query shared
        self.unsplit = {}
        for kind in kinds:
            words = index.by_word.get(kind) or {}
            tags = index.by_tag.get(kind) or {}
            # An entry can share at most the message words this kind has at all.
            present = words.keys() & query.words
            shared_tags = tags.keys() & query.tags if tags else ()
            if not present and not shared_tags:
                continue
            top = index.max_base[kind]
            message = _message_factor(len(present), query)
            # Entries with a shared tag are owed by the tag lists (tag factor
            # up to all_tags); the word lists owe the rest, whose tag factor is 1.
            project = _project_factor(kind[1], query)
            group = (kind[0], top, kind[1])
            for is_tag, lists, items, tag_factor in ((False, words, present, no_tag),
                                                     (True, tags, shared_tags, all_tags)):
                if items:
                    starts.append(_new(_Lists, (is_tag, kind, lists, items, group, tag_factor,
                                                project, message)))
                    ceilings.append(_score(top, top_recency, tag_factor, project, message))
        return streams, starts, ceilings

    def start(self, lists: _Lists, streams: List[_Stream], cursor: List[int]) -> Sequence[int]:
        """The streams a kind's word or tag lists start as (added to ``streams``)."""
        index, first = self.index, len(streams)
        for item in lists.items:
            self.unsplit[len(streams)] = (lists.is_tag, lists.kind)
            streams.append(_new(_Stream, (_opened(lists.lists, item), lists.group,
                                          index.list_min(lists.is_tag, lists.kind, item),
                                          lists.tags, lists.project, lists.message)))
            cursor.append(0)
        return range(first, len(streams))

    def split(self, streams: List[_Stream], s: int, cursor: List[int]
              ) -> Optional[Sequence[int]]:
        """Split the unread rest of word or tag list ``s`` by message factor: the new streams.

        Each part (:meth:`levels`) is bounded by its own factor: the word
        lists owe the entries whose message factor is above 1 and that share
        no tag, the tag lists every entry that shares a tag; the group
        streams owe the rest. None, and ``s`` read on whole, when its kind's
        lists of the message's words hold more than ``_SPLIT_RATIO`` of its
        entries (see there).
        """
        is_tag, kind = self.unsplit.pop(s)
        whole, at = streams[s], cursor[s]
        shared, hot = self.shared_words(kind, self.index.by_word.get(kind) or {})
        if shared is None:
            return None
        started = []
        for message, part, low in self.levels(is_tag, whole.members[at:], whole.low[at:],
                                              shared, hot):
            started.append(len(streams))
            streams.append(whole._replace(members=part, low=low, message=message))
            cursor.append(0)
        return started

    def shared_words(self, kind: Tuple[Any, Any], words: Dict[str, Sequence[int]]
                     ) -> Tuple[Optional[Mapping[int, int]], AbstractSet[int]]:
        """Each entry of a kind with its count of shared message words, and those above 1.

        The second is the set of entries whose message factor is above 1.
        Counted once per query and kind (C-level counts over the word lists);
        ``(None, ...)`` when those lists hold more than ``_SPLIT_RATIO`` of the
        kind's entries: reading the counts would cost more than the loose bounds
        it tightens.
        """
        got = self.shared.get(kind)
        if got is not None:
            return got
        lists = [_opened(words, word) for word in self.query.words if word in words]
        if sum(map(len, lists)) > _SPLIT_RATIO * self.index.kind_size.get(kind, 0):
            got = (None, frozenset())
        else:
            counts: Counter[int] = Counter()
            for members in lists:
                counts.update(members)
            factors = self.message_factors
            least = next((k for k, factor in enumerate(factors) if factor > 1.0), len(factors))
            got = (counts, {i for i, k in counts.items() if k >= least} if counts else set())
        self.shared[kind] = got
        return got

    def levels(self, is_tag: bool, members: Sequence[int], whole_low: Sequence[int],
               shared: Mapping[int, int], hot: AbstractSet[int]
               ) -> Iterator[Tuple[float, Sequence[int], Sequence[int]]]:
        """A word or tag list split by message factor: (factor, entries newest first, low).

        A word list keeps only its entries above factor 1 (the rest are the
        group streams'). A tag list keeps every entry: those sharing no word
        in one part, the others by their count. (Filters in C keep the large
        parts cheap; only entries that share words are read one by one.)
        """
        index = self.index
        if is_tag:
            wordy = list(filter(shared.__contains__, members)) if shared else []
            if not wordy:  # one part: the whole list, its low the list's own
                yield self.message_factors[0], members, whole_low
                return
            plain = list(filterfalse(shared.__contains__, members))
            if plain:
                yield self.message_factors[0], plain, index.suffix_min(plain)
        else:
            wordy = list(filter(hot.__contains__, members)) if hot else []
        factors, counts = self.message_factors, shared.__getitem__
        parts: Dict[float, List[int]] = {}
        for i in wordy:
            factor = factors[counts(i)]
            part = parts.get(factor)
            if part is None:
                part = parts[factor] = []
            part.append(i)
        for factor, part in parts.items():
            yield factor, part, index.suffix_min(part)

    def key(self, i: int, recency: Optional[float] = None) -> _Candidate:
        sort_key = self.facts[i].sort_key
        return _new(_Candidate, (-self.score(i, recency), sort_key[0], sort_key[1], i))

    def visitable(self, i: int, pool: Pool, taken: AbstractSet[int], tokens_left: int) -> bool:
        # An entry that cannot fit now never will: tokens only decrease.
        return self.facts[i].cost <= tokens_left and self.usable(i, pool, taken)

    def marker(self, streams: List[_Stream], cursor: List[int], s: int,
               taken: AbstractSet[int], tokens_left: int, seen: AbstractSet[int]
               ) -> Optional[_Marker]:
        """A marker bounding what stream ``s`` still owes, after skipping dead entries.

        None when it owes nothing that can load.
        """
        stream = streams[s]
        members, group = stream.members, stream.group
        at, end = cursor[s], len(members)
        low = stream.low
        facts, entries, include = self.facts, self.entries, self.include
        while at < end:
            if low[at] > tokens_left:
                at = end  # nothing left in this stream can fit
                break
            i = members[at]
            # Every member is active and of an accepted type; the rest is visitable().
            if (i not in seen and facts[i].cost <= tokens_left
                    and (not taken or id(entries[i]) not in taken)
                    and (include is None or include(entries[i]))):
                break
            at += 1
        cursor[s] = at
        if at == end:
            return None
        # Invariant 1: the scorer's factors, each at its largest for what is left.
        # (One stream holds one type: the next entry's recency is its own score's.)
        recency = self.next_recency[s] = _recency_of(self.query, group[0],
                                                     facts[members[at]].created_us, self.now_us)
        bound = _score(group[1], recency, stream.tags, stream.project, stream.message)
        return _new(_Marker, (-bound, "", "", _STREAM, s))


# --------------------------------------------------------------------------
# Private helpers
# --------------------------------------------------------------------------

# ISO-8601 digits are ASCII: a timestamp in other digits is unparseable (0 days).
_ISO = re.compile(
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})"
    r"(?:[Tt ]([0-9]{2})(?::([0-9]{2})(?::([0-9]{2})(?:[.,]([0-9]+))?)?)?)?"
    r"\s*(?:([Zz])|([+-])([0-9]{2})(?::?([0-9]{2}))?)?"
)


# What datetime.isoformat() writes (most stored timestamps), a subset of _ISO
# that datetime.fromisoformat reads to the same instant on every Python from 3.9.
_ISO_WRITTEN = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]{6})?"
    r"(?:[+-][0-9]{2}:[0-9]{2})?"
)


_STR_ONLY = frozenset((str,))


def _tag_set(value: Any, what: str) -> FrozenSet[str]:
    if value is None:
        return frozenset()
    if isinstance(value, str):
        return frozenset((value,))
    if type(value) in (list, tuple) and _STR_ONLY.issuperset(map(type, value)):
        return frozenset(value)  # the common case: a list or tuple of str
    if isinstance(value, Mapping) or not isinstance(value, Iterable):
        raise TypeError(f"{what} must be a str or an iterable of str, got {type(value).__name__}")
    if iter(value) is value:  # a generator would be used up: the next call would differ
        raise TypeError(
            f"{what} must be a str or a collection of str (list, tuple, set),"
            f" got a one-shot {type(value).__name__}"
        )
    tags = tuple(value)
    for tag in tags:
        if not isinstance(tag, str):
            raise TypeError(f"{what} must hold only str, got {tag!r}")
    return frozenset(tags)


def _content(entry: Mapping[str, Any]) -> str:
    content = entry.get("content")
    if content is None:
        return ""
    return content if isinstance(content, str) else str(content)


def _utc_now(now: Optional[datetime]) -> datetime:
    if now is None:
        return datetime.now(timezone.utc)
    if not isinstance(now, datetime):
        raise TypeError(f"now must be a datetime or None, got {type(now).__name__}")
    return now if now.tzinfo is not None else now.replace(tzinfo=timezone.utc)


_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_EPOCH_ORDINAL = _EPOCH.toordinal()
_MICROSECOND = timedelta(microseconds=1)


def _epoch_us(moment: datetime) -> int:
    return (moment - _EPOCH) // _MICROSECOND


def _time_us(value: Any) -> Optional[int]:
    """``created`` as microseconds since the epoch (UTC); None when absent or unparseable.

    Plain integer arithmetic on the parsed fields, with the checks ``datetime``
    itself applies (a real calendar date, 00:00:00-23:59:59, an offset under
    24 hours): the same instant ``datetime`` would give, without building one.
    """
    if type(value) is not str:  # (most are)
        if isinstance(value, datetime):
            return _epoch_us(value if value.tzinfo is not None else
                             value.replace(tzinfo=timezone.utc))
        if not isinstance(value, str):
            return None
    text = value.strip()
    if _ISO_WRITTEN.fullmatch(text):  # isoformat()'s own shape: datetime reads it in C
        try:
            moment = datetime.fromisoformat(text)
        except ValueError:  # a field out of range: the checks below decide
            pass
        else:
            return _epoch_us(moment if moment.tzinfo is not None else
                             moment.replace(tzinfo=timezone.utc))
    match = _ISO.fullmatch(text)
    if match is None:
        return None
    year, month, day, hour, minute, second, frac, _zulu, sign, off_h, off_m = match.groups()
    hour_, minute_, second_ = int(hour or 0), int(minute or 0), int(second or 0)
    if hour_ > 23 or minute_ > 59 or second_ > 59:
        return None
    offset = 0
    if sign:
        offset = int(off_h) * 60 + int(off_m or 0)
        if offset >= 24 * 60:
            return None
        offset = offset if sign == "+" else -offset
    try:
        days = date(int(year), int(month), int(day)).toordinal() - _EPOCH_ORDINAL
    except ValueError:
        return None
    seconds = days * 86400 + hour_ * 3600 + minute_ * 60 + second_ - offset * 60
    return seconds * 1_000_000 + int((frac or "0")[:6].ljust(6, "0"))


#: The times read from text, by text: a store's entries are read again on every
#: stateless call, and their ``created`` strings are the same from call to call.
_TIMES_READ: Dict[str, Optional[int]] = {}
_TIMES_KEPT = 1 << 16
_UNREAD: Any = object()


def _time_us_kept(value: Any) -> Optional[int]:
    """:func:`_time_us`, kept by text for the next call (up to 65,536 texts, then cleared)."""
    if type(value) is not str:
        return _time_us(value)
    # one lookup (not a test, then a read: another call may clear between the two)
    created_us = _TIMES_READ.get(value, _UNREAD)
    if created_us is _UNREAD:
        if len(_TIMES_READ) >= _TIMES_KEPT:
            _TIMES_READ.clear()
        created_us = _TIMES_READ[value] = _time_us(value)
    return cast(Optional[int], created_us)


def _sort_text(entry: Mapping[str, Any], key: str) -> str:
    value = entry.get(key)
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, datetime):
        return value.isoformat()
    return str(value)


def _hashable(value: Any) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True


def _partition_of(entry: Mapping[str, Any], key: str, slot: int) -> Any:
    value = entry.get(key, _MISSING)
    if not _hashable(value):
        raise TypeError(f"{_label(entry, slot)}: partition key {key!r} must be hashable,"
                        f" got {value!r}")
    return value


def _file_id(by_id: Dict[Any, int], shared: Dict[Any, List[int]], entry_id: Any,
             slot: int) -> None:
    """Record that ``slot`` holds ``entry_id`` (ids held twice move to ``shared``)."""
    if entry_id is None or not _hashable(entry_id):
        return
    if entry_id in shared:
        shared[entry_id].append(slot)
    elif entry_id in by_id:
        shared[entry_id] = [by_id.pop(entry_id), slot]
    else:
        by_id[entry_id] = slot


def _matcher(where: Any) -> Optional[Callable[[Mapping[str, Any]], bool]]:
    """Equality on every key of ``where`` (an entry lacking a key does not match)."""
    if where is None:
        return None
    if not isinstance(where, Mapping):
        raise TypeError(f"where must be a mapping or None, got {type(where).__name__}")
    for key in where:
        if not isinstance(key, str):
            raise TypeError(f"where keys must be str, got {key!r}")
    items = tuple(where.items())
    if not items:
        return None

    def keep(entry: Mapping[str, Any]) -> bool:
        return all(key in entry and entry[key] == value for key, value in items)

    return keep


def _both(
    first: Optional[Callable[[Mapping[str, Any]], bool]],
    second: Optional[Callable[[Mapping[str, Any]], bool]],
) -> Optional[Callable[[Mapping[str, Any]], bool]]:
    if first is None or second is None:
        return first or second
    return lambda entry: first(entry) and bool(second(entry))


def _label(entry: Any, index: Optional[int]) -> str:
    if isinstance(entry, Mapping) and entry.get("id") is not None:
        return f"entry id={entry['id']!r}"
    return "entry" if index is None else f"entry at index {index}"


def _check_entries(entries: Iterable[Any]) -> List[Any]:
    if isinstance(entries, (str, bytes, Mapping)) or not isinstance(entries, Iterable):
        raise TypeError(
            f"entries must be an iterable of mappings, got {type(entries).__name__}"
        )
    listed = list(entries)
    for i, entry in enumerate(listed):
        if type(entry) is not dict and not isinstance(entry, Mapping):
            raise TypeError(
                f"entry at index {i} must be a mapping (dict), got {type(entry).__name__}"
            )
    return listed


def _check_pools(pools: Any) -> List[Pool]:
    if isinstance(pools, Pool):
        raise TypeError("pools must be a sequence of Pool, got a single Pool; wrap it: [pool]")
    if isinstance(pools, (str, bytes, Mapping)) or not isinstance(pools, Iterable):
        raise TypeError(f"pools must be a sequence of Pool, got {type(pools).__name__}")
    checked = list(pools)
    seen = set()
    for i, pool in enumerate(checked):
        if not isinstance(pool, Pool):
            raise TypeError(f"pools[{i}] must be a Pool, got {type(pool).__name__}")
        if pool.name in seen:
            raise ValueError(f"pool names must be unique, got {pool.name!r} twice")
        seen.add(pool.name)
    return checked


def _check_types(name: str, types: Any) -> Optional[Tuple[str, ...]]:
    if types is None:
        return None
    if isinstance(types, str):
        raise TypeError(
            f"Pool {name!r}: types must be a tuple of str or None, got the str {types!r};"
            f" write types=({types!r},)"
        )
    if not isinstance(types, Iterable):
        raise TypeError(f"Pool {name!r}: types must be a tuple of str or None, got {types!r}")
    items = list(types)
    for item in items:
        if not isinstance(item, str):
            raise TypeError(f"Pool {name!r}: every type must be a str, got {item!r}")
    if isinstance(types, (set, frozenset)):
        items.sort()
    return tuple(items)


#: ``always_pool=True``: the private pool a call fills after the caller's. It has
#: no room (0 tokens, 0 entries) and takes every type, so :meth:`_AlwaysTier.load`
#: gives it exactly the always-scope entries that no earlier pool's types
#: accepted, and nothing else: every engine's fill ends with its always tier.
_ALWAYS_POOL = Pool("always", 0, 0)


def _call_pools(pools: List[Pool], always_pool: Any) -> List[Pool]:
    """The pools a call fills: ``pools``, then :data:`_ALWAYS_POOL` when ``always_pool``."""
    if not isinstance(always_pool, bool):
        raise TypeError(f"always_pool must be a bool, got {always_pool!r}")
    if not always_pool:
        return pools
    if any(pool.name == _ALWAYS_POOL.name for pool in pools):
        raise ValueError(
            f"a pool is named {_ALWAYS_POOL.name!r}, the name always_pool=True gives to the"
            " always-scope entries no pool's types accept: rename that pool, or pass"
            " always_pool=False"
        )
    return [*pools, _ALWAYS_POOL]


def _shown(pool: Pool, loaded: int) -> bool:
    """Whether a pool is in the result: every caller's pool; the private one when it loaded."""
    return pool is not _ALWAYS_POOL or loaded > 0


def _check_score(value: Any, label: str) -> Any:
    if type(value) is float and value - value == 0.0:  # the common case: a finite float
        return value
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{label}: scorer must return a finite number, got {value!r}")
    try:
        finite = math.isfinite(value)
    except OverflowError:  # an int too large for a float is still finite
        finite = True
    if not finite:
        raise ValueError(f"{label}: scorer must return a finite number, got {value!r}")
    return value


def _checked(value: Any, entry: Any, index: Optional[int]) -> Any:
    """:func:`_check_score`, with the entry's label built only when the value is refused."""
    if type(value) is float and value - value == 0.0:
        return value
    return _check_score(value, _label(entry, index))


def _check_limit(value: Any) -> Optional[int]:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"max_always_tokens must be an int or None, got {value!r}")
    if value < 0:
        raise ValueError(f"max_always_tokens must be >= 0, got {value}")
    return value


def _check_count(value: Any, label: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{label}: token_counter must return an int, got {value!r}")
    return max(1, value)


def _takes_now(fn: Callable[..., Any]) -> bool:
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return True
    return any(
        p.kind is p.VAR_KEYWORD
        or (p.name == "now" and p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD))
        for p in params
    )
