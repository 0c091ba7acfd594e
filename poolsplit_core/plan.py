"""Budget planning: how well pools cover each entry type, and pools chosen to cover them all.

Standard library only, beside the vendored engine (:mod:`poolsplit_core.poolsplit`),
which it calls and never copies.

- :func:`coverage` measures pools on a sample of query contexts: per entry
  type, the share of queries on which the type loaded at all, on which *its
  best-ranked entry for that query* loaded, and on which its top ``depth``
  entries all loaded -- each with a 95% Wilson interval, since samples are
  small --, why the best entries that did not load were left out, and per
  pool the tokens used.
- :func:`plan_pools` chooses one pool per type from a total token budget, so
  that every type's best entries load on as many queries as the budget
  allows, fairly (max-min), and checks the plan on held-out queries.
- :func:`load_pools` and :func:`save_pools` read and write pools as JSON,
  the file ``poolsplit retrieve --pools`` and the adapters take.

>>> from datetime import datetime, timezone
>>> store = [{"id": f"t{i}", "type": "task", "content": "x" * 40 * (i + 1)} for i in range(3)]
>>> store += [{"id": "s1", "type": "skill", "base_priority": 1, "content": "y" * 80}]
>>> now = datetime(2026, 1, 1, tzinfo=timezone.utc)
>>> queries = [{"message": "x"}, {"message": "y"}]
>>> plan = plan_pools(store, queries, total_tokens=60, now=now, holdout=0)
>>> [(p.name, p.max_tokens, p.types) for p in plan.pools]
[('task', 36, ('task',)), ('skill', 24, ('skill',))]
>>> plan.lowest, plan.reached
(1.0, True)
>>> report = coverage(store, plan.pools, queries, now=now)
>>> report.types["skill"].best.share
1.0

Why planning is exact for pools of one type each: a pool fills greedily in
rank order and skips what does not fit, so a type's top ``m`` entries all
load exactly when their summed cost is within ``max_tokens`` and ``m <=
max_entries``. A type's coverage at budget ``b`` is therefore the share of
queries whose top-``m`` cost is at most ``b`` -- its *demand curve* -- and
needs no search. Grouped pools are checked by running the pools themselves.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from poolsplit_core._plain import pool_from_data, pool_to_data
from poolsplit_core._text import plural, table
from poolsplit_core.poolsplit import (
    ActivityTest,
    Decision,
    Pool,
    Scorer,
    TokenCounter,
    _read_pool,
    default_is_active,
    default_scorer,
    default_token_counter,
)
from poolsplit_core.prepared import PreparedStore

__all__ = [
    "CoverageReport",
    "CurvePoint",
    "Plan",
    "PoolUsage",
    "Rate",
    "TypeCoverage",
    "TypePlan",
    "always_tier_tokens",
    "best_entry_coverage",
    "coverage",
    "format_coverage",
    "format_plan",
    "load_pools",
    "plan_pools",
    "pools_from_json",
    "pools_to_json",
    "sample_queries",
    "save_pools",
]

#: z for a two-sided 95% interval.
_Z95 = 1.959963984540054
#: A token ceiling no entry sum reaches: a ranking pool loads its top entries whatever they cost.
_UNBOUNDED = 1 << 62


# --------------------------------------------------------------------------
# Plain data
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Rate:
    """``hits`` of ``total`` queries, with a 95% Wilson score interval.

    >>> r = Rate(26, 32)
    >>> round(r.share, 3), round(r.low, 3), round(r.high, 3)
    (0.812, 0.647, 0.911)

    The Wilson interval stays inside [0, 1] and is honest for small samples
    and for shares near 0 or 1, where the normal approximation is not. With
    no queries the share is 0 and the interval [0, 1].
    """

    hits: int
    total: int

    @property
    def share(self) -> float:
        """``hits / total`` (0.0 for no queries)."""
        return self.hits / self.total if self.total else 0.0

    @property
    def low(self) -> float:
        """The lower end of the 95% Wilson interval."""
        return _wilson(self.hits, self.total)[0]

    @property
    def high(self) -> float:
        """The upper end of the 95% Wilson interval."""
        return _wilson(self.hits, self.total)[1]

    def to_dict(self) -> dict[str, Any]:
        """Plain, JSON-ready data."""
        return {"hits": self.hits, "total": self.total, "share": self.share,
                "low": self.low, "high": self.high}

    def __str__(self) -> str:
        return f"{self.hits}/{self.total}"


def _wilson(hits: int, total: int) -> tuple[float, float]:
    if total == 0:
        return 0.0, 1.0
    p, z2 = hits / total, _Z95 * _Z95
    centre = p + z2 / (2 * total)
    spread = _Z95 * math.sqrt(p * (1 - p) / total + z2 / (4 * total * total))
    scale = 1 + z2 / total
    return max(0.0, (centre - spread) / scale), min(1.0, (centre + spread) / scale)


@dataclass(frozen=True)
class TypeCoverage:
    """How one entry type fared over the query sample (see :func:`coverage`).

    ``entries`` counts its active contextual entries and ``always`` its
    active always-scope ones. ``any`` is the share of queries on which at
    least one contextual entry of the type loaded, ``best`` those on which
    the type's best-ranked entry for that query loaded, ``depth`` those on
    which its top ``m`` entries all loaded (``m`` the report's depth, or
    fewer when the type has fewer entries). When the best entry did not
    load, ``missed`` counts why: ``over_tokens`` (its pool had too few
    tokens left: a near miss, ``tokens_short`` its median shortfall),
    ``over_entries`` (its pool's cap was reached), ``no_pool`` (no pool takes
    the type). ``crowded_tokens`` and ``crowded_cap`` count every entry of
    the type left out for tokens or for the cap, summed over the queries.
    A type with no contextual entry has no rates (None).
    """

    type: str
    entries: int
    always: int
    any: Rate | None
    best: Rate | None
    depth: Rate | None
    missed: dict[str, int]
    tokens_short: int | None
    crowded_tokens: int
    crowded_cap: int

    def to_dict(self) -> dict[str, Any]:
        """Plain, JSON-ready data."""
        return {
            "type": self.type, "entries": self.entries, "always": self.always,
            "any": _rate_data(self.any), "best": _rate_data(self.best),
            "depth": _rate_data(self.depth), "missed": dict(self.missed),
            "tokens_short": self.tokens_short, "crowded_tokens": self.crowded_tokens,
            "crowded_cap": self.crowded_cap,
        }


@dataclass(frozen=True)
class PoolUsage:
    """Tokens one pool spent on contextual entries, per query: median, p95, utilisation.

    ``utilisation`` is the mean of ``tokens_used / max_tokens`` (0 for a pool
    without tokens).
    """

    pool: str
    max_tokens: int
    max_entries: int
    tokens_p50: float
    tokens_p95: float
    utilisation: float
    entries_p50: float

    def to_dict(self) -> dict[str, Any]:
        """Plain, JSON-ready data."""
        return dict(self.__dict__)


@dataclass(frozen=True)
class CoverageReport:
    """What :func:`coverage` found; ``lowest`` and ``mean`` are over best-entry coverage.

    Types without contextual entries (always-scope only) have no coverage
    and are left out of ``lowest`` and ``mean``.
    """

    queries: int
    depth: int
    types: dict[str, TypeCoverage]
    pools: dict[str, PoolUsage]
    always_entries: int
    always_tokens_p50: float
    always_tokens_p95: float
    lowest: float
    mean: float

    def to_dict(self) -> dict[str, Any]:
        """Plain, JSON-ready data."""
        return {
            "queries": self.queries, "depth": self.depth,
            "types": {name: t.to_dict() for name, t in self.types.items()},
            "pools": {name: p.to_dict() for name, p in self.pools.items()},
            "always": {"entries": self.always_entries, "tokens_p50": self.always_tokens_p50,
                       "tokens_p95": self.always_tokens_p95},
            "lowest": self.lowest, "mean": self.mean,
        }


@dataclass(frozen=True)
class TypePlan:
    """One type's share of a plan: its pool, and its coverage predicted and held out.

    ``predicted`` is exact on the planning queries (the demand curve);
    ``held_out`` is measured by running the plan's pools on the queries kept
    aside (None when none were). ``curve`` is the demand curve itself:
    ``(budget, share)`` points, the share of planning queries whose top
    entries fit that many tokens.

    Why the pool got its budget: ``entries`` counts the type's active
    contextual entries and ``median_cost`` is the median cost of its top
    entries over the planning queries (the cap is about ``max_tokens /
    median_cost``); ``next_step`` is the tokens more that would cover one
    more planning query (None when all are covered), and ``margin`` the
    tokens beyond what the covered queries need, kept for unseen queries.
    """

    type: str
    pool: str
    max_tokens: int
    max_entries: int
    predicted: Rate
    held_out: Rate | None
    curve: tuple[tuple[int, float], ...]
    entries: int = 0
    median_cost: float = 0.0
    next_step: int | None = None
    margin: int = 0

    def to_dict(self) -> dict[str, Any]:
        """Plain, JSON-ready data."""
        return {
            "type": self.type, "pool": self.pool, "max_tokens": self.max_tokens,
            "max_entries": self.max_entries, "predicted": self.predicted.to_dict(),
            "held_out": _rate_data(self.held_out), "curve": [list(p) for p in self.curve],
            "entries": self.entries, "median_cost": self.median_cost,
            "next_step": self.next_step, "margin": self.margin,
        }


@dataclass(frozen=True)
class CurvePoint:
    """The lowest and mean predicted coverage a plan reaches with ``total_tokens``."""

    total_tokens: int
    lowest: float
    mean: float

    def to_dict(self) -> dict[str, Any]:
        """Plain, JSON-ready data."""
        return dict(self.__dict__)


@dataclass(frozen=True)
class Plan:
    """The result of :func:`plan_pools`: plain data; :meth:`to_dict` for JSON.

    ``pools`` are ready for :func:`~poolsplit_core.poolsplit.retrieve_pools`
    and :func:`save_pools`. ``always_tokens`` is what the budget sets aside
    for the always tier (the p95 of its tokens per planning query), and the
    pools' ``max_tokens`` add up to ``total_tokens - always_tokens``: a plan
    spends the budget it is given.
    ``reached`` says whether every type's predicted best-entry coverage (or
    at ``depth``) reaches ``target``; ``tokens_for_target`` is the smallest
    total budget that reaches it (None when no budget can, e.g. a cap too
    small). ``lowest`` and ``mean`` are over the predicted coverage.
    """

    total_tokens: int
    total_entries: int | None
    target: float
    depth: int
    always_tokens: int
    pools: tuple[Pool, ...]
    types: dict[str, TypePlan]
    lowest: float
    mean: float
    reached: bool
    tokens_for_target: int | None
    held_out_lowest: float | None
    curve: tuple[CurvePoint, ...]
    planning_queries: int
    held_out_queries: int
    merged: bool = False
    notes: tuple[str, ...] = field(default=())

    def to_dict(self) -> dict[str, Any]:
        """Plain, JSON-ready data (the pools as :func:`pools_to_json` writes them)."""
        return {
            "total_tokens": self.total_tokens, "total_entries": self.total_entries,
            "target": self.target, "depth": self.depth, "always_tokens": self.always_tokens,
            "pools": [pool_to_data(pool) for pool in self.pools],
            "types": {name: t.to_dict() for name, t in self.types.items()},
            "lowest": self.lowest, "mean": self.mean, "reached": self.reached,
            "tokens_for_target": self.tokens_for_target,
            "held_out_lowest": self.held_out_lowest,
            "curve": [point.to_dict() for point in self.curve],
            "planning_queries": self.planning_queries,
            "held_out_queries": self.held_out_queries,
            "merged": self.merged, "notes": list(self.notes),
        }


def _rate_data(rate: Rate | None) -> dict[str, Any] | None:
    return None if rate is None else rate.to_dict()


# --------------------------------------------------------------------------
# Pools as JSON: the one reader and writer
# --------------------------------------------------------------------------


def pools_to_json(pools: Iterable[Pool]) -> str:
    """Pools as the JSON text of ``--pools FILE.json``: a list of plain pool objects.

    >>> text = pools_to_json([Pool("skills", 200, 2, ("skill",))])
    >>> pools_from_json(text) == [Pool("skills", 200, 2, ("skill",))]
    True
    """
    data = [pool_to_data(pool) for pool in _read_pools(pools)]
    text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate (a JSON "\\ud800" read from a store)
        text = json.dumps(data, indent=2) + "\n"  # escaped, so the file is UTF-8 and reads back
    return text


def pools_from_json(text: str, name: str = "pools") -> list[Pool]:
    """The pools a JSON text holds: a non-empty list of ``{name, max_tokens, max_entries, types?}``.

    Raises:
        ValueError: the text is not JSON, not a non-empty list, names a pool
            twice, or a pool is invalid (``name`` and the pool's index say
            which); TypeError for a pool of the wrong shape.
    """
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(
            f"{name}: invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"
        ) from None
    if not isinstance(data, list) or not data:
        raise ValueError(f"{name}: expected a non-empty JSON list of pool objects")
    pools = [pool_from_data(item, f"{name}: pool {i}") for i, item in enumerate(data)]
    seen: set[str] = set()
    for pool in pools:
        if pool.name in seen:
            raise ValueError(f"{name}: duplicate pool name {pool.name!r}:"
                             " each pool needs its own name")
        seen.add(pool.name)
    return pools


def load_pools(path: str | Path) -> list[Pool]:
    """Read pools from a JSON file written by :func:`save_pools` or ``poolsplit plan --out``.

    The one-liner for the adapters: ``PoolSplitRetriever(pools=load_pools("pools.json"), ...)``.
    The file is UTF-8 (a byte-order mark allowed).

    Raises:
        ValueError: the file is not UTF-8 text, or not valid pools (as
            :func:`pools_from_json`); the message starts with ``path``.
        OSError: the file cannot be read (FileNotFoundError for a missing one).
    """
    try:
        text = Path(path).read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}: not UTF-8 text (byte {exc.start}); pools files are"
                         " UTF-8 JSON, as save_pools writes them") from None
    return pools_from_json(text, str(path))


def save_pools(pools: Iterable[Pool], path: str | Path) -> None:
    """Write pools as JSON to ``path``; :func:`load_pools` reads back equal pools."""
    Path(path).write_text(pools_to_json(pools), encoding="utf-8")


# --------------------------------------------------------------------------
# Queries
# --------------------------------------------------------------------------


def sample_queries(store: Sequence[Mapping[str, Any]], count: int = 40) -> list[dict[str, Any]]:
    """A default query sample drawn from the store itself, for when no real queries exist.

    >>> sample_queries([{"id": "a", "content": "Rotate the keys now", "project": "x",
    ...                  "tags": ["ops"]}, {"id": "c", "scope": "always"}])
    [{'message': 'Rotate the keys now', 'project': 'x', 'tags': ['ops']}]

    Each query is one active contextual entry speaking: its first 12 words as
    the message, with its project and tags -- what a user says when working
    on something the store holds. The entries are taken round-robin over the
    types (in store order within each type), so every type is asked about;
    deterministic, so a plan made from it is reproducible. Real queries
    (``--queries``) are better: they carry the words users actually use.
    """
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise ValueError(f"count must be an int >= 1, got {count!r}")
    by_type: dict[str, list[Mapping[str, Any]]] = {}
    for entry in store:
        if default_is_active(entry) and entry.get("scope") != "always":
            by_type.setdefault(str(entry.get("type", "note")), []).append(entry)
    if not by_type:
        return []
    # Spread each type's picks over its entries (not just its first ones).
    lists = list(by_type.values())
    picks: list[Mapping[str, Any]] = []
    rounds = 0
    while len(picks) < count and any(rounds < len(members) for members in lists):
        for members in lists:
            if rounds < len(members) and len(picks) < count:
                picks.append(members[_spread(rounds, len(members))])
        rounds += 1
    return [{"message": " ".join(str(e.get("content") or "").split()[:12]),
             "project": e.get("project"), "tags": _tags_of(e)} for e in picks]


def _spread(k: int, n: int) -> int:
    """The k-th of n positions in an order that spreads them evenly (bit reversal-like)."""
    order = sorted(range(n), key=lambda i: (_reverse_fraction(i), i))
    return order[k]


def _reverse_fraction(i: int) -> float:
    out, scale = 0.0, 0.5
    while i:
        out += scale * (i & 1)
        i >>= 1
        scale /= 2
    return out


def _tags_of(entry: Mapping[str, Any]) -> list[str]:
    tags = entry.get("tags")
    if isinstance(tags, str):
        return [tags]
    if isinstance(tags, (list, tuple)):
        return [t for t in tags if isinstance(t, str)]
    return []


def _read_pools(pools: Iterable[Any]) -> list[Pool]:
    """Each pool read by the core's one rule: a Pool, or a mapping with Pool's fields."""
    return [_read_pool(pool, f"pools[{i}]") for i, pool in enumerate(pools)]


def _check_queries(queries: Any) -> list[Mapping[str, Any] | None]:
    if isinstance(queries, (str, bytes, Mapping)) or not isinstance(queries, Iterable):
        raise TypeError(f"queries must be a sequence of contexts (mappings),"
                        f" got {type(queries).__name__}")
    listed = list(queries)
    if not listed:
        raise ValueError("queries must hold at least one query context, got none")
    for i, query in enumerate(listed):
        if query is not None and not isinstance(query, Mapping):
            raise TypeError(f"queries[{i}] must be a mapping (a context) or None,"
                            f" got {type(query).__name__}")
    return listed


# --------------------------------------------------------------------------
# Rankings: each type's best entries for one query
# --------------------------------------------------------------------------


def always_tier_tokens(decisions: Iterable[Decision]) -> int:
    """What the always tier costs one query: the cost of every entry that loaded as always-scope.

    >>> from poolsplit_core.poolsplit import explain_pools
    >>> store = [{"id": "fix", "type": "correction", "scope": "always", "content": "x" * 40},
    ...          {"id": "t", "type": "task", "content": "y" * 20}]
    >>> got = explain_pools(store, [Pool("tasks", 50, 2, ("task",))], always_pool=True)
    >>> always_tier_tokens(got.decisions)
    10

    The one count ``poolsplit retrieve``, ``coverage`` and ``plan`` print.
    Give it the decisions of a call that loads every active correction
    (``always_pool=True``, as the command line and the adapters call): a
    correction whose type no pool takes still loads there, and costs
    tokens, outside every budget.
    """
    return sum(d.cost or 0 for d in decisions if d.outcome == "always")


class _Sample:
    """A store prepared once, and each query's per-type ranking (top ``depth`` entries)."""

    def __init__(self, store: Any, queries: list[Mapping[str, Any] | None], depth: int,
                 now: datetime | None, scorer: Scorer, token_counter: TokenCounter,
                 is_active: ActivityTest) -> None:
        if isinstance(store, PreparedStore):
            self.prepared = store
        else:
            self.prepared = PreparedStore(store, token_counter=token_counter,
                                          is_active=is_active)
        self.queries, self.depth, self.now, self.scorer = queries, depth, now, scorer
        entries = self.prepared.entries
        active = self.prepared.is_active
        self.types: list[str] = []  # every active type, in store order
        self.contextual: dict[str, int] = {}
        self.always: dict[str, int] = {}
        for i, entry in enumerate(entries):
            if not active(entry):
                continue
            kind = entry.get("type", "note")
            if not isinstance(kind, str):
                who = f"id={entry['id']!r}" if entry.get("id") is not None else f"at index {i}"
                raise TypeError(f"entry {who}: types must be str to get a pool, got the type"
                                f" {kind!r}")
            if kind not in self.contextual:
                self.types.append(kind)
                self.contextual[kind] = self.always[kind] = 0
            counts = self.always if entry.get("scope") == "always" else self.contextual
            counts[kind] += 1
        # One pool per type, unbounded tokens, depth entries: it loads the type's
        # top entries in the core's own rank order (always-scope ones first).
        rankers = [Pool(f"rank:{i}", _UNBOUNDED, depth, (kind,))
                   for i, kind in enumerate(self.types)]
        self.rankings: list[dict[str, list[Decision]]] = []
        self.always_tokens: list[int] = []
        for query in queries:
            # the planner's reads are its own work, not the application's: untraced
            decided = self.prepared._decide(rankers, query, scorer, now, (), None, None,
                                            None, True)
            ranked: dict[str, list[Decision]] = {}
            for kind, pool in zip(self.types, rankers):
                picked = decided[pool.name]
                ranked[kind] = _once([d for d in picked if d.outcome == "selected"])
            self.rankings.append(ranked)
            self.always_tokens.append(
                always_tier_tokens(d for picked in decided.values() for d in picked))

    def entry_costs(self, kinds: Sequence[str]) -> dict[str, list[int]]:
        """Each type's contextual entry costs, sorted (one unbounded walk, any query)."""
        everything = [Pool(f"all:{i}", _UNBOUNDED, _UNBOUNDED, (kind,))
                      for i, kind in enumerate(kinds)]
        decided = self.prepared._decide(everything, None, self.scorer, self.now, (), None,
                                        None, None, False)
        return {kind: sorted(d.cost or 1 for d in decided[pool.name] if d.outcome == "selected")
                for kind, pool in zip(kinds, everything)}

    def demand(self, kind: str, q: int, depth: int) -> int:
        """Tokens the top ``depth`` entries of ``kind`` cost on query ``q``."""
        return sum(d.cost or 0 for d in self.rankings[q][kind][:depth])


