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
correction is never crowded out.

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

import dataclasses
import heapq
import inspect
import math
import numbers
import re
import threading
from collections import defaultdict
from dataclasses import dataclass
from datetime import date, datetime, timedelta, timezone
from itertools import repeat
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
    Sequence,
    Set,
    Tuple,
    TypeVar,
    cast,
)

__version__ = "0.1.0"

__all__ = [
    "OUTCOMES",
    "AlwaysScopeOverflowError",
    "Decision",
    "Explanation",
    "Ledger",
    "Pool",
    "PreparedStore",
    "__version__",
    "default_is_active",
    "default_scorer",
    "default_token_counter",
    "explain_pools",
    "retrieve",
    "retrieve_pools",
]

E = TypeVar("E", bound=Mapping[str, Any])
Scorer = Callable[..., float]
TokenCounter = Callable[[str], int]
ActivityTest = Callable[[Mapping[str, Any]], bool]


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

    The factors (the README's "The default scorer, exactly"):

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

# Each factor of the table in the README ("The default scorer, exactly") is
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

    __slots__ = ("_pattern", "project", "tags", "words")

    def __init__(self, words: FrozenSet[str], project: Any, tags: FrozenSet[str]) -> None:
        self.words = words
        self.project = project
        self.tags = tags
        self._pattern: Optional[re.Pattern[str]] = None

    @property
    def pattern(self) -> re.Pattern[str]:
        """The message's words as whole ``[a-z0-9]`` runs: finds W(text) & W(message)."""
        if self._pattern is None:
            self._pattern = re.compile(
                r"(?<![a-z0-9])(?:" + "|".join(sorted(self.words)) + r")(?![a-z0-9])"
            )
        return self._pattern

    @classmethod
    def from_context(cls, context: Optional[Mapping[str, Any]]) -> _Query:
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
        return cls(next(_word_sets([message or ""])), context.get("project"), tags)


def _default_score(entry: Mapping[str, Any], query: _Query, now: datetime, label: str) -> float:
    """:func:`default_scorer` for a prepared query: every field read and checked."""
    base = _base_priority(entry, label)
    tags = _tag_set(entry.get("tags"), f"{label}: tags")
    shared = _shared_words(_content(entry), query) if query.words else 0
    return _entry_score(base, _time_us(entry.get("created")), tags, entry.get("project"),
                        shared, query, _epoch_us(now))


def _entry_score(
    base: float,
    created_us: Optional[int],
    tags: Collection[str],
    project: Any,
    shared_words: int,
    query: _Query,
    now_us: int,
) -> float:
    """The default score from an entry's parsed fields (both paths score through here)."""
    return _score(base, _recency(_days(created_us, now_us)), _tag_factor(tags, query),
                  _project_factor(project, query), _message_factor(shared_words, query))


def _score(base: float, recency: float, tags: float, project: float, message: float) -> float:
    """The default score: base priority x recency x tags x project x message, in that order."""
    return base * recency * tags * project * message


def _days(created_us: Optional[int], now_us: int) -> float:
    """The age at ``now`` in fractional days; undated or future counts as 0.

    Times are integer microseconds since the epoch: ``delta_us / 1_000_000``
    is exactly ``timedelta.total_seconds()``.
    """
    if created_us is None:
        return 0.0
    return max(0.0, (now_us - created_us) / 1_000_000 / _DAY_SECONDS)


def _recency(days: float) -> float:
    """Linear decay over 90 days with a floor of 0.3; at most ``_recency(0.0)`` (1.0)."""
    return max(0.3, 1.0 - 0.7 * days / 90)


def _tag_factor(tags: Collection[str], query: _Query) -> float:
    """``1 + 0.5 * shared / len(tags)`` for an entry with tags, else 1.0.

    At most ``_tag_factor(query.tags, query)``: every tag shared.
    """
    if not tags:
        return 1.0
    return 1 + 0.5 * len(query.tags.intersection(tags)) / len(tags)


def _project_factor(project: Any, query: _Query) -> float:
    """1.0 for an entry without a project, 1.5 for the query's project, else 0.5."""
    if project is None:
        return 1.0
    return 1.5 if project == query.project else 0.5


def _message_factor(shared_words: int, query: _Query) -> float:
    """``1 + 1.5 * overlap`` when the overlap is above 0.15, else 1.0.

    ``overlap = shared_words / |W(message)|``; at most
    ``_message_factor(len(query.words), query)``: every message word shared.
    """
    if query.words:
        overlap = shared_words / len(query.words)
        if overlap > 0.15:
            return 1 + 1.5 * overlap
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


def _shared_words(text: str, query: _Query) -> int:
    """``|W(text) & W(message)|``: only the message's words are looked for."""
    return len(set(query.pattern.findall(text.lower())))


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
    """
    checked = _check_pools(pools)
    call = _Call(entries, context, scorer, token_counter, is_active, now, max_always_tokens)
    taken: Set[int] = set()
    result: Dict[str, List[E]] = {}
    for pool in checked:
        picked = call.fill(pool, taken=taken)
        taken.update(id(entry) for entry in picked)
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
    """

    __slots__ = ("by_type", "cost", "entries", "limit", "loaded")

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

    def load(self, pool: Pool, usable: Optional[Callable[[int], bool]] = None) -> List[int]:
        """The always-scope entries ``pool`` loads first: every usable one of its types."""
        tier = sorted(i for entry_type, members in self.by_type if pool.accepts(entry_type)
                      for i in members)
        if usable is not None:
            tier = [i for i in tier if usable(i)]
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
        self.query = _Query.from_context(context)
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
        self.contextual = [i for i in self.active if entries_[i].get("scope") != "always"]
        self.always = _AlwaysTier(
            [(entries_[i].get("type", "note"), (i,)) for i in self.active
             if entries_[i].get("scope") == "always"],
            entries_, self.cost, max_always_tokens)

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
        always = self.always.load(pool, (lambda i: id(entries[i]) not in taken) if taken else None)
        picked: List[Any] = [entries[i] for i in always]

        lazy = trace is None and self.scorer is default_scorer and bool(self.query.words)
        message_max = _message_factor(len(self.query.words), self.query)
        contextual: List[Any] = []
        for i in self.contextual:
            entry = entries[i]
            if id(entry) in taken or not pool.accepts(entry.get("type", "note")):
                continue
            if lazy:
                partial = self.partial_score(i)
                # The largest score over the message factor's range [1, max].
                contextual.append(_Marker(-max(partial, partial * message_max), "", "", _LAZY, i))
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
        return _Candidate(-self.score(i), _sort_text(entry, "created"), _sort_text(entry, "id"),
                          i)

    def partial_score(self, i: int) -> float:
        """The default score with its message factor at 1 (validated once)."""
        if i not in self.partial_scores:
            entry = self.entries[i]
            label = _label(entry, i)
            tags = _tag_set(entry.get("tags"), f"{label}: tags")
            days = _days(_time_us(entry.get("created")), self.now_us)
            value = _score(_base_priority(entry, label), _recency(days),
                           _tag_factor(tags, self.query),
                           _project_factor(entry.get("project"), self.query), 1.0)
            self.partial_scores[i] = _check_score(value, label)
        return self.partial_scores[i]

    def score(self, i: int) -> Any:
        if i not in self.scores:
            entry = self.entries[i]
            label = _label(entry, i)
            if self.scorer is default_scorer:
                shared = _shared_words(_content(entry), self.query) if self.query.words else 0
                # The message factor comes last: the score is the partial times it, exactly.
                value: Any = self.partial_score(i) * _message_factor(shared, self.query)
            elif self.scorer_takes_now:
                value = self.scorer(entry, self.context, now=self.now)
            else:
                value = self.scorer(entry, self.context)
            self.scores[i] = _check_score(value, label)
        return self.scores[i]

    def cost(self, i: int) -> int:
        if i not in self.costs:
            self.costs[i] = _cost(self.entries[i], i, self.token_counter)
        return self.costs[i]


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
    """
    checked = _check_pools(pools)
    call = _Call(entries, context, scorer, token_counter, is_active, now, max_always_tokens)
    trace: Dict[int, Decision] = {}
    ledgers: Dict[str, Ledger] = {}
    taken: Set[int] = set()
    for pool in checked:
        picked = call.fill(pool, taken=taken, trace=trace, ledgers=ledgers)
        taken.update(id(entry) for entry in picked)
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
    >>> len(store)
    4

    Building reads every entry once: activity, type, scope, cost, parsed
    ``created``, tags and the words of its content. Entries of one type,
    priority and project form a group whose order by score is known before
    any query (recency only falls with age), and per type and project every
    word and tag lists its entries newest first. A default-scorer query walks these lists
    best-first, each behind an upper bound of what it can still yield, and
    stops when the pool's cap or budget is met: it scores exactly only the
    entries that can still matter. Results are identical to
    :func:`retrieve_pools` over :attr:`entries` (same objects, same order).

    Entries are treated as immutable once added: the store notices nothing
    changed inside an entry afterwards; call :meth:`rebuild` after such a
    change. :meth:`add` appends without a rebuild. A scorer other than
    :func:`default_scorer` falls back to the stateless path, correctly.
    The store may be shared by threads: queries and :meth:`add` take one
    lock, so a query never sees an add half done.
    """

    def __init__(
        self,
        entries: Iterable[Mapping[str, Any]] = (),
        *,
        token_counter: TokenCounter = default_token_counter,
        is_active: ActivityTest = default_is_active,
    ) -> None:
        for name, fn in (("token_counter", token_counter), ("is_active", is_active)):
            if not callable(fn):
                raise TypeError(f"{name} must be callable, got {type(fn).__name__}")
        self.token_counter = token_counter
        self.is_active = is_active
        self._lock = threading.Lock()
        self._index = _Index(token_counter, is_active)
        self.rebuild(entries)

    @property
    def entries(self) -> List[Mapping[str, Any]]:
        """The stored entries, in the order they were added (a new list)."""
        return list(self._index.entries)

    def __len__(self) -> int:
        return len(self._index.entries)

    def rebuild(self, entries: Optional[Iterable[Mapping[str, Any]]] = None) -> None:
        """Prepare again from ``entries`` (default: the stored ones)."""
        listed = _check_entries(self._index.entries if entries is None else entries)
        index = _Index(self.token_counter, self.is_active)
        index.build(listed)
        with self._lock:
            self._index = index

    def add(self, entry: Mapping[str, Any]) -> None:
        """Add one entry without a rebuild; it is never mutated."""
        with self._lock:
            if not isinstance(entry, Mapping):
                raise TypeError(
                    f"entry at index {len(self._index.entries)} must be a mapping (dict),"
                    f" got {type(entry).__name__}"
                )
            self._index.insert(entry)

    def retrieve_pools(
        self,
        pools: Sequence[Pool],
        context: Optional[Mapping[str, Any]] = None,
        *,
        scorer: Scorer = default_scorer,
        now: Optional[datetime] = None,
        max_always_tokens: Optional[int] = None,
    ) -> Dict[str, List[Mapping[str, Any]]]:
        """What :func:`retrieve_pools` gives over the stored entries."""
        if scorer is not default_scorer:
            decided = self.decide(pools, context, scorer=scorer, now=now,
                                  max_always_tokens=max_always_tokens)
            return {name: [d.entry for d in picked] for name, picked in decided.items()}
        entries, picks = self._picks(_check_pools(pools), context, now, [], None,
                                     max_always_tokens)
        return {name: [entries[pick.position] for pick in picked] for name, picked in picks.items()}

    def explain_pools(
        self,
        pools: Sequence[Pool],
        context: Optional[Mapping[str, Any]] = None,
        *,
        scorer: Scorer = default_scorer,
        now: Optional[datetime] = None,
        extra: Sequence[Mapping[str, Any]] = (),
        include: Optional[Callable[[Mapping[str, Any]], bool]] = None,
        max_always_tokens: Optional[int] = None,
    ) -> Explanation:
        """What :func:`explain_pools` gives over the stored entries (every entry is read).

        ``extra`` and ``include`` are as for :meth:`decide`; entries that
        ``include`` rejects get no record at all (another tenant's entries are
        not even named). A Decision's ``index`` is its position among the
        stored entries followed by ``extra``.
        """
        checked = _check_pools(pools)
        entries = self._entries_with(_check_entries(extra))
        return self._stateless(entries, checked, context, scorer, now, include,
                               max_always_tokens)

    def decide(
        self,
        pools: Sequence[Pool],
        context: Optional[Mapping[str, Any]] = None,
        *,
        scorer: Scorer = default_scorer,
        now: Optional[datetime] = None,
        extra: Sequence[Mapping[str, Any]] = (),
        include: Optional[Callable[[Mapping[str, Any]], bool]] = None,
        max_always_tokens: Optional[int] = None,
    ) -> Dict[str, List[Decision]]:
        """The loaded entries of each pool as Decisions (score, cost, rank), in load order.

        ``extra`` entries join this query only (e.g. a vector search's
        candidates), after the stored ones. ``include``, when given, keeps
        only the entries it accepts -- always-scope ones too -- before
        pool-split runs (a tenant filter). The result equals
        ``explain_pools(...).loaded()`` over the kept entries; a Decision's
        ``index`` is its position among the stored entries followed by ``extra``.
        ``max_always_tokens`` is as for :func:`retrieve_pools`, over the kept entries.
        """
        checked = _check_pools(pools)
        extra = _check_entries(extra)
        if scorer is not default_scorer:
            entries = self._entries_with(extra)
            return self._stateless(entries, checked, context, scorer, now, include,
                                   max_always_tokens).loaded()
        entries, picks = self._picks(checked, context, now, extra, include, max_always_tokens)
        return {
            name: [Decision(entries[i], i, outcome, name, score=score, cost=cost, rank=rank)
                   for i, outcome, score, cost, rank in picked]
            for name, picked in picks.items()
        }

    def _picks(
        self,
        pools: List[Pool],
        context: Optional[Mapping[str, Any]],
        now: Optional[datetime],
        extra: List[Mapping[str, Any]],
        include: Optional[Callable[[Mapping[str, Any]], bool]],
        max_always_tokens: Optional[int],
    ) -> Tuple[List[Mapping[str, Any]], Dict[str, List[_Pick]]]:
        """The default-scorer walk; returns the entries it indexed into."""
        with self._lock:  # a query never sees an add half done
            index = self._index
            entries = index.entries + extra if extra else index.entries
            query = _PreparedQuery(index, entries, context, now, include, max_always_tokens)
            return entries, query.run(pools)

    def _entries_with(self, extra: List[Mapping[str, Any]]) -> List[Mapping[str, Any]]:
        """The stored entries then ``extra``, copied under the lock for a stateless pass.

        A copy, not the stored list: an add may append while the pass runs.
        """
        with self._lock:
            return [*self._index.entries, *extra]

    def _stateless(
        self,
        entries: List[Mapping[str, Any]],
        pools: List[Pool],
        context: Optional[Mapping[str, Any]],
        scorer: Scorer,
        now: Optional[datetime],
        include: Optional[Callable[[Mapping[str, Any]], bool]],
        max_always_tokens: Optional[int],
    ) -> Explanation:
        """explain_pools over the kept entries, with indices into ``entries``."""
        kept = list(range(len(entries))) if include is None else [
            i for i, entry in enumerate(entries) if include(entry)]
        got = explain_pools([entries[i] for i in kept], pools, context, scorer=scorer,
                            token_counter=self.token_counter, is_active=self.is_active,
                            now=now, max_always_tokens=max_always_tokens)
        if include is None:
            return got
        return Explanation(
            tuple(dataclasses.replace(d, index=kept[d.index]) for d in got.decisions),
            got.ledgers,
        )


_UNDATED = -(1 << 62)  # sorts before every real time key: undated counts as newest


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
        try:
            base = _base_priority(entry, "")
            tags = tuple(_tag_set(entry.get("tags"), ""))
            project = entry.get("project")
            hash((self.type, project))
        except (TypeError, ValueError):
            return  # irregular: scored exactly, so its error surfaces as usual
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

    def __init__(self, token_counter: TokenCounter, is_active: ActivityTest) -> None:
        self.token_counter, self.is_active = token_counter, is_active
        self.entries: List[Mapping[str, Any]] = []
        self.facts: List[_Facts] = []
        self.always: Dict[Any, List[int]] = {}  # type -> always-scope entries, store order
        self.always_unhashable: List[Tuple[Any, List[int]]] = []  # (type, [entry]) pairs
        self.irregular: List[int] = []
        self.groups: Dict[Tuple[Any, float, Any], List[int]] = {}  # newest first
        self.min_cost: Dict[Tuple[Any, float, Any], List[int]] = {}  # of group[j:]
        # (type, project) -> word or tag -> entries, newest first
        self.by_word: Dict[Tuple[Any, Any], Dict[str, List[int]]] = {}
        self.by_tag: Dict[Tuple[Any, Any], Dict[str, List[int]]] = {}
        self.max_base: Dict[Tuple[Any, Any], float] = {}  # highest regular priority
        self.vocabulary: Dict[str, str] = {}  # one string object per distinct word
        # Pool types -> its groups and (type, project) kinds; cleared when either set grows.
        self.layout: Dict[Any, Tuple[List[Tuple[Any, float, Any]], List[Tuple[Any, Any]]]] = {}

    def facts_of(self, entries: Sequence[Mapping[str, Any]], start: int) -> List[_Facts]:
        """The facts of ``entries`` (store indices from ``start``); words are read in bulk."""
        facts = [_Facts(entry, i, self.token_counter) if self.is_active(entry) else _INACTIVE
                 for i, entry in enumerate(entries, start)]
        regular = [(f, entry) for f, entry in zip(facts, entries) if f.group is not None]
        for (f, _), words in zip(regular, _word_sets([_content(entry) for _, entry in regular])):
            f.words = words
        return facts

    def build(self, entries: List[Mapping[str, Any]]) -> None:
        """Index ``entries`` into this empty index.

        Regular entries are indexed newest first, so every group, word and
        tag list comes out in order without a sort; and one (type, project)
        kind after another, so that the lists being filled stay few (a
        quarter faster here than in time order alone).
        """
        self.entries = entries
        self.facts = self.facts_of(entries, 0)
        kinds: Dict[Tuple[Any, Any], int] = {}
        order = []
        for i, facts in enumerate(self.facts):
            self.register(i, facts)
            if facts.group is not None:
                kind = kinds.setdefault((facts.type, facts.group[2]), len(kinds))
                order.append((kind, facts.time_key, i))
        order.sort()
        for _, _, i in order:
            self.file(i, self.facts[i])
        self.min_cost = {g: self.suffix_min(members) for g, members in self.groups.items()}

    def append(self, entry: Mapping[str, Any]) -> _Facts:
        """Record one entry at the end of every list it belongs to."""
        i = len(self.entries)
        facts = self.facts_of([entry], i)[0]
        self.entries.append(entry)
        self.facts.append(facts)
        self.register(i, facts)
        if facts.group is not None:
            self.file(i, facts)
        return facts

    def register(self, i: int, facts: _Facts) -> None:
        """File an always-scope or irregular entry (kept in store order)."""
        if facts.active and facts.always:
            try:
                self.always.setdefault(facts.type, []).append(i)
            except TypeError:  # a type no dict can key (a list): the scorer still takes it
                self.always_unhashable.append((facts.type, [i]))
        elif facts.active and facts.group is None:
            self.irregular.append(i)

    def file(self, i: int, facts: _Facts) -> None:
        """Append a regular entry to its group and to its kind's word and tag lists."""
        group = cast(Tuple[Any, float, Any], facts.group)
        vocabulary = self.vocabulary.setdefault
        facts.words = tuple(map(vocabulary, facts.words, facts.words))
        if group not in self.groups:
            self.groups[group] = []
            self.layout.clear()
        self.groups[group].append(i)
        kind = (facts.type, group[2])
        if facts.base > self.max_base.get(kind, 0.0):
            if kind not in self.max_base:
                self.layout.clear()
            self.max_base[kind] = facts.base
        for by, items in ((self.by_word, facts.words), (self.by_tag, facts.tags)):
            lists = by.get(kind)
            if lists is None:
                lists = by[kind] = defaultdict(list)
            for item in items:
                lists[item].append(i)

    def time_key(self, i: int) -> int:
        return self.facts[i].time_key

    def layout_for(self, pool: Pool) -> Tuple[List[Tuple[Any, float, Any]],
                                              List[Tuple[Any, Any]]]:
        """The groups and (type, project) kinds a pool draws from (cached)."""
        got = self.layout.get(pool.types)
        if got is None:
            got = ([g for g in self.groups if pool.accepts(g[0])],
                   [kind for kind in self.max_base if pool.accepts(kind[0])])
            self.layout[pool.types] = got
        return got

    def suffix_min(self, members: List[int]) -> List[int]:
        out = [0] * len(members)
        low = None
        for j in range(len(members) - 1, -1, -1):
            cost = self.facts[members[j]].cost
            low = cost if low is None or cost < low else low
            out[j] = low
        return out

    def insert(self, entry: Mapping[str, Any]) -> None:
        """Add one entry in place, keeping every list in order."""
        facts = self.append(entry)
        if not facts.active or facts.always or facts.group is None:
            return
        i = len(self.entries) - 1
        key = self.time_key
        members = self.groups[facts.group]
        members.pop()  # appended at the end; put it in its place
        at = _insort(members, i, key)
        low = self.min_cost.setdefault(facts.group, [])
        low.insert(at, min(facts.cost, low[at]) if at < len(low) else facts.cost)
        j = at - 1
        while j >= 0 and low[j] > facts.cost:
            low[j] = facts.cost
            j -= 1
        kind = (facts.type, facts.group[2])
        for lists, items in ((self.by_word[kind], facts.words), (self.by_tag[kind], facts.tags)):
            for item in items:
                postings = lists[item]
                postings.pop()
                _insort(postings, i, key)


def _insort(members: List[int], i: int, key: Callable[[int], int]) -> int:
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
    """One loaded entry inside a prepared query."""

    position: int  # in the store, then this query's extras
    outcome: str  # "always" or "selected"
    score: Optional[float]  # None for always-scope entries
    cost: int
    rank: int


class _Stream(NamedTuple):
    """Entries newest first that one heap marker stands for, and how to bound them.

    A group stream (type, priority, project) owes entries that share no tag
    and no word with the query: its tag and message factors are 1. A word or
    tag stream of a (type, project) kind owes entries that may share both: it
    carries the kind's top priority and the largest tag and message factors.
    """

    members: List[int]
    group: Tuple[Any, float, Any]  # (type, base priority or the kind's top one, project)
    is_group: bool
    tags: float  # the largest tag factor an entry of this stream can have
    message: float  # the largest message factor an entry of this stream can have


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
       at most 1) is >= every not-yet-started stream's.
    3) A marker sorts before every candidate of an equal score, so a candidate
       pops only when nothing unread can beat it: the fill order is the
       stateless one, ``(-score, created, id, index)``.
    4) A stream skips an entry only when it can never load in this pool: taken
       by an earlier pool, filtered out by ``include``, already seen, or
       costing more than the tokens left (tokens only decrease); a group's
       suffix-minimum cost skips its whole tail at once.
    5) Always-scope entries are never in a stream: :class:`_AlwaysTier` loads
       them first, outside the budget.
    """

    def __init__(
        self,
        index: _Index,
        entries: List[Mapping[str, Any]],
        context: Optional[Mapping[str, Any]],
        now: Optional[datetime],
        include: Optional[Callable[[Mapping[str, Any]], bool]],
        max_always_tokens: Optional[int],
    ) -> None:
        self.index, self.entries, self.include = index, entries, include
        self.query = _Query.from_context(context)
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

    def run(self, pools: List[Pool]) -> Dict[str, List[_Pick]]:
        taken: Set[int] = set()
        out: Dict[str, List[_Pick]] = {}
        for pool in pools:
            picked = self.fill(pool, taken)
            taken.update(id(self.entries[pick.position]) for pick in picked)
            out[pool.name] = picked
        self.always.check_ceiling()
        return out

    def usable(self, i: int, pool: Pool, taken: AbstractSet[int]) -> bool:
        facts = self.facts[i]
        entry = self.entries[i]
        return (facts.active and pool.accepts(facts.type) and id(entry) not in taken
                and (self.include is None or bool(self.include(entry))))

    def score(self, i: int) -> float:
        if i not in self.scores:
            facts = self.facts[i]
            group = facts.group
            if group is not None:
                # Regular entries: 0 < base < 1e300 keeps the product finite.
                query = self.query
                shared = len(query.words.intersection(facts.words)) if query.words else 0
                self.scores[i] = _entry_score(facts.base, facts.created_us, facts.tags, group[2],
                                              shared, query, self.now_us)
            else:
                entry = self.entries[i]
                label = _label(entry, i)
                value = _default_score(entry, self.query, self.now, label)
                self.scores[i] = _check_score(value, label)
        return self.scores[i]

    def fill(self, pool: Pool, taken: AbstractSet[int]) -> List[_Pick]:
        facts = self.facts
        usable = None
        if taken or self.include is not None:
            def usable(i: int) -> bool:
                return self.usable(i, pool, taken)
        always = self.always.load(pool, usable)
        picked = [_Pick(i, "always", None, facts[i].cost, rank) for rank, i in enumerate(always)]

        tokens_left, slots_left = pool.max_tokens, pool.max_entries
        if slots_left == 0 or tokens_left == 0:
            return picked
        heap: List[Any] = [self.key(i) for i in self.exact if self.usable(i, pool, taken)]
        streams, ceilings = self.streams(pool)
        order = sorted(range(len(streams)), key=ceilings.__getitem__, reverse=True)
        if order:
            heap.append(_Marker(-ceilings[order[0]], "", "", _START, 0))
        cursor = [0] * len(streams)
        seen: Set[int] = set()
        heapq.heapify(heap)
        while heap and slots_left > 0 and tokens_left > 0:
            item = heapq.heappop(heap)
            if type(item) is _Marker:
                if item.kind == _START:  # start the next stream, and stand for the rest
                    at = item.ref
                    self.push_marker(heap, streams, cursor, order[at], pool, taken,
                                     tokens_left, seen)
                    if at + 1 < len(order):
                        heapq.heappush(heap, _Marker(-ceilings[order[at + 1]], "", "", _START,
                                                     at + 1))
                    continue
                s = item.ref  # a started stream: visit its next entry
                i = streams[s].members[cursor[s]]
                cursor[s] += 1
                if i not in seen and self.visitable(i, pool, taken, tokens_left):
                    seen.add(i)
                    heapq.heappush(heap, self.key(i))
                self.push_marker(heap, streams, cursor, s, pool, taken, tokens_left, seen)
                continue
            i = item.position
            cost = facts[i].cost
            if cost <= tokens_left:
                picked.append(_Pick(i, "selected", self.scores[i], cost, len(picked)))
                tokens_left -= cost
                slots_left -= 1
        return picked

    def streams(self, pool: Pool) -> Tuple[List[_Stream], List[float]]:
        """The pool's streams, and for each a bound that holds before it is read."""
        index, query = self.index, self.query
        groups, kinds = index.layout_for(pool)
        streams: List[_Stream] = []
        ceilings: List[float] = []
        no_tag, no_word = _tag_factor((), query), _message_factor(0, query)  # both 1.0
        top_recency = _recency(0.0)  # recency is at most this
        for group in groups:
            streams.append(_Stream(index.groups[group], group, True, no_tag, no_word))
            ceilings.append(_score(group[1], top_recency, no_tag,
                                   _project_factor(group[2], query), no_word))
        all_tags = _tag_factor(query.tags, query)  # every tag of the query shared
        for kind in kinds:
            top = index.max_base[kind]
            words = index.by_word.get(kind) or {}
            tags = index.by_tag.get(kind) or {}
            # An entry can share at most the message words this kind has at all.
            present = [word for word in query.words if word in words]
            message = _message_factor(len(present), query)
            # Entries with a shared tag are owed by the tag lists (tag factor
            # up to all_tags); the word lists owe the rest, whose tag factor is 1.
            for lists, items, tag_factor in ((words, present, no_tag),
                                             (tags, query.tags, all_tags)):
                ceiling = _score(top, top_recency, tag_factor,
                                 _project_factor(kind[1], query), message)
                for item in items:
                    if item in lists:
                        streams.append(_Stream(lists[item], (kind[0], top, kind[1]), False,
                                               tag_factor, message))
                        ceilings.append(ceiling)
        return streams, ceilings

    def key(self, i: int) -> _Candidate:
        sort_key = self.facts[i].sort_key
        return _Candidate(-self.score(i), sort_key[0], sort_key[1], i)

    def visitable(self, i: int, pool: Pool, taken: AbstractSet[int], tokens_left: int) -> bool:
        # An entry that cannot fit now never will: tokens only decrease.
        return self.facts[i].cost <= tokens_left and self.usable(i, pool, taken)

    def push_marker(self, heap: List[Any], streams: List[_Stream],
                    cursor: List[int], s: int, pool: Pool, taken: AbstractSet[int],
                    tokens_left: int, seen: AbstractSet[int]) -> None:
        """Push a marker bounding what stream ``s`` still owes, after skipping dead entries."""
        stream = streams[s]
        members, group = stream.members, stream.group
        at, end = cursor[s], len(members)
        low = self.index.min_cost.get(group) if stream.is_group else None
        facts, entries, include = self.facts, self.entries, self.include
        while at < end:
            if low is not None and low[at] > tokens_left:
                at = end  # nothing left in this group can fit
                break
            i = members[at]
            # Every member is active and of an accepted type; the rest is visitable().
            if (i not in seen and facts[i].cost <= tokens_left
                    and (not taken or id(entries[i]) not in taken)
                    and (include is None or include(entries[i]))):
                break
            at += 1
        cursor[s] = at
        if at == len(members):
            return
        # Invariant 1: the scorer's factors, each at its largest for what is left.
        recency = _recency(_days(facts[members[at]].created_us, self.now_us))
        bound = _score(group[1], recency, stream.tags, _project_factor(group[2], self.query),
                       stream.message)
        heapq.heappush(heap, _Marker(-bound, "", "", _STREAM, s))


# --------------------------------------------------------------------------
# Private helpers
# --------------------------------------------------------------------------

# ISO-8601 digits are ASCII: a timestamp in other digits is unparseable (0 days).
_ISO = re.compile(
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})"
    r"(?:[Tt ]([0-9]{2})(?::([0-9]{2})(?::([0-9]{2})(?:[.,]([0-9]+))?)?)?)?"
    r"\s*(?:([Zz])|([+-])([0-9]{2})(?::?([0-9]{2}))?)?"
)


def _tag_set(value: Any, what: str) -> FrozenSet[str]:
    if value is None:
        return frozenset()
    if isinstance(value, str):
        return frozenset((value,))
    if type(value) in (list, tuple) and all(type(tag) is str for tag in value):
        return frozenset(value)
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
    if isinstance(value, datetime):
        return _epoch_us(value if value.tzinfo is not None else value.replace(tzinfo=timezone.utc))
    if not isinstance(value, str):
        return None
    match = _ISO.fullmatch(value.strip())
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


def _sort_text(entry: Mapping[str, Any], key: str) -> str:
    value = entry.get(key)
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, datetime):
        return value.isoformat()
    return str(value)


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
