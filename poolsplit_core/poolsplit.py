# poolsplit.py -- MIT licence, see the LICENSE file shipped beside it.
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

import bisect
import heapq
import inspect
import math
import numbers
import re
import threading
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import (
    AbstractSet,
    Any,
    Callable,
    Collection,
    Dict,
    FrozenSet,
    Iterable,
    List,
    Mapping,
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

    The factors (SPEC.md, "The default scorer, exactly"):

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
    ``now`` when it takes no such parameter) and must return a finite number.
    """
    if not isinstance(pool, Pool):
        raise TypeError(f"pool must be a Pool, got {type(pool).__name__}")
    call = _Call(entries, context, scorer, token_counter, is_active, now)
    return call.fill(pool, taken=frozenset())


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
    """
    checked = _check_pools(pools)
    call = _Call(entries, context, scorer, token_counter, is_active, now)
    taken: Set[int] = set()
    result: Dict[str, List[E]] = {}
    for pool in checked:
        picked = call.fill(pool, taken=taken)
        taken.update(id(entry) for entry in picked)
        result[pool.name] = picked
    return result


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
    returns for the same arguments.
    """
    checked = _check_pools(pools)
    call = _Call(entries, context, scorer, token_counter, is_active, now)
    trace: Dict[int, Decision] = {}
    ledgers: Dict[str, Ledger] = {}
    taken: Set[int] = set()
    for pool in checked:
        picked = call.fill(pool, taken=taken, trace=trace, ledgers=ledgers)
        taken.update(id(entry) for entry in picked)
    active = set(call.active)
    decisions = []
    for i, entry in enumerate(call.entries):
        if i in trace:
            decisions.append(trace[i])
        else:
            outcome = "no_pool" if i in active else "inactive"
            decisions.append(Decision(entry, i, outcome))
    return Explanation(tuple(decisions), ledgers)


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

    Building reads every entry once: its activity, type, scope and cost,
    parsed ``created``, tags, and the words of its content into an inverted
    index. A query with the default scorer then scores exactly only the
    entries that share a message word or a tag with the context; the rest
    are walked best-first in groups whose order is known in advance, until
    the pool's cap or budget ends the fill. Results are identical to
    :func:`retrieve_pools` over :attr:`entries` (same objects, same order).

    Entries are treated as immutable once added: the store notices nothing
    changed inside an entry afterwards. After such a change call
    :meth:`rebuild`. :meth:`add` appends without a rebuild. A scorer other
    than :func:`default_scorer` falls back to the stateless path, correctly.
    Queries may run from many threads; :meth:`add` takes a lock.
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
        self.rebuild(entries)

    @property
    def entries(self) -> List[Mapping[str, Any]]:
        """The stored entries, in the order they were added (a new list)."""
        return list(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def rebuild(self, entries: Optional[Iterable[Mapping[str, Any]]] = None) -> None:
        """Prepare again from ``entries`` (default: the stored ones)."""
        listed = _check_entries(self._entries if entries is None else entries)
        with self._lock:
            self._entries: List[Mapping[str, Any]] = []
            self._facts: List[Optional[_Facts]] = []  # None: inactive
            self._always: List[int] = []
            self._irregular: List[int] = []  # scored exactly on every query
            self._groups: Dict[Tuple[Any, float, Any], _Group] = {}
            self._by_word: Dict[str, List[int]] = {}
            self._by_tag: Dict[str, List[int]] = {}
            for entry in listed:
                self._add(entry)

    def add(self, entry: Mapping[str, Any]) -> None:
        """Add one entry without a rebuild; it is never mutated."""
        if not isinstance(entry, Mapping):
            raise TypeError(
                f"entry at index {len(self._entries)} must be a mapping (dict),"
                f" got {type(entry).__name__}"
            )
        with self._lock:
            self._add(entry)

    def retrieve_pools(
        self,
        pools: Sequence[Pool],
        context: Optional[Mapping[str, Any]] = None,
        *,
        scorer: Scorer = default_scorer,
        now: Optional[datetime] = None,
    ) -> Dict[str, List[Mapping[str, Any]]]:
        """What :func:`retrieve_pools` gives over the stored entries."""
        decided = self.decide(pools, context, scorer=scorer, now=now)
        return {name: [d.entry for d in picked] for name, picked in decided.items()}

    def explain_pools(
        self,
        pools: Sequence[Pool],
        context: Optional[Mapping[str, Any]] = None,
        *,
        scorer: Scorer = default_scorer,
        now: Optional[datetime] = None,
    ) -> Explanation:
        """What :func:`explain_pools` gives over the stored entries (every entry is read)."""
        return explain_pools(self._entries, pools, context, scorer=scorer,
                             token_counter=self.token_counter, is_active=self.is_active,
                             now=now)

    def decide(
        self,
        pools: Sequence[Pool],
        context: Optional[Mapping[str, Any]] = None,
        *,
        scorer: Scorer = default_scorer,
        now: Optional[datetime] = None,
        extra: Sequence[Mapping[str, Any]] = (),
        include: Optional[Callable[[Mapping[str, Any]], bool]] = None,
    ) -> Dict[str, List[Decision]]:
        """The loaded entries of each pool as Decisions (score, cost, rank), in load order.

        ``extra`` entries join this query only (e.g. a vector search's
        candidates), after the stored ones. ``include``, when given, keeps
        only the entries it accepts -- always-scope ones too -- before
        pool-split runs (a tenant filter). The result equals
        ``explain_pools(...).loaded()`` over the kept entries.
        """
        checked = _check_pools(pools)
        entries = self._entries + _check_entries(extra) if extra else self._entries
        if scorer is not default_scorer:
            kept = [e for e in entries if include is None or include(e)]
            return explain_pools(kept, checked, context, scorer=scorer,
                                 token_counter=self.token_counter, is_active=self.is_active,
                                 now=now).loaded()
        return _PreparedQuery(self, entries, checked, context, now, include).run()

    # -- building ----------------------------------------------------------

    def _add(self, entry: Mapping[str, Any]) -> None:
        i = len(self._entries)
        self._entries.append(entry)
        if not self.is_active(entry):
            self._facts.append(None)
            return
        facts = _Facts.of(entry, i, self)
        self._facts.append(facts)
        if facts.always:
            self._always.append(i)
        elif facts.group is None:
            self._irregular.append(i)
        else:
            group = self._groups.get(facts.group)
            if group is None:
                group = self._groups[facts.group] = _Group(*facts.group)
            group.insert(i, facts)
            for word in facts.words:
                self._by_word.setdefault(word, []).append(i)
            for tag in facts.tags:
                self._by_tag.setdefault(tag, []).append(i)


class _Facts:
    """What the prepared path keeps of one active entry."""

    __slots__ = ("always", "cost", "created_us", "group", "sort_key", "tags", "type", "words")

    def __init__(self) -> None:
        self.always = False
        self.cost = 0
        self.created_us: Optional[int] = None
        self.group: Optional[Tuple[Any, float, Any]] = None
        self.sort_key: Tuple[str, str] = ("", "")
        self.tags: Tuple[str, ...] = ()
        self.type: Any = None
        self.words: FrozenSet[str] = frozenset()

    @classmethod
    def of(cls, entry: Mapping[str, Any], i: int, store: PreparedStore) -> _Facts:
        facts = cls()
        facts.type = entry.get("type", "note")
        facts.always = entry.get("scope") == "always"
        facts.cost = _cost(entry, i, store.token_counter)
        if facts.always:
            return facts
        facts.sort_key = (_sort_text(entry, "created"), _sort_text(entry, "id"))
        facts.created_us = _time_us(entry.get("created"))
        try:
            base = _base_priority(entry, "")
            facts.tags = tuple(_tag_set(entry.get("tags"), ""))
            project = entry.get("project")
            hash((facts.type, project))
        except (TypeError, ValueError):
            return facts  # irregular: scored exactly, so errors surface as usual
        # Only positive, comfortably finite priorities have a known order
        # (newest first) inside their group; the rest are scored exactly.
        if 0 < base < 1e300:
            facts.group = (facts.type, base, project)
            facts.words = _words(_content(entry))
        return facts


def _facts(facts: List[Optional[_Facts]], i: int) -> _Facts:
    """The facts of an entry known to be active (the callers checked)."""
    return cast(_Facts, facts[i])


class _Group:
    """Plain entries sharing (type, base priority, project), newest first.

    Without a shared word or tag, an entry's score is base x recency x
    project factor, and recency only falls with age: so the group's order is
    known before any query, and a query walks it best-first.
    """

    __slots__ = ("base", "keys", "min_cost", "order", "project", "type")

    def __init__(self, entry_type: Any, base: float, project: Any) -> None:
        self.type, self.base, self.project = entry_type, base, project
        self.keys: List[Tuple[int, int]] = []  # (0, 0) undated, else (1, -created_us)
        self.order: List[int] = []
        self.min_cost: List[int] = []  # min_cost[j]: the cheapest of order[j:]

    def insert(self, i: int, facts: _Facts) -> None:
        key = (0, 0) if facts.created_us is None else (1, -facts.created_us)
        at = bisect.bisect_right(self.keys, key)
        self.keys.insert(at, key)
        self.order.insert(at, i)
        after = self.min_cost[at] if at < len(self.min_cost) else facts.cost
        self.min_cost.insert(at, min(after, facts.cost))
        j = at - 1
        while j >= 0 and self.min_cost[j] > facts.cost:
            self.min_cost[j] = facts.cost
            j -= 1


class _PreparedQuery:
    """One default-scorer query over a PreparedStore."""

    def __init__(
        self,
        store: PreparedStore,
        entries: List[Mapping[str, Any]],
        pools: List[Pool],
        context: Optional[Mapping[str, Any]],
        now: Optional[datetime],
        include: Optional[Callable[[Mapping[str, Any]], bool]],
    ) -> None:
        self.store, self.entries, self.pools, self.include = store, entries, pools, include
        self.query = _Query.from_context(context)
        self.now = _utc_now(now)
        self.now_us = _epoch_us(self.now)
        self.facts: List[Optional[_Facts]] = list(store._facts)
        for i in range(len(store._entries), len(entries)):  # this query's extras
            entry = entries[i]
            self.facts.append(_Facts.of(entry, i, store) if store.is_active(entry) else None)
        self.exact = self._exactly_scored(len(store._entries))
        self.exact_by_type: Dict[Any, List[int]] = {}
        for i in self.exact:
            facts = self.facts[i]
            if facts is not None:
                self.exact_by_type.setdefault(facts.type, []).append(i)
        self.scores: Dict[int, float] = {}

    def _exactly_scored(self, stored: int) -> Dict[int, int]:
        """Entries whose score needs more than the group order: index -> shared words."""
        store, query = self.store, self.query
        exact: Dict[int, int] = dict.fromkeys(store._irregular, 0)
        if query.words:
            counts: Dict[int, int] = {}
            for word in query.words:
                for i in store._by_word.get(word, ()):
                    counts[i] = counts.get(i, 0) + 1
            n = len(query.words)
            exact.update((i, c) for i, c in counts.items() if c / n > 0.15)
            shared = counts
        else:
            shared = {}
        for tag in query.tags:
            for i in store._by_tag.get(tag, ()):
                exact[i] = shared.get(i, 0)
        for i in range(stored, len(self.entries)):
            facts = self.facts[i]
            if facts is not None and not facts.always:
                exact[i] = _shared_words(_content(self.entries[i]), query)
        return exact

    def score(self, i: int) -> float:
        if i not in self.scores:
            entry = self.entries[i]
            facts = self.facts[i]
            group = None if facts is None else facts.group
            if facts is not None and group is not None and i in self.exact:
                # Regular entries: 0 < base < 1e300 keeps the product finite.
                self.scores[i] = _combine(group[1], facts.created_us, facts.tags, group[2],
                                          self.exact[i], self.query, self.now_us)
            else:
                label = _label(entry, i)
                value = _default_score(entry, self.query, self.now, label)
                self.scores[i] = _check_score(value, label)
        return self.scores[i]

    def run(self) -> Dict[str, List[Decision]]:
        taken: Set[int] = set()
        out: Dict[str, List[Decision]] = {}
        for pool in self.pools:
            picked = self.fill(pool, taken)
            taken.update(id(d.entry) for d in picked)
            out[pool.name] = picked
        return out

    def usable(self, i: int, pool: Pool, taken: AbstractSet[int]) -> bool:
        facts = self.facts[i]
        entry = self.entries[i]
        return (facts is not None and pool.accepts(facts.type) and id(entry) not in taken
                and (self.include is None or bool(self.include(entry))))

    def fill(self, pool: Pool, taken: AbstractSet[int]) -> List[Decision]:
        entries, facts = self.entries, self.facts
        stored = len(self.store._entries)
        always = [i for i in self.store._always if self.usable(i, pool, taken)]
        always += [i for i in range(stored, len(entries))
                   if self.usable(i, pool, taken) and _facts(facts, i).always]

        # THE INVARIANT, as in the stateless path: always-scope first, unbudgeted.
        picked = [Decision(entries[i], i, "always", pool.name,
                           cost=_facts(facts, i).cost, rank=rank)
                  for rank, i in enumerate(always)]

        tokens_left, slots_left = pool.max_tokens, pool.max_entries
        heap: List[Tuple[Any, ...]] = []
        include, key = self.include, self.key
        for entry_type, members in self.exact_by_type.items():
            if pool.accepts(entry_type):
                heap.extend(key(i) for i in members if id(entries[i]) not in taken
                            and (include is None or include(entries[i])))
        walks: List[Tuple[_Group, int]] = []
        for group in self.store._groups.values():
            if pool.accepts(group.type):
                self.push_next_run(heap, walks, group, 0, pool, taken, tokens_left)
        heapq.heapify(heap)
        while heap and slots_left > 0 and tokens_left > 0:
            item = heapq.heappop(heap)
            if len(item) == 5:  # a group's next run of equal scores: expand it
                group, at = walks[item[4]]
                at = self.expand(heap, group, at, -item[0], pool, taken, tokens_left)
                self.push_next_run(heap, walks, group, at, pool, taken, tokens_left)
                continue
            i = item[3]
            cost = _facts(facts, i).cost
            if cost <= tokens_left:
                picked.append(Decision(entries[i], i, "selected", pool.name,
                                       score=self.score(i), cost=cost, rank=len(picked)))
                tokens_left -= cost
                slots_left -= 1
        return picked

    def key(self, i: int) -> Tuple[Any, str, str, int]:
        sort_key = _facts(self.facts, i).sort_key
        return (-self.score(i), sort_key[0], sort_key[1], i)

    def walkable(self, i: int, pool: Pool, taken: AbstractSet[int], tokens_left: int) -> bool:
        return (i not in self.exact and _facts(self.facts, i).cost <= tokens_left
                and self.usable(i, pool, taken))

    def plain_score(self, group: _Group, i: int) -> float:
        created_us = _facts(self.facts, i).created_us
        days = (0.0 if created_us is None
                else max(0.0, (self.now_us - created_us) / 1_000_000 / _DAY_SECONDS))
        score = group.base * max(0.3, 1.0 - 0.7 * days / 90)
        if group.project is not None:
            score *= 1.5 if group.project == self.query.project else 0.5
        self.scores[i] = score
        return score

    def push_next_run(self, heap: List[Tuple[Any, ...]], walks: List[Tuple[_Group, int]],
                      group: _Group, at: int, pool: Pool, taken: AbstractSet[int],
                      tokens_left: int) -> None:
        """Push a marker for the group's next usable entry; it sorts before its equals."""
        order = group.order
        while at < len(order):
            if group.min_cost[at] > tokens_left:
                return  # nothing left in this group can fit
            if self.walkable(order[at], pool, taken, tokens_left):
                walks.append((group, at))
                heapq.heappush(heap, (-self.plain_score(group, order[at]), "", "", -1,
                                      len(walks) - 1))
                return
            at += 1

    def expand(self, heap: List[Tuple[Any, ...]], group: _Group, at: int, score: float,
               pool: Pool, taken: AbstractSet[int], tokens_left: int) -> int:
        """Push every usable entry of the run scoring ``score``; return where it ends."""
        order = group.order
        while at < len(order):
            i = order[at]
            if self.walkable(i, pool, taken, tokens_left):
                if self.plain_score(group, i) != score:
                    break
                heapq.heappush(heap, self.key(i))
            at += 1
        return at