def _once(decisions: list[Decision]) -> list[Decision]:
    """Each entry object once, at its first place: a dict listed twice is loaded once it loads."""
    seen: set[int] = set()
    out = []
    for d in decisions:
        if id(d.entry) not in seen:
            seen.add(id(d.entry))
            out.append(d)
    return out


def _check_depth(depth: Any) -> int:
    if isinstance(depth, bool) or not isinstance(depth, int) or depth < 1:
        raise ValueError(f"depth must be an int >= 1, got {depth!r}")
    return depth


# --------------------------------------------------------------------------
# coverage
# --------------------------------------------------------------------------


def coverage(
    store: Any,
    pools: Sequence[Pool],
    queries: Iterable[Mapping[str, Any] | None],
    *,
    now: datetime | None = None,
    depth: int = 1,
    scorer: Scorer = default_scorer,
    token_counter: TokenCounter = default_token_counter,
    is_active: ActivityTest = default_is_active,
) -> CoverageReport:
    """Measure how well ``pools`` cover every entry type of ``store`` on ``queries``.

    Args:
        store: the entries (a list of dicts), or a :class:`PreparedStore`
            (whose own counter and activity test then apply).
        pools: the pools to measure, in fill order.
        queries: the query contexts (``{"message", "project", "tags"}``).
        now: the time recency is scored at (fix it for reproducible numbers).
        depth: ``m``, for the share of queries on which a type's top ``m``
            entries all loaded.
        scorer: as for :func:`~poolsplit_core.poolsplit.retrieve_pools`.
        token_counter: as for :func:`~poolsplit_core.poolsplit.retrieve_pools`.
        is_active: as for :func:`~poolsplit_core.poolsplit.retrieve_pools`.

    Returns:
        A :class:`CoverageReport`: per type (:class:`TypeCoverage`), per pool
        (:class:`PoolUsage`), the always tier, and the lowest and mean
        best-entry coverage over the types. The always tier is every active
        always-scope entry, whatever types ``pools`` take, as the components
        and ``poolsplit retrieve`` load it (``always_pool=True``), counted by
        :func:`always_tier_tokens`, as :func:`plan_pools` counts it.

    A type's *best entry* for a query is its first contextual entry in the
    core's rank order for that query (score, then ``created``, ``id``, input
    order), whatever the pools: so a type squeezed out of a shared pool shows
    as uncovered, not as absent.
    """
    checked_pools = _read_pools(pools)
    listed = _check_queries(queries)
    sample = _Sample(store, listed, _check_depth(depth), now, scorer, token_counter,
                     is_active)
    return _measure(sample, checked_pools, range(len(listed)))


