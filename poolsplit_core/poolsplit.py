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
For a store queried many times, ``prepared.py`` (the same answers, prepared
once: ``PreparedStore``) is copied beside it; this file never imports it.

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

import dataclasses
import heapq
import inspect
import math
import numbers
import re
import warnings
from dataclasses import dataclass
from datetime import date, datetime, timedelta, timezone
from functools import lru_cache
from itertools import chain, repeat
from types import MappingProxyType
from typing import (
    AbstractSet,
    Any,
    Callable,
    Collection,
    Dict,
    FrozenSet,
    Iterable,
    Iterator,
    List,
    Mapping,
    NamedTuple,
    Optional,
    Protocol,
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
    "Candidate",
    "ConfiguredScorer",
    "Decision",
    "Engine",
    "Explanation",
    "Filled",
    "Ledger",
    "Pool",
    "Room",
    "__version__",
    "default_is_active",
    "default_scorer",
    "default_token_counter",
    "explain_pools",
    "fill_pools",
    "make_scorer",
    "retrieve",
    "retrieve_pools",
]

E = TypeVar("E", bound=Mapping[str, Any])
Scorer = Callable[..., float]
TokenCounter = Callable[[str], int]
ActivityTest = Callable[[Mapping[str, Any]], bool]
WordReader = Callable[[str], AbstractSet[str]]


# -- Pool: a reserved budget -------------------------------------------------


@dataclass(frozen=True)
class Pool:
    """A reserved budget: a token ceiling and an entry cap for a group of types.

    >>> Pool("skills", max_tokens=400, max_entries=3, types=["skill"])
    Pool(name='skills', max_tokens=400, max_entries=3, types=('skill',))

    ``max_tokens`` and ``max_entries`` bound the *contextual* entries only;
    ``scope="always"`` entries bypass both. ``types=None`` accepts every type.
    A list or set of types is stored as a tuple (a set in sorted order), so a
    pool stays frozen and hashable. A bare string is refused: ``types="skill"``
    would otherwise mean the letters s, k, i, l. An empty ``types=()`` takes
    no entry at all, and warns (``UserWarning``).
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
        if self.types == ():
            warnings.warn(f"Pool {self.name!r} takes no type (types=()): it loads nothing, not"
                          " even a correction; name its types, or pass types=None for every"
                          " type", UserWarning, stacklevel=3)

    def accepts(self, entry_type: Any) -> bool:
        """Return True when this pool draws entries of ``entry_type``.

        >>> Pool("p", 10, 1, types=("skill",)).accepts("skill")
        True
        """
        return self.types is None or entry_type in self.types


# -- Defaults: token counter, activity test, scorer --------------------------


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
    query = _Query.from_context(context, None, _PLAIN)
    return _default_score(entry, query, _utc_now(now), _label(entry, None))


# -- The default score, factor by factor -------------------------------------

# Each factor of the table in the user guide ("The default scorer, exactly") is
# one function below, and a _Query holds its per-query values (the factor plan),
# read by the score, every bound and the numpy columns. _score multiplies them in
# the table's order, and every upper bound the fast paths use is _score of the
# same factors, each at its largest, in the same order: a bound cannot drift from
# the score it bounds (a product of positive floats each at least as large, in the
# same order, is never smaller). The message factor comes last: a score is its
# partial product times it, exactly. _recency_at takes plain numbers here and
# whole columns in the numpy engine: the same operations in the same order.

_STOPWORDS = frozenset(
    "the and for are but not you all can her was one our out day has had his how"
    " man new now old see two way who did its let put say she too use that this"
    " with from they them then than have will your what when were been into some"
    " more very just over only".split()
)
_DAY_SECONDS = 86400.0


class _Query:
    """A retrieval context reduced once per call to what the scorer compares."""

    __slots__ = ("message_factors", "options", "project", "project_factors", "reader",
                 "tag_factors", "tags", "words")

    def __init__(self, words: FrozenSet[str], project: Any, tags: FrozenSet[str],
                 reader: Optional[WordReader] = None) -> None:
        self.words = words
        self.project = project
        self.tags = tags
        self.reader = reader  # None: W(text), the default words
        # None: recency and similarity as the default scorer's (make_scorer options otherwise)
        self.options: Optional[ConfiguredScorer] = None
        #: The factor plan, read by the score, every bound and the numpy columns: message
        #: factors by shared words (0 to all), project factors (none, the query's, another).
        self.message_factors = [_message_factor(k, self) for k in range(len(words) + 1)]
        self.project_factors = (_PROJECT_NONE, _PROJECT_MATCH, _PROJECT_OTHER)
        self.tag_factors: Dict[Tuple[int, int], float] = {}  # by (shared, size), as met

    def tag_factor(self, shared: int, size: int) -> float:
        """:func:`_tag_factor` of an entry with ``size`` tags, ``shared`` of them the query's."""
        factor = self.tag_factors.get((shared, size))
        if factor is None:  # (no tags: 1.0; no shared tag: 1 + 0.0, exactly 1.0 too)
            factor = self.tag_factors[shared, size] = _tag_share(shared, size) if size else 1.0
        return factor

    def project_factor(self, project: Any) -> float:
        """:func:`_project_factor` of an entry's project: none, the query's or another."""
        return self.project_factors[0 if project is None else 1 if project == self.project else 2]

    @classmethod
    def from_context(cls, context: Optional[Mapping[str, Any]],
                     reader: Optional[WordReader] = None,
                     options: Optional[ConfiguredScorer] = None) -> _Query:
        query = cls._read(context, reader)
        if options is not None and context:  # the default score: it reads three keys
            _check_context_keys(context)
        if options is not None and (options.relevance != "words" or options.evergreen
                                    or options.decay_days):
            query.options = options
            if options.relevance == "similarity":  # no message factor: no words to share
                query.words = frozenset()
                query.message_factors = [1.0]
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
                         query.message_factors[shared], query)
    if query.options is None:
        return score
    return score * query.options._similarity(entry.get("similarity"), label)