# --------------------------------------------------------------------------
# Private helpers
# --------------------------------------------------------------------------

_WORD = re.compile(r"[a-z0-9]+")
_STOPWORDS = frozenset(
    "the and for are but not you all can her was one our out day has had his how"
    " man new now old see two way who did its let put say she too use that this"
    " with from they them then than have will your what when were been into some"
    " more very just over only".split()
)
_DAY_SECONDS = 86400.0
_ISO = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})"
    r"(?:[Tt ](\d{2})(?::(\d{2})(?::(\d{2})(?:[.,](\d+))?)?)?)?"
    r"\s*(?:([Zz])|([+-])(\d{2})(?::?(\d{2}))?)?"
)


class _Query:
    """A retrieval context reduced once per call to what the scorer compares."""

    __slots__ = ("project", "tags", "words")

    def __init__(self, words: FrozenSet[str], project: Any, tags: FrozenSet[str]) -> None:
        self.words = words
        self.project = project
        self.tags = tags

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
        return cls(_words(message or ""), context.get("project"), tags)


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
    ) -> None:
        self.entries = _check_entries(entries)
        for name, fn in (("scorer", scorer), ("token_counter", token_counter),
                         ("is_active", is_active)):
            if not callable(fn):
                raise TypeError(f"{name} must be callable, got {type(fn).__name__}")
        self.context = context
        self.query = _Query.from_context(context)
        self.now = _utc_now(now)
        self.scorer = scorer
        self.scorer_takes_now = scorer is default_scorer or _takes_now(scorer)
        self.token_counter = token_counter
        self.active = [i for i, entry in enumerate(self.entries) if is_active(entry)]
        self.scores: Dict[int, Any] = {}
        self.costs: Dict[int, int] = {}

    def fill(
        self,
        pool: Pool,
        taken: AbstractSet[int],
        trace: Optional[Dict[int, Decision]] = None,
        ledgers: Optional[Dict[str, Ledger]] = None,
    ) -> List[Any]:
        """Fill one pool; with ``trace``, record a Decision per entry considered."""
        always: List[int] = []
        contextual: List[Tuple[Any, str, str, int]] = []
        for i in self.active:
            entry = self.entries[i]
            if id(entry) in taken or not pool.accepts(entry.get("type", "note")):
                continue
            if entry.get("scope") == "always":
                always.append(i)
            else:
                contextual.append((-self.score(i), _sort_text(entry, "created"),
                                   _sort_text(entry, "id"), i))

        # THE INVARIANT: always-scope entries load first and unconditionally.
        # They are outside max_tokens and max_entries, so no amount of fresh,
        # high-scoring content can crowd a behavioural correction out.
        picked: List[Any] = [self.entries[i] for i in always]

        heapq.heapify(contextual)
        tokens_left, slots_left = pool.max_tokens, pool.max_entries
        skipped: List[Tuple[int, int]] = []  # (index, tokens left at its turn)
        while contextual and slots_left > 0 and tokens_left > 0:
            i = heapq.heappop(contextual)[3]
            cost = self.cost(i)
            if cost <= tokens_left:
                picked.append(self.entries[i])
                tokens_left -= cost
                slots_left -= 1
                if trace is not None:
                    trace[i] = self.decision(i, "selected", pool, rank=len(picked) - 1)
            elif trace is not None:
                skipped.append((i, tokens_left))

        if trace is not None and ledgers is not None:
            for rank, i in enumerate(always):
                trace[i] = Decision(self.entries[i], i, "always", pool.name,
                                    cost=self.cost(i), rank=rank)
            for i, left in skipped:
                trace[i] = self.decision(i, "over_tokens", pool, tokens_left=left)
            # The scan ended early: the cap was reached, or no token is left.
            late = "over_entries" if slots_left == 0 else "over_tokens"
            for key in contextual:
                trace[key[3]] = self.decision(key[3], late, pool, tokens_left=(
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

    def score(self, i: int) -> Any:
        if i not in self.scores:
            entry = self.entries[i]
            label = _label(entry, i)
            if self.scorer is default_scorer:
                value: Any = _default_score(entry, self.query, self.now, label)
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


def _cost(entry: Mapping[str, Any], index: int, token_counter: TokenCounter) -> int:
    """``token_count`` when a positive int, else the counter's (at least 1)."""
    count = entry.get("token_count")
    if isinstance(count, int) and not isinstance(count, bool) and count > 0:
        return count
    text = _content(entry)
    if token_counter is default_token_counter:
        return max(1, len(text) // 4)
    return _check_count(token_counter(text), _label(entry, index))


def _default_score(entry: Mapping[str, Any], query: _Query, now: datetime, label: str) -> float:
    base = _base_priority(entry, label)
    tags = _tag_set(entry.get("tags"), f"{label}: tags")
    shared = _shared_words(_content(entry), query) if query.words else 0
    return _combine(base, _time_us(entry.get("created")), tags, entry.get("project"),
                    shared, query, _epoch_us(now))


def _combine(
    base: float,
    created_us: Optional[int],
    tags: Collection[str],
    project: Any,
    shared_words: int,
    query: _Query,
    now_us: int,
) -> float:
    """The default score from an entry's features: the spec's factors, in its order.

    Both paths (stateless and prepared) score through here, so the order of
    the floating-point multiplications -- and so every ranking -- is one.
    Times are integer microseconds since the epoch: ``delta_us / 1_000_000``
    is exactly ``timedelta.total_seconds()``.
    """
    days = 0.0 if created_us is None else max(0.0, (now_us - created_us) / 1_000_000 / _DAY_SECONDS)
    score = base * max(0.3, 1.0 - 0.7 * days / 90)
    if tags:
        score *= 1 + 0.5 * sum(1 for tag in tags if tag in query.tags) / len(tags)
    if project is not None:
        score *= 1.5 if project == query.project else 0.5
    if query.words:
        overlap = shared_words / len(query.words)
        if overlap > 0.15:
            score *= 1 + 1.5 * overlap
    return score


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
    """``|W(text) & W(message)|``: the message's words are filtered already."""
    return len(query.words.intersection(_WORD.findall(text.lower())))


def _words(text: str) -> FrozenSet[str]:
    return frozenset(
        w for w in _WORD.findall(text.lower()) if len(w) > 2 and w not in _STOPWORDS
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


def _parse_time(value: Any) -> Optional[datetime]:
    """An aware UTC-comparable datetime, or None when absent or unparseable."""
    if isinstance(value, datetime):
        return value if value.tzinfo is not None else value.replace(tzinfo=timezone.utc)
    if not isinstance(value, str):
        return None
    match = _ISO.fullmatch(value.strip())
    if match is None:
        return None
    year, month, day, hour, minute, second, frac, _zulu, sign, off_h, off_m = match.groups()
    try:
        tz = timezone.utc
        if sign:
            offset = timedelta(hours=int(off_h), minutes=int(off_m or 0))
            tz = timezone(offset if sign == "+" else -offset)
        return datetime(
            int(year), int(month), int(day), int(hour or 0), int(minute or 0),
            int(second or 0), int((frac or "0")[:6].ljust(6, "0")), tzinfo=tz,
        )
    except ValueError:
        return None


def _utc_now(now: Optional[datetime]) -> datetime:
    if now is None:
        return datetime.now(timezone.utc)
    if not isinstance(now, datetime):
        raise TypeError(f"now must be a datetime or None, got {type(now).__name__}")
    return now if now.tzinfo is not None else now.replace(tzinfo=timezone.utc)


_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_MICROSECOND = timedelta(microseconds=1)


def _epoch_us(moment: datetime) -> int:
    return (moment - _EPOCH) // _MICROSECOND


def _time_us(value: Any) -> Optional[int]:
    """``created`` as microseconds since the epoch; None when absent or unparseable."""
    moment = _parse_time(value)
    return None if moment is None else _epoch_us(moment)


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
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{label}: scorer must return a finite number, got {value!r}")
    try:
        finite = math.isfinite(value)
    except OverflowError:  # an int too large for a float is still finite
        finite = True
    if not finite:
        raise ValueError(f"{label}: scorer must return a finite number, got {value!r}")
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