def best_entry_coverage(
    store: Any,
    pools: Sequence[Pool],
    queries: Iterable[Mapping[str, Any] | None],
    *,
    now: datetime | None = None,
    depth: int = 1,
    scorer: Scorer = default_scorer,
    token_counter: TokenCounter = default_token_counter,
    is_active: ActivityTest = default_is_active,
) -> dict[str, Rate]:
    """Per type with contextual entries, on how many queries its best entry loaded.

    >>> store = [{"id": "t", "type": "task", "token_count": 30}, {"id": "s", "type": "skill"}]
    >>> got = best_entry_coverage(store, [Pool("all", 20, 5)], [None, None])
    >>> {kind: str(rate) for kind, rate in got.items()}
    {'task': '0/2', 'skill': '2/2'}

    With ``depth`` m: on how many its top m entries all loaded. The same
    numbers as :func:`coverage`'s ``best`` (or ``depth``), without its
    per-entry account, so much faster on a large store: what loaded is read
    through the prepared store's walk, not explained entry by entry.
    """
    checked = _read_pools(pools)
    listed = _check_queries(queries)
    sample = _Sample(store, listed, _check_depth(depth), now, scorer, token_counter,
                     is_active)
    return _rates(sample, checked, range(len(listed)))


def _measure(sample: _Sample, pools: list[Pool], chosen: Iterable[int]) -> CoverageReport:
    types = sample.types
    picked = list(chosen)
    n = len(picked)
    counts = {kind: {"any": 0, "best": 0, "depth": 0} for kind in types}
    missed: dict[str, dict[str, int]] = {kind: {} for kind in types}
    short: dict[str, list[int]] = {kind: [] for kind in types}
    crowded = {kind: [0, 0] for kind in types}
    used: dict[str, list[int]] = {pool.name: [] for pool in pools}
    taken: dict[str, list[int]] = {pool.name: [] for pool in pools}
    always_tokens: list[int] = []
    for q in picked:
        got = sample.prepared.explain_pools(pools, sample.queries[q], scorer=sample.scorer,
                                            now=sample.now)
        by_entry: dict[int, Decision] = {}
        for d in got.decisions:  # an object listed twice counts as loaded if either loaded
            if id(d.entry) not in by_entry or d.loaded:
                by_entry[id(d.entry)] = d
        for name, ledger in got.ledgers.items():
            used[name].append(ledger.tokens_used)
            taken[name].append(ledger.selected)
        # The tier as retrieve loads it: every active correction, whatever the pools take.
        always_tokens.append(sample.always_tokens[q])
        loaded_types = set()
        for d in got.decisions:
            kind = d.entry.get("type", "note")
            if d.outcome == "selected":
                loaded_types.add(kind)
            elif d.outcome == "over_tokens" and kind in crowded:
                crowded[kind][0] += 1
            elif d.outcome == "over_entries" and kind in crowded:
                crowded[kind][1] += 1
        for kind in types:
            ranked = sample.rankings[q][kind]
            if not ranked:
                continue
            counts[kind]["any"] += kind in loaded_types
            outcomes = [by_entry[id(d.entry)] for d in ranked]
            best = outcomes[0]
            if best.outcome == "selected":
                counts[kind]["best"] += 1
            else:
                missed[kind][best.outcome] = missed[kind].get(best.outcome, 0) + 1
                if best.outcome == "over_tokens" and best.cost is not None:
                    short[kind].append(best.cost - (best.tokens_left or 0))
            counts[kind]["depth"] += all(d.outcome == "selected" for d in outcomes)
    per_type = {}
    for kind in types:
        has = sample.contextual[kind] > 0
        c = counts[kind]
        per_type[kind] = TypeCoverage(
            type=kind, entries=sample.contextual[kind], always=sample.always[kind],
            any=Rate(c["any"], n) if has else None,
            best=Rate(c["best"], n) if has else None,
            depth=Rate(c["depth"], n) if has else None,
            missed=missed[kind],
            tokens_short=int(_quantile(short[kind], 0.5)) if short[kind] else None,
            crowded_tokens=crowded[kind][0], crowded_cap=crowded[kind][1],
        )
    usage = {
        pool.name: PoolUsage(
            pool=pool.name, max_tokens=pool.max_tokens, max_entries=pool.max_entries,
            tokens_p50=_quantile(used[pool.name], 0.5),
            tokens_p95=_quantile(used[pool.name], 0.95),
            utilisation=(sum(used[pool.name]) / (n * pool.max_tokens)
                         if n and pool.max_tokens else 0.0),
            entries_p50=_quantile(taken[pool.name], 0.5),
        )
        for pool in pools
    }
    shares = [t.best.share for t in per_type.values() if t.best is not None]
    return CoverageReport(
        queries=n, depth=sample.depth, types=per_type, pools=usage,
        always_entries=sum(sample.always.values()),
        always_tokens_p50=_quantile(always_tokens, 0.5),
        always_tokens_p95=_quantile(always_tokens, 0.95),
        lowest=min(shares) if shares else 0.0,
        mean=sum(shares) / len(shares) if shares else 0.0,
    )