def _entry_score(base: float, recency: float, tags: Collection[str], project: Any,
                 message: float, query: _Query) -> float:
    """The default score from an entry's parsed fields (both paths score through here).

    ``recency`` is :func:`_recency_of` the entry and ``message`` its message
    factor; the tag and project factors are the query's plan's. Without its
    similarity factor (the caller multiplies it last, when there is one).
    """
    shared = len(query.tags.intersection(tags)) if tags and query.tags else 0
    return _score(base, recency, query.tag_factor(shared, len(tags)) if shared else 1.0,
                  query.project_factor(project), message)


def _recency_of(query: _Query, entry_type: Any, created_us: Optional[int], now_us: int) -> float:
    """An entry's recency factor: :func:`_recency` over its type's horizon at this query."""
    horizon = _DECAY_DAYS if query.options is None else query.options._horizon(entry_type)
    return cast(float, _recency_at(0 if created_us is None else now_us - created_us, horizon))


def _score(base: float, recency: float, tags: float, project: float, message: float) -> float:
    """The default score: base priority x recency x tags x project x message, in that order."""
    return base * recency * tags * project * message


# The default score's constants, each written once: the factor functions below read them,
# and so do the engines beside this file (the database's SQL is checked against them).
_RECENCY_FLOOR = 0.3  # the lowest recency, reached at the horizon
_RECENCY_DROP = 0.7  # what recency loses from age 0 to the horizon
_DECAY_DAYS = 90  # the horizon, in days (make_scorer's decay_days sets one per type)
_TAG_WEIGHT = 0.5  # the tag factor: 1 + weight x share of the entry's tags the query has
_MESSAGE_THRESHOLD = 0.15  # the overlap above which the message factor applies
_MESSAGE_WEIGHT = 1.5  # the message factor: 1 + weight x overlap
_PROJECT_NONE, _PROJECT_MATCH, _PROJECT_OTHER = 1.0, 1.5, 0.5


def _tag_share(shared: float, count: int) -> float:
    """The tag factor of an entry with ``count`` tags, ``shared`` of them the query's."""
    return 1 + _TAG_WEIGHT * shared / count


def _overlap(shared_words: float, message_words: int) -> float:
    """The share of the message's words an entry holds."""
    return shared_words / message_words


def _message_gain(overlap: float) -> float:
    """The message factor of an overlap above the threshold."""
    return 1 + _MESSAGE_WEIGHT * overlap


def _recency(created_us: Optional[int], now_us: int, horizon: float = _DECAY_DAYS) -> float:
    """Linear decay over 90 days of age (``horizon``) with a floor of 0.3; at most 1.0 (age 0).

    Undated or future counts as 0 days (times in integer microseconds since
    the epoch, see :func:`_recency_at`); an infinite horizon gives 1.0 always.
    """
    return cast(float, _recency_at(0 if created_us is None else now_us - created_us, horizon))


def _recency_at(age_us: Any, horizon: Any, maximum: Callable[..., Any] = max) -> Any:
    """Recency at an age in microseconds, a negative one (a future time) counting as 0.

    Linear from 1.0 at age 0 to 0.3 at ``horizon`` days, the age taken as
    fractional days (``age_us / 1_000_000`` is exact seconds), never below
    the floor. Plain numbers here; whole columns in the numpy engine, which
    passes ``numpy.maximum`` as ``maximum``: the same operations, in order.
    """
    return maximum(_RECENCY_FLOOR,
                   1.0 - _RECENCY_DROP * (maximum(0, age_us) / 1_000_000 / _DAY_SECONDS)
                   / horizon)


def _tag_factor(tags: Collection[str], query: _Query) -> float:
    """``1 + 0.5 * shared / len(tags)`` for an entry with tags, else 1.0 (no share: 1.0 too)."""
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
# split into the runs; drop the runs of one or two characters and the
# stopwords. (Words stay str: dicts and sets have a fast path for str keys.)
_ALNUM = "abcdefghijklmnopqrstuvwxyz0123456789"
_SPACED = bytes(byte if byte in _ALNUM.encode("ascii") else 32 for byte in range(256))
_NOT_WORDS = frozenset((*_ALNUM, *(a + b for a in _ALNUM for b in _ALNUM), *_STOPWORDS))


def _word_runs(texts: Iterable[str]) -> Iterator[List[str]]:
    """The [a-z0-9] runs of each of ``texts``, lowercased, in order (repeats, stopwords kept)."""
    encoded = map(str.encode, map(str.lower, texts), repeat("utf-8"), repeat("replace"))
    return map(str.split, map(bytes.decode, map(bytes.translate, encoded, repeat(_SPACED))))


def _word_sets(texts: Iterable[str]) -> Iterator[FrozenSet[str]]:
    """W(text) for each of ``texts``."""
    return map(frozenset.difference, map(frozenset, _word_runs(texts)), repeat(_NOT_WORDS))