def _rates(sample: _Sample, pools: list[Pool], chosen: Iterable[int]) -> dict[str, Rate]:
    """Per type, the queries on which its top entries (best, or top ``depth``) all loaded.

    The planner's check: only what loaded, through the prepared walk
    (``decide``), without the per-entry account :func:`coverage` gives.
    """
    picked = list(chosen)
    hits = {kind: 0 for kind in sample.types if sample.contextual[kind]}
    for q in picked:
        decided = sample.prepared._decide(pools, sample.queries[q], sample.scorer,
                                          sample.now, (), None, None, None, False)
        loaded = {id(d.entry) for got in decided.values() for d in got}
        for kind in hits:
            hits[kind] += all(id(d.entry) in loaded for d in sample.rankings[q][kind])
    return {kind: Rate(count, len(picked)) for kind, count in hits.items()}


def _quantile(values: Sequence[int], q: float) -> float:
    """The ``q`` quantile, linear between order statistics (0.0 for no values)."""
    if not values:
        return 0.0
    ordered = sorted(values)
    at = q * (len(ordered) - 1)
    low = math.floor(at)
    high = min(low + 1, len(ordered) - 1)
    return float(ordered[low] + (ordered[high] - ordered[low]) * (at - low))


# --------------------------------------------------------------------------
# plan_pools
# --------------------------------------------------------------------------


def plan_pools(
    store: Any,
    queries: Iterable[Mapping[str, Any] | None],
    total_tokens: int,
    *,
    total_entries: int | None = None,
    target: float = 0.9,
    depth: int = 1,
    now: datetime | None = None,
    holdout: float = 0.25,
    merge: bool = False,
    scorer: Scorer = default_scorer,
    token_counter: TokenCounter = default_token_counter,
    is_active: ActivityTest = default_is_active,
) -> Plan:
    """Choose one pool per entry type so every type's best entries load as often as possible.

    Args:
        store: the entries, or a :class:`PreparedStore`.
        queries: a sample of query contexts, the more like real traffic the better
            (:func:`sample_queries` draws one from the store).
        total_tokens: the whole context budget, always tier included.
        total_entries: optionally, a cap on the entries the pools may hold together.
        target: the coverage every type should reach, in (0, 1].
        depth: ``m``: coverage means the type's top ``m`` entries all load.
        now: the time recency is scored at.
        holdout: the share of queries kept aside to validate the plan (every
            k-th query, deterministically); 0 validates nothing.
        merge: also try grouping types into shared pools, keeping a merge only
            when running the grouped pools shows every type still reaching
            ``target`` on the planning queries.
        scorer: as for :func:`~poolsplit_core.poolsplit.retrieve_pools`.
        token_counter: as for :func:`~poolsplit_core.poolsplit.retrieve_pools`.
        is_active: as for :func:`~poolsplit_core.poolsplit.retrieve_pools`.

    Returns:
        A :class:`Plan`.

    Raises:
        ValueError: a bad argument, no contextual entries, or a budget the
            always tier uses up (the message gives the tier's tokens).

    How: the always tier's tokens (p95 over the planning queries) are set
    aside. Each type's demand per query is what its top ``m`` entries cost;
    sorted, these give its coverage at any budget. Max-min fairness: the
    largest coverage ``k/n`` that every type can reach together within the
    budget; then the slack is spent step by step where it buys the most
    coverage per token; what no planning query needs goes, as a
    margin for unseen queries, to the type with the smallest share of its
    entries that fit its budget, until every entry fits; what is left then
    is headroom, spread over the pools in proportion to their budgets, so
    the pools' ``max_tokens`` add up to the budget less the always tier and
    a slightly longer entry tomorrow still fits. Each pool holds
    at least ``m`` entries: without ``total_entries``, as many entries of
    the type's median cost as its budget holds; with it, ``m`` each and the
    rest in that proportion.
    """
    if isinstance(total_tokens, bool) or not isinstance(total_tokens, int) or total_tokens < 1:
        raise ValueError(f"total_tokens must be an int >= 1, got {total_tokens!r}")
    if total_entries is not None and (isinstance(total_entries, bool)
                                      or not isinstance(total_entries, int)
                                      or total_entries < 1):
        raise ValueError(f"total_entries must be an int >= 1 or None, got {total_entries!r}")
    if isinstance(target, bool) or not isinstance(target, (int, float)) or not 0 < target <= 1:
        raise ValueError(f"target must be a number in (0, 1], got {target!r}")
    if isinstance(holdout, bool) or not isinstance(holdout, (int, float)) or not (
            0 <= holdout < 1):
        raise ValueError(f"holdout must be a number in [0, 1), got {holdout!r}")
    depth = _check_depth(depth)
    listed = _check_queries(queries)
    planning, held = _split(len(listed), float(holdout))
    sample = _Sample(store, listed, depth, now, scorer, token_counter, is_active)
    kinds = [kind for kind in sample.types if sample.contextual[kind] > 0]
    if not kinds:
        raise ValueError("the store has no active contextual entry (only always-scope or"
                         " inactive ones): there is nothing to plan")
    if total_entries is not None and total_entries < depth * len(kinds):
        raise ValueError(
            f"total_entries={total_entries} cannot give each of the {len(kinds)} types"
            f" ({', '.join(kinds)}) its top {depth} entr{'y' if depth == 1 else 'ies'};"
            f" it needs at least {depth * len(kinds)}"
        )
    always = math.ceil(_quantile([sample.always_tokens[q] for q in planning], 0.95))
    available = total_tokens - always
    if available <= 0:
        raise ValueError(
            f"the always tier needs {plural(always, 'token')} per query (p95), so"
            f" total_tokens={total_tokens} leaves nothing for the pools; give more than"
            f" {always}"
        )
    demands = {kind: sorted(sample.demand(kind, q, depth) for q in planning) for kind in kinds}
    budgets = _allocate(demands, available, sample.entry_costs(kinds), depth)
    n = len(planning)
    levels = {kind: _covered(demands[kind], budgets[kind]) for kind in kinds}
    need = math.ceil(target * n - 1e-9)
    reached = all(levels[kind] >= need for kind in kinds)
    tokens_for_target = always + sum(demands[kind][need - 1] for kind in kinds)
    median_cost = {kind: _median_entry_cost(sample, kind, planning) for kind in kinds}
    caps = _caps(budgets, median_cost, depth, total_entries)

    pools = _pools_for(sample.types, kinds, budgets, caps)
    notes: list[str] = []
    merged = False
    if merge and reached:
        pools, merged = _merge(sample, pools, planning, need)
        notes.append("grouped pools: every type still reaches the target when they run"
                     if merged else "no grouping of pools keeps every type at the target")
    elif merge:
        notes.append("no grouping tried: one pool per type does not reach the target")
    held_rates = _rates(sample, pools, held) if held else None
    pool_of = {kind: next(p.name for p in pools if p.types is not None and kind in p.types)
               for kind in kinds}
    per_type = {}
    for kind in kinds:
        per_type[kind] = TypePlan(
            type=kind, pool=pool_of[kind], max_tokens=budgets[kind], max_entries=caps[kind],
            predicted=Rate(levels[kind], n),
            held_out=None if held_rates is None else held_rates[kind],
            curve=tuple((d, (i + 1) / n) for i, d in enumerate(demands[kind])),
            entries=sample.contextual[kind], median_cost=median_cost[kind],
            next_step=(demands[kind][levels[kind]] - budgets[kind]
                       if levels[kind] < n else None),
            margin=budgets[kind] - (demands[kind][levels[kind] - 1] if levels[kind] else 0),
        )
    shares = [levels[kind] / n for kind in kinds]
    if not reached:
        notes.append(
            f"target {target:g} out of reach: with {plural(total_tokens, 'token')} the lowest"
            f" coverage is {min(shares):.2f}; the smallest total budget that reaches it is"
            f" {tokens_for_target} tokens"
        )
    for kind, t in per_type.items():
        if t.held_out is not None and t.held_out.share < target:
            over = sorted(d for d in (sample.demand(kind, q, depth) for q in held)
                          if d > t.max_tokens)
            why = (f"on {len(over)} of {len(held)} held-out queries its top entries need"
                   f" {', '.join(map(str, over))} tokens, over its {t.max_tokens}" if over
                   else f"its cap of {plural(t.max_entries, 'entry', 'entries')} is too small")
            notes.append(f"{kind}: held out {t.held_out.share:.2f} < target {target:g}: {why}")
    held_shares = [t.held_out.share for t in per_type.values() if t.held_out is not None]
    return Plan(
        total_tokens=total_tokens, total_entries=total_entries, target=float(target),
        depth=depth, always_tokens=always, pools=tuple(pools), types=per_type,
        lowest=min(shares), mean=sum(shares) / len(shares), reached=reached,
        tokens_for_target=tokens_for_target,
        held_out_lowest=min(held_shares) if held_shares else None,
        curve=_curve(demands, always, tokens_for_target),
        planning_queries=n, held_out_queries=len(held), merged=merged, notes=tuple(notes),
    )