def _cost(entry: Mapping[str, Any], index: int, token_counter: TokenCounter) -> int:
    """``token_count`` when a positive int, else the counter's (at least 1)."""
    count = entry.get("token_count")
    if isinstance(count, int) and not isinstance(count, bool) and count > 0:
        return count
    text = _content(entry)
    if token_counter is default_token_counter:
        return max(1, len(text) // 4)
    return _check_count(token_counter(text), _label(entry, index))


# -- The scorer factory: the default score with options ----------------------

_READERS: Dict[str, Optional[WordReader]] = {"ascii": None}
#: The word readers a scorer's options can name as data (``{"words": "unicode"}``):
#: "ascii", the default words, and "unicode" once ``multilingual.py`` is imported.
WORD_READERS: Mapping[str, Optional[WordReader]] = MappingProxyType(_READERS)


def _name_reader(name: str, reader: WordReader) -> None:
    """Let scorer options name ``reader`` (a word reader whose output needs no check)."""
    _READERS[name] = reader


#: What ``relevance=`` can name: which factors measure an entry's relevance to the message.
RELEVANCES = ("words", "similarity", "both")


class ConfiguredScorer:
    """The default score with options: what :func:`make_scorer` returns.

    >>> scorer = make_scorer(evergreen=["correction"])
    >>> scorer
    ConfiguredScorer(evergreen=['correction'])
    >>> entry = {"type": "correction", "created": "2020-01-01"}
    >>> default_scorer(entry), scorer(entry)
    (1.5, 5.0)

    Called like :func:`default_scorer` (``scorer(entry, context, now=now)``).
    Its options are plain attributes, so the prepared paths can read them and
    keep their speed: a ``PreparedStore`` (prepared.py) built with this scorer
    indexes each entry with its word reader. Two scorers with the same options
    are equal. :meth:`to_data` writes the options as JSON-ready data
    (``make_scorer(**scorer.to_data())`` reads them back), for named options
    only.

    The score, exactly (every option absent gives :func:`default_scorer`, bit
    for bit: the extra factor is then 1.0, and ``x * 1.0 == x``)::

        base x recency(type) x tags x project x message x similarity

    Options (keyword-only):

    - ``words``: the word reader of the message factor, ``text -> set of
      str``; ``None`` (or ``"ascii"``) is the default ``[a-z0-9]`` words,
      ``"unicode"`` is ``multilingual.unicode_words`` (words in any script,
      CJK as bigrams: import ``multilingual``). A reader that returns anything
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

    __slots__ = ("_horizons", "decay_days", "evergreen", "relevance",
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
                                 f" a callable or None, got {words!r}" + (
                                     "; 'unicode' is multilingual.py's reader: import"
                                     " multilingual (copy it beside this file)"
                                     if words == "unicode" else ""))
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
        # Each type's horizon: an evergreen type's is infinite (its recency is 1.0 at any age).
        self._horizons: Dict[str, float] = {**dict(horizons),
                                            **dict.fromkeys(self.evergreen, math.inf)}

    def __call__(self, entry: Mapping[str, Any], context: Optional[Mapping[str, Any]] = None,
                 *, now: Optional[datetime] = None) -> float:
        """Score ``entry`` as :func:`default_scorer` does, with these options."""
        query = _Query.from_context(context, self.words, self)
        return _default_score(entry, query, _utc_now(now), _label(entry, None))

    @property
    def uses_similarity(self) -> bool:
        """True when the score reads an entry's ``similarity``."""
        return self.relevance != "words"

    def _horizon(self, entry_type: Any) -> float:
        """The decay horizon of ``entry_type`` in days: infinite for an evergreen type."""
        if not _hashable(entry_type):
            return _DECAY_DAYS
        return self._horizons.get(entry_type, _DECAY_DAYS)

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

        >>> make_scorer().to_data()
        {'words': 'ascii'}
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

    >>> spaced = make_scorer(words=lambda text: frozenset(text.lower().split()))
    >>> spaced({"content": "Ship v2 on Friday"}, {"message": "ship v2"})
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
    functions, and to ``PreparedStore`` (prepared.py, which then indexes with its
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
    if reader in _READERS.values():  # a named reader: its output is a set of str
        return got
    if not isinstance(got, AbstractSet) or isinstance(got, Mapping):
        raise TypeError(f"{label}: the word reader must return a set of str,"
                        f" got {type(got).__name__}")
    for word in got:
        if not isinstance(word, str):
            raise TypeError(f"{label}: the word reader must return a set of str,"
                            f" got {word!r} in it")
    return got


# -- retrieve: fill one pool -------------------------------------------------


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
    strict: bool = False,
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

    ``strict=True`` first refuses a store the spec would read leniently, as
    its writer surely did not mean it: one ``ValueError`` lists every
    problem, naming the entry, the field and the value (a ``scope`` of
    ``"Always"``, an unreadable ``created``, a ``created`` more than a day
    after ``now``, ``tags`` written as one str, two entries with one
    ``id``, ...). The rules are those of ``poolsplit check``; the default,
    ``False``, is the spec's reading.

    >>> retrieve([{"id": "fix", "scope": "Always"}], Pool("all", 10, 1), strict=True)
    Traceback (most recent call last):
    ...
    ValueError: 1 problem in the entries:
      entry id='fix': scope must be 'always', 'contextual' or absent, got 'Always'
    """
    if not isinstance(pool, Pool):
        raise TypeError(f"pool must be a Pool, got {type(pool).__name__}")
    call = _Call(entries, context, scorer, token_counter, is_active, now)
    if _check_strict(strict):
        _refuse(_store_problems(call.entries, call.now))
    filled = fill_pools(call, [pool], max_always_tokens)[pool.name]
    return [*map(call.entries.__getitem__, filled.always),
            *(call.entries[candidate[0]] for candidate in filled.selected)]


# -- retrieve_pools: fill several pools from one store -----------------------


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
    strict: bool = False,
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
    together), as for :func:`retrieve`. An empty ``pools`` fills nothing
    (``{}``); with ``always_pool=True``, only the always tier loads.

    ``always_pool=True`` loads every active always-scope entry, even one
    whose type no pool accepts: in one more pool, ``"always"``, filled after
    the others and listed first, in input order, outside every budget and
    counted by ``max_always_tokens``, present only when an entry loads in
    it; the other pools get exactly what they get without the option. A
    pool of the caller's named ``"always"`` is then refused (``ValueError``).

    >>> store = [{"id": "fix", "type": "correction", "scope": "always"},
    ...          {"id": "t", "type": "task"}]
    >>> got = retrieve_pools(store, [Pool("tasks", 10, 5, types=("task",))],
    ...                      always_pool=True)
    >>> {name: [e["id"] for e in picked] for name, picked in got.items()}
    {'always': ['fix'], 'tasks': ['t']}

    ``strict=True`` refuses a store with a problem first, as for :func:`retrieve`.
    """
    checked = _call_pools(_check_pools(pools), always_pool)
    call = _Call(entries, context, scorer, token_counter, is_active, now)
    if _check_strict(strict):
        _refuse(_store_problems(call.entries, call.now))
    get = call.entries.__getitem__
    return {name: [*map(get, filled.always), *(get(candidate[0]) for candidate in filled.selected)]
            for name, filled in fill_pools(call, checked, max_always_tokens).items()}


# -- THE INVARIANT: always-scope entries load first, outside every budget ----


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


# -- The one fill, and the contract of the engines that feed it --------------


class Candidate(NamedTuple):
    """A contextual entry an engine offers a pool: its position, exact score and cost."""

    position: int  # in the engine's entries
    score: Any
    cost: int


class Room:
    """What a pool has left while it fills; :func:`fill_pools` counts it down."""

    __slots__ = ("entries", "tokens")

    def __init__(self, pool: Pool) -> None:
        self.tokens, self.entries = pool.max_tokens, pool.max_entries


class Filled(NamedTuple):
    """One pool's fill: its always tier (positions, in order), then the candidates it loaded."""

    always: List[int]
    selected: List[Candidate]


class Engine(Protocol):
    """What an engine gives :func:`fill_pools`: each pool's candidates, best first, lazily.

    The fill (always tier, both caps, an entry in at most one pool,
    ``max_always_tokens``, Decisions, Ledgers) is :func:`fill_pools`'s alone.
    This file's stateless engine sorts a call's entries, ``prepared.py``
    walks an index best-first, the numpy engine scores columns; they answer
    bit for bit alike because each keeps this contract:

    - ``entries`` holds the call's entries by position; ``cost(i)`` is entry
      ``i``'s cost (its ``token_count`` when a positive int, else the token
      counter's count of its content).
    - ``always_scope()`` gives every active always-scope entry, as
      ``(type, positions)`` pairs with each list ascending, and a test a
      position must pass to load (None: every one loads).
    - ``candidates(pool, taken, room)`` yields every active entry of the
      pool's types that is not always-scope and whose entry object is not in
      ``taken`` (the ``id`` of each entry the call's earlier pools loaded),
      each as a :class:`Candidate` with its exact score and cost, in the
      spec's order: ascending ``(-score, created, id, position)``, with
      ``created`` and ``id`` read as text. Exhausted means the iteration
      ends: no such entry is left.
    - It is lazy: the fill pulls a candidate only while the pool has room
      and drops the iterator when it is full, so a candidate never pulled
      costs nothing (a best-first walk, a database cursor). The fill loads a
      pulled candidate exactly when its cost is at most ``room.tokens``, then
      lowers ``room.tokens`` by it and ``room.entries`` by one; an engine may
      rely on this, and may leave out a candidate costing more than
      ``room.tokens`` when it would yield it (it could never load). A traced
      fill (:func:`explain_pools`) reads every candidate: nothing left out.
    - Writes reach an engine between calls, never during one: one call reads
      one state of the store.
    """

    @property
    def entries(self) -> Sequence[Mapping[str, Any]]:
        """The call's entries, by position."""

    def cost(self, i: int) -> int:
        """The cost of entry ``i``."""

    def always_scope(self) -> Tuple[Iterable[Tuple[Any, Sequence[int]]],
                                    Optional[Callable[[int], bool]]]:
        """The active always-scope entries by type (ascending), and the test they pass to load."""

    def candidates(self, pool: Pool, taken: AbstractSet[int], room: Room) -> Iterator[Candidate]:
        """The pool's contextual candidates, in the spec's order (see the class)."""


def fill_pools(
    engine: Engine,
    pools: Sequence[Pool],
    max_always_tokens: Optional[int] = None,
    trace: Optional[Dict[int, Decision]] = None,
    ledgers: Optional[Dict[str, Ledger]] = None,
) -> Dict[str, Filled]:
    """Fill ``pools`` in order from ``engine``'s candidates: the greedy fill of every path.

    Each pool first loads its always tier (:class:`_AlwaysTier`), outside its
    budget; then it takes candidates in the engine's order: one that fits
    the tokens left loads, one that does not is skipped and the scan goes
    on, until the pool holds ``max_entries`` or has no token left. An entry
    a pool loads is in no later pool's candidates. The pools checked already
    (``_check_pools``, ``_call_pools``); the private ``always`` pool, filled
    last, is in the result only when it loaded something, and then first.
    With ``trace`` and ``ledgers`` (:func:`explain_pools`), a Decision for
    each entry a pool considered and a Ledger for each pool in the result.
    """
    entries = engine.entries
    by_type, usable = engine.always_scope()
    tier = _AlwaysTier(by_type, entries, engine.cost, max_always_tokens)
    taken: Set[int] = set()
    out: Dict[str, Filled] = {}
    for pool in pools:
        always = tier.load(pool, usable)
        room = Room(pool)
        selected: List[Candidate] = []
        skipped: List[Tuple[Candidate, int]] = []  # (candidate, tokens left at its turn)
        stream: Iterator[Candidate] = iter(())
        if pool is not _ALWAYS_POOL and (trace is not None or (room.tokens > 0
                                                               and room.entries > 0)):
            stream = engine.candidates(pool, taken, room)
        while room.entries > 0 and room.tokens > 0:
            candidate = next(stream, None)
            if candidate is None:
                break
            cost = candidate[2]
            if cost <= room.tokens:
                selected.append(candidate)
                room.tokens -= cost
                room.entries -= 1
            elif trace is not None:
                skipped.append((candidate, room.tokens))
        if selected:
            taken.update([id(entries[candidate[0]]) for candidate in selected])
        if not _shown(pool, len(always)):
            continue  # (the private pool, empty: it considered no entry, it has no ledger)
        out[pool.name] = filled = Filled(always, selected)
        out = {pool.name: filled, **out} if pool is _ALWAYS_POOL else out  # listed first
        if trace is not None and ledgers is not None:
            _account(engine, pool, filled, skipped, list(stream), room, trace, ledgers)
    tier.check_ceiling()
    return out


def _account(engine: Engine, pool: Pool, filled: Filled, skipped: List[Tuple[Candidate, int]],
             late: List[Candidate], room: Room, trace: Dict[int, Decision],
             ledgers: Dict[str, Ledger]) -> None:
    """One pool's Decisions (into ``trace``) and Ledger (into ``ledgers``), for explain_pools.

    ``late`` are the candidates the fill never reached: over the entries cap
    when the pool is full, else over the tokens left.
    """
    entries, name = engine.entries, pool.name

    def decide(c: Candidate, outcome: str, **fields: Any) -> None:
        trace[c.position] = Decision(entries[c.position], c.position, outcome, name,
                                     score=c.score, cost=c.cost, **fields)

    for rank, i in enumerate(filled.always):
        trace[i] = Decision(entries[i], i, "always", name, cost=engine.cost(i), rank=rank)
    for rank, candidate in enumerate(filled.selected, len(filled.always)):
        decide(candidate, "selected", rank=rank)
    for candidate, left in skipped:
        decide(candidate, "over_tokens", tokens_left=left)
    full = room.entries == 0
    for candidate in late:
        decide(candidate, "over_entries" if full else "over_tokens",
               tokens_left=None if full else room.tokens)
    ledgers[name] = Ledger(
        name, pool.max_tokens, pool.max_entries,
        tokens_used=pool.max_tokens - room.tokens,
        selected=len(filled.selected),
        always=len(filled.always),
        always_tokens=sum(map(engine.cost, filled.always)),
        skipped_tokens=len(skipped) + (0 if full else len(late)),
        skipped_entries=len(late) if full else 0,
    )


# -- The stateless engine ----------------------------------------------------


class _Key(NamedTuple):
    """A heap item: an entry scored exactly, ordered by the spec's sort key."""

    neg_score: Any
    created: str
    id: str
    position: int  # in the input (stateless) or in the store then extras (prepared)


class _Marker(NamedTuple):
    """A heap item: an upper bound standing for entries not yet scored exactly.

    Its text fields are "" and its kind is negative, so it sorts before every
    key of an equal score: a key pops only when no marker can still beat it,
    and the fill order is the one of exact keys.
    """

    neg_bound: float
    created: str  # always ""
    id: str  # always ""
    kind: int  # _LAZY (here), _STREAM or _START (prepared.py's)
    ref: int  # the entry (_LAZY), the stream (_STREAM), the next stream to start (_START)


# Heap items are built with tuple.__new__(_Marker, (...)): the same named
# tuple, without the Python frame of its constructor (a hot path).
_new = tuple.__new__

_LAZY = -1  # stateless: an entry whose message factor is not computed yet


class _Call:
    """The stateless engine: one call's work, each entry tested, scored and measured once.

    ``every=True`` (explain_pools) yields every candidate, each scored
    exactly; otherwise the default scorer's message factor (the costly part)
    is computed only for entries that can still win: each enters the heap as
    a :class:`_Marker` bounding its score over every message factor, and is
    scored exactly when popped.
    """

    def __init__(
        self,
        entries: Iterable[Any],
        context: Optional[Mapping[str, Any]],
        scorer: Scorer,
        token_counter: TokenCounter,
        is_active: ActivityTest,
        now: Optional[datetime],
        every: bool = False,
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
        self.every = every
        self.time_us = _time_us_kept if len(self.entries) <= _TIMES_KEPT else _time_us
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
        self.always: List[Tuple[Any, Sequence[int]]] = [*always.items(), *always_unkeyed]

    def always_scope(self) -> Tuple[List[Tuple[Any, Sequence[int]]], None]:
        return self.always, None

    def candidates(self, pool: Pool, taken: AbstractSet[int], room: Room
                   ) -> Iterator[Candidate]:
        entries = self.entries
        lazy = not self.every and self.options is not None and bool(self.query.words)
        message_max = self.query.message_factors[-1]
        members = [i for entry_type, listed in self.contextual.items()
                   if pool.accepts(entry_type) for i in listed]
        members += [i for i in self.unkeyed if pool.accepts(entries[i].get("type", "note"))]
        heap: List[Any] = []
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
                heap.append(_new(_Marker, (-bound, "", "", _LAZY, i)))
            else:
                heap.append(self.key(i))
        if self.every:  # every candidate, in order
            heap.sort()
            for key in heap:
                i = key[-1]
                yield _new(Candidate, (i, self.scores[i], self.cost(i)))
            return
        heapq.heapify(heap)
        pop, push = heapq.heappop, heapq.heappush
        while heap:
            item = pop(heap)
            i = item[-1]
            cost = self.cost(i)
            if type(item) is _Marker:  # score exactly, unless it can never fit
                if cost <= room.tokens:
                    push(heap, self.key(i))
                continue
            yield _new(Candidate, (i, self.scores[i], cost))

    def key(self, i: int) -> _Key:
        entry = self.entries[i]
        return _new(_Key, (-self.score(i), _sort_text(entry, "created"),
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
        recency = _recency_of(self.query, entry.get("type", "note"),
                              self.time_us(entry.get("created")), self.now_us)
        return _entry_score(_base_priority(entry, label), recency, tags, entry.get("project"),
                            1.0, self.query)

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
                value: Any = self.partial_score(i) * self.query.message_factors[shared]
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


# -- explain_pools: account for every entry and every token ------------------

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
    for loaded entries. ``notes`` says in words how a field was read when
    that explains the rank (a ``created`` in the future, or unreadable,
    counted as 0 days old); two Decisions are equal whatever their notes.
    """

    entry: Mapping[str, Any]
    index: int
    outcome: str
    pool: Optional[str] = None
    score: Optional[float] = None
    cost: Optional[int] = None
    tokens_left: Optional[int] = None
    rank: Optional[int] = None
    notes: Tuple[str, ...] = dataclasses.field(default=(), compare=False)

    @property
    def loaded(self) -> bool:
        """True for ``always`` and ``selected``."""
        return self.outcome in ("always", "selected")


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
    strict: bool = False,
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
    ``always`` and ``always_tokens`` count its entries, listed first) only
    when at least one entry loads in it.

    A contextual entry scored with the default score whose ``created`` the
    score counted as 0 days old although it names a time, one that is in
    the future or that the core does not read, gets a Decision whose
    ``notes`` say so: why it ranks as if brand new.

    >>> now = datetime(2026, 3, 1, tzinfo=timezone.utc)
    >>> got = explain_pools([{"id": "n", "created": "2099-01-01"}], [Pool("all", 10, 1)], now=now)
    >>> print(got.decisions[0].notes[0])
    created '2099-01-01' is later than now (2026-03-01T00:00:00+00:00): counted as 0 days old

    ``strict=True`` refuses a store with a problem first, as for :func:`retrieve`.
    """
    checked = _call_pools(_check_pools(pools), always_pool)
    call = _Call(entries, context, scorer, token_counter, is_active, now, every=True)
    if _check_strict(strict):
        _refuse(_store_problems(call.entries, call.now))
    trace: Dict[int, Decision] = {}
    ledgers: Dict[str, Ledger] = {}
    listed = fill_pools(call, checked, max_always_tokens, trace, ledgers)  # the result's order
    active = set(call.active)
    decisions = []
    dated = call.options is not None  # the default score: recency from created
    for i, entry in enumerate(call.entries):
        if i in trace:
            decision = trace[i]
            note = _created_note(entry, call.now) if dated and decision.score is not None else ""
            decisions.append(dataclasses.replace(decision, notes=(note,)) if note else decision)
        else:
            outcome = "no_pool" if i in active else "inactive"
            decisions.append(Decision(entry, i, outcome))
    return Explanation(tuple(decisions), {name: ledgers[name] for name in listed})


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
            f"always-scope entries cost {total} token{'' if total == 1 else 's'},"
            f" more than max_always_tokens={limit}: {named}"
        )


# -- Private helpers ---------------------------------------------------------

# The times the core reads (``created``): ISO 8601's extended format, exactly this
# grammar, after the text's surrounding whitespace is stripped:
#
#   YYYY-MM-DD [(T|t|space) HH [:MM [:SS [(.|,)digits]]]] [spaces] [Z | z | (+|-)HH[[:]MM]]
#
# ASCII digits only; a real calendar date (years 0001-9999); hours 00-23, minutes and
# seconds 00-59; an offset HH*60+MM under 24 hours; the fraction's first six digits
# (microseconds); no offset means UTC. Anything else -- ISO 8601's basic format
# (20260101T000000Z), a week date (2026-W01-1), an ordinal date (2026-001), an offset
# with seconds (+05:30:15), digits of another script -- is no time: the spec's lenient
# reading counts it as 0 days old, and a strict reading refuses it, naming the extended
# spelling of the same instant (:func:`_time_hint`). The database engine's SQL
# (poolsplit_v1.time_us) reads this same grammar.
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


# A store's entries are read again on every stateless call, and their ``created``
# strings are the same from call to call: the times of the last 65,536 texts read.
# (A call over more entries parses them: an LRU cache smaller than the scan
# would miss on every one of them, and cost more than the parse.)
_TIMES_KEPT = 1 << 16
_time_text_us = lru_cache(maxsize=_TIMES_KEPT)(_time_us)


def _time_us_kept(value: Any) -> Optional[int]:
    """:func:`_time_us`, remembered by text."""
    return _time_text_us(value) if type(value) is str else _time_us(value)


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
    checked = [_read_pool(pool, f"pools[{i}]") for i, pool in enumerate(pools)]
    seen = set()
    for pool in checked:
        if pool.name in seen:
            raise ValueError(f"pool names must be unique, got {pool.name!r} twice")
        seen.add(pool.name)
    return checked


#: The keys of a pool given as a mapping: :class:`Pool`'s fields (``types`` optional).
_POOL_KEYS = ("name", "max_tokens", "max_entries", "types")


def _read_pool(pool: Any, where: str = "pool") -> Pool:
    """``pool`` as a :class:`Pool`: a Pool, or a mapping with exactly Pool's fields.

    The one reading of a pool given as data (every component, the command
    line's pools files): an unknown or missing key is a ValueError naming
    ``where`` (e.g. ``"pools[0]"``) and the key; the values are Pool's own.
    """
    if isinstance(pool, Pool):
        return pool
    keys = ", ".join(_POOL_KEYS)
    if not isinstance(pool, Mapping):
        raise TypeError(f"{where} must be a Pool or a mapping with the keys {keys},"
                        f" got {type(pool).__name__}")
    unknown = [key for key in pool if key not in _POOL_KEYS]
    if unknown:
        raise ValueError(f"{where} has unknown key(s) {', '.join(map(str, unknown))}"
                         f"{_did_you_mean(unknown[0], _POOL_KEYS)}; a pool has {keys}")
    missing = [key for key in _POOL_KEYS[:3] if key not in pool]
    if missing:
        raise ValueError(f"{where} lacks {', '.join(missing)}; a pool has {keys}")
    try:
        return Pool(pool["name"], pool["max_tokens"], pool["max_entries"], pool.get("types"))
    except (TypeError, ValueError) as exc:
        raise type(exc)(f"{where}: {exc}") from None


#: The context keys the default score reads (:func:`default_scorer`, :func:`make_scorer`).
_CONTEXT_KEYS = ("message", "project", "tags")


def _check_context_keys(context: Mapping[str, Any]) -> None:
    """Refuse a context key the default score does not read: a typo is never ignored.

    A custom scorer gets the context as given, every key; this check is for
    the default score only (``_options_of(scorer) is not None``).
    """
    for key in context:
        if key not in _CONTEXT_KEYS:
            raise ValueError(
                f"context has an unknown key {key!r}{_did_you_mean(key, _CONTEXT_KEYS)}:"
                " the default scorer reads 'message', 'project' and 'tags';"
                " a custom scorer gets every key")


def _did_you_mean(key: Any, known: Sequence[str]) -> str:
    """`` (did you mean 'x'?)`` for the known name closest to ``key``, else ``""``."""
    if not isinstance(key, str):
        return ""
    import difflib  # only on the error path

    close = difflib.get_close_matches(key, known, n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


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


# -- The strict reading: strict=True, and poolsplit_core.checks --------------

# The spec reads a store leniently ("Always" is contextual, an unreadable created 0 days
# old); strict=True and the package's checks (every component's writes) refuse it, naming
# each problem. The rules live here, once, so that this file alone can apply them.

#: How far past ``now`` a strict ``created`` may be. One day: a naive local time read as
#: UTC is at most 14 hours ahead (UTC+14), and a clock a few hours off passes too.
_FUTURE_TOLERANCE = timedelta(days=1)
_SCOPES = ("always", "contextual")
_SHOWN_LONGEST = 80  # a value shown in a problem is cut to this many characters
_TIME_RULE = ("must be an ISO 8601 time in the extended format (YYYY-MM-DD, optionally"
              " then THH:MM:SS, a fraction and Z or +HH:MM), such as '2026-01-31T09:00:00Z'")


def _check_strict(strict: Any) -> bool:
    if not isinstance(strict, bool):
        raise TypeError(f"strict must be a bool, got {strict!r}")
    return strict


def _refuse(problems: Sequence[str]) -> None:
    """One ValueError listing every problem, if there is one."""
    if problems:
        count = f"{len(problems)} problem{'s' if len(problems) > 1 else ''}"
        raise ValueError(f"{count} in the entries:\n" + "\n".join(f"  {p}" for p in problems))


def _store_problems(entries: Iterable[Any], now: Optional[datetime],
                    labels: Optional[Sequence[str]] = None) -> List[str]:
    """Every problem of a store, entry by entry: its fields, a future created, a repeated id.

    ``labels`` name the entries (default: ``entry id='x'``, else its index).
    """
    moment = _utc_now(now)
    listed = list(entries)
    again = {i: (first, entry_id) for first, i, entry_id in _repeated_ids(listed)}
    problems: List[str] = []
    for i, entry in enumerate(listed):
        label = _problem_label(entry, i) if labels is None else labels[i]
        problems += _entry_problems(entry, label)
        if not isinstance(entry, Mapping):
            continue
        problems += _future_problems(entry, label, moment)
        if i in again:
            first, entry_id = again[i]
            problems.append(
                f"{f'entry at index {i}' if labels is None else label}: id"
                f" {_shown_value(entry_id)} is also the id of the entry at index {first};"
                " each entry needs its own id")
    return problems


def _repeated_ids(entries: Iterable[Any]) -> Iterator[Tuple[int, int, Any]]:
    """``(first, i, id)`` for each entry ``i`` whose hashable ``id`` entry ``first`` holds too."""
    first: Dict[Any, int] = {}  # each id -> the index of the first entry holding it
    for i, entry in enumerate(entries):
        entry_id = entry.get("id") if isinstance(entry, Mapping) else None
        if entry_id is not None and _hashable(entry_id):
            held = first.setdefault(entry_id, i)
            if held != i:
                yield held, i, entry_id


def _future_problems(entry: Mapping[str, Any], label: str, now: datetime) -> List[str]:
    """A ``created`` later than ``now`` (aware) plus :data:`_FUTURE_TOLERANCE`, named."""
    created = entry.get("created")
    at = None if created is None else _time_us(created)
    if at is None or at <= _epoch_us(now) + _FUTURE_TOLERANCE // _MICROSECOND:
        return []
    return [f"{label}: created must be at most {_FUTURE_TOLERANCE.days} day after now"
            f" ({now.isoformat()}), got {_shown_value(created)}: a time in the future counts"
            " as 0 days old, brand new, until that day"]


def _entry_problems(entry: Any, label: str) -> List[str]:
    """The problems of one entry's fields, each starting with ``label`` (no clock, no store)."""
    if not isinstance(entry, Mapping):
        return [f"{label}: must be a mapping (dict), got {type(entry).__name__}"]
    problems: List[str] = []

    def refuse(key: str, rule: str, why: str = "") -> None:
        problems.append(f"{label}: {key} {rule}, got {_shown_value(entry[key])}{why}")

    scope = entry.get("scope")
    if scope is not None and not (isinstance(scope, str) and scope in _SCOPES):
        refuse("scope", "must be 'always', 'contextual' or absent")
    if "status" in entry and not _filled_str(entry["status"]):
        refuse("status", "must be a non-empty str, such as 'active'")
    created = entry.get("created")
    if created is not None and _time_us(created) is None:
        refuse("created", _TIME_RULE + ", or a datetime", _time_hint(created))
    count = entry.get("token_count")
    if count is not None and not (type(count) is not bool and isinstance(count, int)
                                  and count > 0):
        refuse("token_count", "must be a positive int")
    if "tags" in entry:
        problems += _tag_problems(entry["tags"], label)
    pointer = entry.get("superseded_by")
    if pointer is not None and not isinstance(pointer, str):
        refuse("superseded_by", "must be a str (the id of the entry that replaces it) or None")
    if "base_priority" in entry and not _finite_real(entry["base_priority"]):
        refuse("base_priority", "must be a finite number")
    if "type" in entry and not _filled_str(entry["type"]):
        refuse("type", "must be a non-empty str")
    if "user_id" in entry and not (_filled_str(entry["user_id"])
                                   and entry["user_id"].strip()):
        refuse("user_id", "must be a non-empty str, not only whitespace")
    return problems


def _problem_label(entry: Any, index: int) -> str:
    """``entry id='x'`` for an entry with a hashable id, else ``entry at index 3``."""
    if isinstance(entry, Mapping):
        entry_id = entry.get("id")
        if entry_id is not None and _hashable(entry_id):
            return f"entry id={_shown_value(entry_id)}"
    return f"entry at index {index}"


def _tag_problems(tags: Any, label: str) -> List[str]:
    if tags is None:
        return []
    if isinstance(tags, str):
        parts = [part.strip() for part in tags.split(",") if part.strip()] or [tags]
        written = ", ".join(f'"{part}"' for part in parts)
        return [f"{label}: tags is the bare str {_shown_value(tags)}, read as one tag;"
                f" write tags=[{written}]"]
    rule = f"{label}: tags must be a list of str"
    if isinstance(tags, (bytes, Mapping)) or not isinstance(tags, Iterable):
        return [f"{rule}, got {type(tags).__name__}"]
    if iter(tags) is tags:  # a generator: reading it would use it up, and the core refuses it
        return [f"{rule}, got a one-shot {type(tags).__name__}"]
    for tag in tags:
        if not isinstance(tag, str):
            return [f"{rule}, got {_shown_value(tags)} (holding {_shown_value(tag)})"]
    return []


def _filled_str(value: Any) -> bool:
    return isinstance(value, str) and value != ""


def _finite_real(value: Any) -> bool:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:  # an int too large for a float: the core cannot read it
        return False


def _shown_value(value: Any) -> str:
    """``repr(value)``, cut to :data:`_SHOWN_LONGEST` characters (a datetime in ISO form)."""
    text = repr(value.isoformat()) if isinstance(value, datetime) else repr(value)
    return text if len(text) <= _SHOWN_LONGEST else text[:_SHOWN_LONGEST - 3] + "..."


# The ISO 8601 forms the core does not read (see _ISO) but a strict reading recognises,
# to name the extended spelling of the same instant: a calendar date in the basic or the
# extended format, a week date or an ordinal date, then a time in either format and an
# offset, with seconds too.
_ISO_OTHER = re.compile(
    r"(?:(?P<week>[0-9]{4}-?W[0-9]{2}-?[1-7])|(?P<ordinal>[0-9]{4}-?[0-9]{3})"
    r"|(?P<date>[0-9]{4}-?[0-9]{2}-?[0-9]{2}))"
    r"(?:[Tt ](?P<time>(?P<hh>[0-9]{2})(?::?(?P<mi>[0-9]{2})"
    r"(?::?(?P<ss>[0-9]{2})(?P<frac>[.,][0-9]+)?)?)?))?"
    r"\s*(?P<zone>[Zz]|(?P<sign>[+-])(?P<oh>[0-9]{2})(?::?(?P<om>[0-9]{2})"
    r"(?::?(?P<os>[0-9]{2}))?)?)?"
)


def _time_hint(value: Any) -> str:
    """``, an ISO 8601 week date: write '2025-12-29', the same day`` (:func:`_other_iso`)."""
    other = _other_iso(value)
    if other is None:
        return ""
    return f", {other[0]}: write {other[1]!r}, the same {'instant' if 'T' in other[1] else 'day'}"


def _other_iso(value: Any) -> Optional[Tuple[str, str]]:
    """A time's other ISO 8601 form and its extended spelling (the same instant), or None.

    The forms: basic format, a week or an ordinal date, an offset with seconds.
    """
    match = _ISO_OTHER.fullmatch(value.strip()) if isinstance(value, str) else None
    if match is None:
        return None
    got = match.groupdict()
    if got["week"]:
        form = "an ISO 8601 week date"
    elif got["ordinal"]:
        form = "an ISO 8601 ordinal date"
    elif "-" not in got["date"] or (got["mi"] and ":" not in got["time"]):
        form = "ISO 8601's basic format"
    elif got["os"]:
        form = "an offset with seconds"
    else:
        return None  # the extended format with a field out of range: no other spelling
    try:
        day = _calendar_day(got)
        moment = datetime(day.year, day.month, day.day, int(got["hh"] or 0),
                          int(got["mi"] or 0), int(got["ss"] or 0))
        zone = ""
        if got["sign"]:
            offset = timedelta(hours=int(got["oh"]), minutes=int(got["om"] or 0),
                               seconds=int(got["os"] or 0))
            if offset >= timedelta(days=1):
                return None
            if got["os"]:  # no extended offset has seconds: the same instant in UTC
                moment -= offset if got["sign"] == "+" else -offset
                zone = "Z"
            else:
                zone = f"{got['sign']}{got['oh']}:{got['om'] or '00'}"
        elif got["zone"]:
            zone = "Z"
    except (ValueError, OverflowError):  # no such day or time
        return None
    timed = got["hh"] is not None or bool(got["os"])  # (converted to UTC: a time of day)
    written = moment.date().isoformat() + (
        f"T{moment:%H:%M:%S}" + ("." + got["frac"][1:] if got["frac"] else "") if timed
        else "") + zone
    if _time_us(written) is None:  # (a year outside 0001-9999 after the offset)
        return None
    return form, written


def _created_note(entry: Mapping[str, Any], now: datetime) -> str:
    """Why an entry's ``created`` counted as 0 days old although it names a time; else ""."""
    created = entry.get("created")
    if created is None:
        return ""
    at, other, shown = _time_us(created), _other_iso(created), _shown_value(created)
    if at is None:
        why = (f"{other[0]}, which the core does not read ({other[1]!r} in the extended format)"
               if other else "not a time the core reads (ISO 8601's extended format)")
    elif at > _epoch_us(now):
        why = f"later than now ({now.isoformat()})"
    else:
        return ""
    return f"created {shown} is {why}: counted as 0 days old"


def _calendar_day(got: Mapping[str, Optional[str]]) -> date:
    """The day of a week, ordinal or calendar date matched by :data:`_ISO_OTHER`."""
    if got["week"]:
        digits = got["week"].replace("-", "")  # YYYYWwwD
        return date.fromisocalendar(int(digits[:4]), int(digits[5:7]), int(digits[7]))
    if got["ordinal"]:
        digits = got["ordinal"].replace("-", "")  # YYYYDDD
        first = date(int(digits[:4]), 1, 1)
        day = first + timedelta(days=int(digits[4:]) - 1)
        if day.year != first.year:
            raise ValueError(f"no day {digits[4:]} in {first.year}")
        return day
    digits = cast(str, got["date"]).replace("-", "")  # YYYYMMDD
    return date(int(digits[:4]), int(digits[4:6]), int(digits[6:]))