def _split(n: int, holdout: float) -> tuple[list[int], list[int]]:
    """Planning and held-out query indices: every k-th query held out, spread evenly.

    Query ``i`` is held out when ``floor((i + 1) * holdout)`` steps past
    ``floor(i * holdout)``; at least one query is always left to plan on.
    """
    held = [i for i in range(n) if math.floor((i + 1) * holdout) > math.floor(i * holdout)]
    if len(held) >= n:
        held = held[:-1]
    held_set = set(held)
    return [i for i in range(n) if i not in held_set], held


def _covered(sorted_demand: Sequence[int], budget: int) -> int:
    """How many queries' demand fits ``budget`` (the demand sorted ascending)."""
    lo, hi = 0, len(sorted_demand)
    while lo < hi:
        mid = (lo + hi) // 2
        if sorted_demand[mid] <= budget:
            lo = mid + 1
        else:
            hi = mid
    return lo


def _allocate(demands: Mapping[str, Sequence[int]], available: int,
              prior: Mapping[str, Sequence[int]] | None = None, depth: int = 1,
              ) -> dict[str, int]:
    """Token budgets: max-min fair, then the slack where it buys the most coverage.

    invariants: 1) the budgets add up to at most ``available``; 2) every type
    reaches the fair level ``k`` (the largest every type can reach together);
    3) each step of slack raises one type's budget to the demand of one of
    its uncovered queries, the step that covers the most queries per token
    (ties: the smaller step, then the type listed first); 4) with ``prior`` (each type's
    entry costs, sorted), what is left after that is a margin (:func:`_margin`),
    and what the margin leaves is headroom (:func:`_headroom`), so the budgets
    add up to ``available`` exactly.
    """
    kinds = list(demands)
    n = len(next(iter(demands.values())))

    def cost(k: int) -> int:  # every type covering k queries
        return sum(demands[kind][k - 1] for kind in kinds) if k else 0

    fair = 0
    for k in range(n, 0, -1):
        if cost(k) <= available:
            fair = k
            break
    budgets = {kind: demands[kind][fair - 1] if fair else 0 for kind in kinds}
    levels = {kind: _covered(demands[kind], budgets[kind]) for kind in kinds}
    left = available - sum(budgets.values())
    while True:
        best: tuple[float, int, int, str] | None = None  # (-gain per token, step, order, type)
        for i, kind in enumerate(kinds):
            for j in range(levels[kind], n):  # raise the budget to cover query j too
                step = demands[kind][j] - budgets[kind]
                if step > left:
                    break
                gain = _covered(demands[kind], demands[kind][j]) - levels[kind]
                option = (-gain / step, step, i, kind)
                if best is None or option < best:
                    best = option
        if best is None:
            break
        _, step, _, kind = best
        budgets[kind] += step
        left -= step
        levels[kind] = _covered(demands[kind], budgets[kind])
    if prior is not None:
        _headroom(budgets, _margin(budgets, left, prior, depth))
    return budgets


def _margin(budgets: dict[str, int], left: int, prior: Mapping[str, Sequence[int]],
            depth: int) -> int:
    """Spend what no planning query needs as a margin for unseen queries; return what is left.

    An unseen query's best entry may be any entry of the type, so the tokens
    go, step by step, to the type with the smallest share of its entries
    that fit (``depth`` of them at that cost), each step just large enough
    to let the next-cheapest entry in, until no such step fits.
    """
    while left > 0:
        steps = []
        for i, (kind, costs) in enumerate(prior.items()):
            fit = _covered(costs, budgets[kind] // depth)
            if fit < len(costs):
                step = costs[fit] * depth - budgets[kind]
                if step <= left:
                    steps.append((fit / len(costs), step, i, kind))
        if not steps:
            return left
        _, step, _, kind = min(steps)
        budgets[kind] += step
        left -= step
    return left


def _headroom(budgets: dict[str, int], left: int) -> None:
    """Spread the ``left`` tokens over the budgets in proportion to them, all of them.

    Once every entry of every type fits (or no more entries can be let in),
    a plan that stopped there would fit today's entries exactly, and a
    slightly longer one tomorrow would not. So each budget grows by the same
    share, the rounding going to the largest remainders (ties: the type
    listed first); with every budget at 0, the tokens are split evenly.

    >>> budgets = {"a": 30, "b": 10, "c": 0}
    >>> _headroom(budgets, 9)
    >>> budgets
    {'a': 37, 'b': 12, 'c': 0}
    """
    if left <= 0 or not budgets:
        return
    weights = dict(budgets) if any(budgets.values()) else {kind: 1 for kind in budgets}
    total = sum(weights.values())
    extra = {kind: left * w // total for kind, w in weights.items()}
    order = sorted(budgets, key=lambda kind: -(left * weights[kind] % total))  # stable: ties
    for kind in order[:left - sum(extra.values())]:
        extra[kind] += 1
    for kind in budgets:
        budgets[kind] += extra[kind]


def _median_entry_cost(sample: _Sample, kind: str, planning: Sequence[int]) -> float:
    costs = [d.cost or 1 for q in planning for d in sample.rankings[q][kind]]
    return max(1.0, _quantile(costs, 0.5))


def _caps(budgets: Mapping[str, int], median_cost: Mapping[str, float], depth: int,
          total_entries: int | None) -> dict[str, int]:
    """Entry caps: at least ``depth``, and about as many median entries as the budget holds."""
    wanted = {kind: max(depth, int(budgets[kind] // median_cost[kind])) for kind in budgets}
    if total_entries is None or sum(wanted.values()) <= total_entries:
        return wanted
    caps = {kind: depth for kind in budgets}
    spare = total_entries - depth * len(caps)
    extra = {kind: wanted[kind] - depth for kind in budgets}
    total_extra = sum(extra.values())
    for kind in budgets:
        caps[kind] += spare * extra[kind] // total_extra if total_extra else 0
    return caps


def _pools_for(all_types: Sequence[str], kinds: Sequence[str], budgets: Mapping[str, int],
               caps: Mapping[str, int]) -> list[Pool]:
    """One pool per type; a type with only always-scope entries gets a 0/0 pool to load them."""
    return [Pool(kind, budgets.get(kind, 0), caps.get(kind, 0), (kind,))
            for kind in all_types]


def _merge(sample: _Sample, pools: list[Pool], planning: Sequence[int],
           need: int) -> tuple[list[Pool], bool]:
    """Group the two smallest pools while every type still reaches ``need`` when run."""
    merged = False
    while True:
        contextual = [p for p in pools if p.max_tokens > 0]
        if len(contextual) < 2:
            return pools, merged
        accepted = False
        ordered = sorted(contextual, key=lambda p: (p.max_tokens, p.name))
        for a_i in range(len(ordered)):
            for b_i in range(a_i + 1, len(ordered)):
                a, b = ordered[a_i], ordered[b_i]
                group = Pool(f"{a.name}+{b.name}", a.max_tokens + b.max_tokens,
                             a.max_entries + b.max_entries,
                             tuple(a.types or ()) + tuple(b.types or ()))
                trial = [group if p is a else p for p in pools if p is not b]
                if all(rate.hits >= need for rate in _rates(sample, trial, planning).values()):
                    pools, merged, accepted = trial, True, True
                    break
            if accepted:
                break
        if not accepted:
            return pools, merged


def _curve(demands: Mapping[str, Sequence[int]], always: int,
           top: int, points: int = 24) -> tuple[CurvePoint, ...]:
    """Lowest and mean predicted coverage of a plan at up to ``points`` totals, to full coverage.

    >>> [p.total_tokens for p in _curve({"a": [3, 5]}, always=10, top=0)]
    [11, 12, 13, 14, 15]
    """
    kinds = list(demands)
    n = len(next(iter(demands.values())))
    full = always + sum(demands[kind][-1] for kind in kinds)
    high = max(full, top)
    out = []
    # Distinct totals: a span shorter than ``points`` tokens would round to a total twice.
    totals = sorted({always + round((high - always) * j / points) for j in range(1, points + 1)})
    for total in totals:
        if total <= always:
            continue
        budgets = _allocate(demands, total - always)
        shares = [_covered(demands[kind], budgets[kind]) / n for kind in kinds]
        out.append(CurvePoint(total, min(shares), sum(shares) / len(shares)))
    return tuple(out)


# --------------------------------------------------------------------------
# Rendering for people (a separate layer over the plain data)
# --------------------------------------------------------------------------


def _pct(rate: Rate | None) -> str:
    if rate is None:
        return "-"
    return f"{rate.hits}/{rate.total} ({rate.low:.2f}-{rate.high:.2f})"


def format_coverage(report: CoverageReport) -> str:
    """The per-type and per-pool tables ``poolsplit coverage`` prints."""
    n = report.queries
    m = report.depth
    lines = [f"Coverage over {plural(n, 'query', 'queries')} (95% Wilson intervals)", ""]
    deep = [f"top {m}"] if m > 1 else []
    # Two header rows: each group's title spans its columns, so the groups stay apart.
    first = 4 + len(deep)  # the first column of the group "best entry missed"
    groups = {first: 3, first + 3: 2}
    rows: list[tuple[str, ...]] = [
        ("",) * first + ("best entry missed (queries)", "", "", "entries left out (summed)", ""),
        ("type", "entries", "loaded at all", "best entry", *deep,
         "no tokens left (short by)", "pool full", "no pool", "no tokens left", "pool full"),
    ]
    for t in report.types.values():
        if t.best is None:
            rows.append((t.type, f"0 (+{t.always} always)", *["-"] * (8 + len(deep))))
            continue
        tokens = str(t.missed.get("over_tokens", 0))
        if t.tokens_short is not None:
            tokens += f" ({t.tokens_short})"
        rows.append((
            t.type, str(t.entries) + (f" (+{t.always} always)" if t.always else ""),
            _pct(t.any), _pct(t.best), *([_pct(t.depth)] if deep else []), tokens,
            str(t.missed.get("over_entries", 0)), str(t.missed.get("no_pool", 0)),
            str(t.crowded_tokens), str(t.crowded_cap),
        ))
    right = {k + len(deep) for k in (4, 5, 6, 7, 8)}
    lines += ["  " + row for row in table(rows, right=right, spans=groups)]
    lines += ["", "Pools (contextual tokens per query)", ""]
    rows = [("pool", "max tokens", "used p50", "p95", "utilisation", "entries p50/max")]
    for p in report.pools.values():
        rows.append((p.pool, str(p.max_tokens), f"{p.tokens_p50:g}", f"{p.tokens_p95:g}",
                     f"{p.utilisation:.0%}", f"{p.entries_p50:g}/{p.max_entries}"))
    lines += ["  " + row for row in table(rows, right={1, 2, 3, 4, 5})]
    lines += [
        "",
        f"Always tier: {plural(report.always_entries, 'entry', 'entries')},"
        f" {report.always_tokens_p50:g} tokens per query (p95 {report.always_tokens_p95:g}),"
        " outside every budget",
        f"Best-entry coverage over the types: lowest {report.lowest:.2f},"
        f" mean {report.mean:.2f}",
    ]
    return "\n".join(lines) + "\n"


def _why(plan: Plan, t: TypePlan) -> str:
    """Why a type's pool got its budget, in one line (see :class:`TypePlan`)."""
    what = "best entry fits" if plan.depth == 1 else f"top {plan.depth} entries fit"
    met = "target met" if t.predicted.share >= plan.target else "below target"
    dearest = t.max_tokens - t.margin  # what the dearest covered query needs
    step = ("" if t.next_step is None
            else f"; +{plural(t.next_step, 'token')} for 1 more query")
    margin = (f"; +{plural(t.margin, 'token')} of margin for unseen queries" if t.margin
              else "")
    return (f"{plural(t.entries, 'entry', 'entries')}, median pick {t.median_cost:g} tokens,"
            f" room for {t.max_entries}; {what} on {t.predicted.hits}/{t.predicted.total}"
            f" queries ({met}), the dearest needing {dearest}{step}{margin}")


def format_plan(plan: Plan) -> str:
    """The plan, its coverage and its budget curve, as ``poolsplit plan`` prints them."""
    what = "best entry" if plan.depth == 1 else f"top {plan.depth} entries"
    lines = [
        f"Plan for {plural(plan.total_tokens, 'token')}"
        + (f" and {plural(plan.total_entries, 'entry', 'entries')}"
           if plan.total_entries is not None else "")
        + f": {plan.always_tokens} for the always tier (p95),"
        f" {sum(pool.max_tokens for pool in plan.pools)} in {plural(len(plan.pools), 'pool')}",
        f"planned on {plural(plan.planning_queries, 'query', 'queries')}, checked on"
        f" {plan.held_out_queries} held out; coverage = the type's {what} loaded",
        "",
    ]
    rows: list[tuple[str, ...]] = [("pool", "types", "max tokens", "max entries", "why")]
    for pool in plan.pools:
        planned = [t for t in plan.types.values() if t.pool == pool.name]
        why = ("only always-scope entries, loaded outside every budget" if not planned
               else _why(plan, planned[0]) if len(planned) == 1
               else " | ".join(f"{t.type}: {_why(plan, t)}" for t in planned))
        rows.append((pool.name, ",".join(pool.types or ("*",)), str(pool.max_tokens),
                     str(pool.max_entries), why))
    lines += ["  " + row for row in table(rows, right={2, 3})]
    lines += ["", f"Coverage per type (target {plan.target:g})", ""]
    rows = [("type", "predicted", "held out (95% interval)")]
    for t in plan.types.values():
        rows.append((t.type, f"{t.predicted.share:.2f}",
                     "-" if t.held_out is None else
                     f"{t.held_out.share:.2f} ({t.held_out.low:.2f}-{t.held_out.high:.2f})"))
    lines += ["  " + row for row in table(rows, right={1})]
    held = ("" if plan.held_out_lowest is None
            else f", held out lowest {plan.held_out_lowest:.2f}")
    lines += ["", f"lowest {plan.lowest:.2f}, mean {plan.mean:.2f} (predicted){held}"]
    if plan.tokens_for_target is not None:
        lines.append(f"smallest total budget reaching {plan.target:g}:"
                     f" {plural(plan.tokens_for_target, 'token')}")
    lines += [f"note: {note}" for note in plan.notes]
    lines += ["", "Budget vs coverage (predicted)", ""]
    rows = [("total tokens", "lowest", "mean")]
    for point in plan.curve:
        rows.append((str(point.total_tokens), f"{point.lowest:.2f}", f"{point.mean:.2f}"))
    lines += ["  " + row for row in table(rows, right={0, 1, 2})]
    return "\n".join(lines) + "\n"
