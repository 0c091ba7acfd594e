"""Memory found per call, shared by both adapters: the candidate merge and the vector-store plan.

A retriever's candidates (a LangChain ``Document``, a LlamaIndex
``NodeWithScore``) join the stored memory for one call. The adapters differ
only in how they read one: its duplicate key, its score, its entry and the
framework object results are built from -- a :class:`Reading`. Everything
else is written once here: :func:`merge` keeps each key once (a stored one
wins), ranks unscored candidates (:func:`~poolsplit_integrations._entries.rank_similarities`)
and maps them through the one mapping; :func:`select` and :func:`explain`
run the call over the store plus them.

>>> from poolsplit_integrations._live import LiveStore
>>> live = LiveStore([({"id": "a", "content": "alpha"}, "stored a")], key=lambda obj: (obj[-1],))
>>> by_name = Reading(key=lambda c: c[0], score=lambda c: None,
...                   entry=lambda c, s: {"id": c[0], "content": c[1], "similarity": s})
>>> merge(live, [("a", "alpha again"), ("b", "beta"), ("b", "beta twice")], by_name)[0]
[('b', 'beta')]

Memory that lives in a vector store is read by a :class:`VectorSource`, whose
plan is the same in both adapters: the tenant's filter checked (a str or a
number each), the always tier read by metadata filter, then one filtered
search per pool of :meth:`VectorSource.top_k` hits. A document without a
``type`` is a ``"note"`` to the core, so a pool whose types include
``"note"`` reads those too (:func:`takes_untyped`, :func:`best_first`). Each
adapter's subclass supplies only its framework's calls.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from poolsplit_core.poolsplit import Decision, Explanation, Pool
from poolsplit_integrations._entries import rank_similarities
from poolsplit_integrations._live import LiveStore
from poolsplit_integrations._select import Selector

__all__ = ["DEFAULT_TYPE", "FILTERABLE", "Reading", "VectorSource", "best_first",
           "check_search_size", "explain", "merge", "select", "takes_untyped"]

C = TypeVar("C")


def _itself(candidate: Any) -> Any:
    return candidate


@dataclass(frozen=True)
class Reading(Generic[C]):
    """How an adapter reads its framework's candidates: its conversions, and nothing else."""

    #: The candidate's duplicate key; :meth:`LiveStore.holds_key` says a stored one has it.
    key: Callable[[C], Hashable]
    #: The retriever's score of the candidate, or None.
    score: Callable[[C], float | None]
    #: The candidate's entry, with its similarity (its score, or its rank).
    entry: Callable[[C, float | None], dict[str, Any]]
    #: The framework object the results are built from.
    obj: Callable[[C], Any] = _itself


def merge(live: LiveStore, candidates: Sequence[C], reading: Reading[C]
          ) -> tuple[list[Any], list[dict[str, Any]]]:
    """The candidates that join the stored memory, as framework objects and as entries.

    A candidate whose key is stored, or seen earlier among the candidates, is
    dropped: each is kept once. A kept one's score reaches the scorer as the
    entry key ``similarity``; when no candidate has a score, their order does
    (:func:`~poolsplit_integrations._entries.rank_similarities`).
    """
    seen: set[Hashable] = set()
    objects: list[Any] = []
    entries: list[dict[str, Any]] = []
    ranked = rank_similarities([reading.score(candidate) for candidate in candidates])
    for candidate, similarity in zip(candidates, ranked):
        key = reading.key(candidate)
        if key in seen or live.holds_key(key):
            continue
        seen.add(key)
        objects.append(reading.obj(candidate))
        entries.append(reading.entry(candidate, similarity))
    return objects, entries


def select(selector: Selector, query: str, candidates: Sequence[C], reading: Reading[C], *,
           bound: Mapping[str, Any] | None = None, **overrides: Any
           ) -> list[tuple[Any, Decision]]:
    """Run the call over the stored memory plus ``candidates``: each loaded object and Decision.

    In the order adapters return (:meth:`Selector.select`); the object is the
    candidate's own, else the stored one.
    """
    objects, entries = merge(selector.live, candidates, reading)
    loaded = selector.select(query, entries, bound=bound, **overrides)
    return list(zip(selector.live.objects_of(loaded, entries, objects), loaded))


def explain(selector: Selector, query: str, candidates: Sequence[C], reading: Reading[C], *,
            bound: Mapping[str, Any] | None = None, **overrides: Any) -> Explanation:
    """The core's account of the call :func:`select` would make (the same merge)."""
    _, entries = merge(selector.live, candidates, reading)
    return selector.explain(query, entries, bound=bound, **overrides)


# --------------------------------------------------------------------------
# Memory in a vector store: the always tier, then one search per pool
# --------------------------------------------------------------------------

#: Metadata filter values every vector store can compare for equality.
FILTERABLE = (str, int, float)


#: The type the core gives an entry that has none (``entry.get("type", "note")``).
DEFAULT_TYPE = "note"


def takes_untyped(pool: Pool) -> bool:
    """Whether documents without a ``type`` are ``pool``'s candidates: its types name ``"note"``.

    >>> takes_untyped(Pool("notes", 100, 2, ("note",))), takes_untyped(Pool("all", 100, 2))
    (True, False)

    A pool of every type (``types=None``) searches without a type filter, so
    it needs no second search.
    """
    return pool.types is not None and DEFAULT_TYPE in pool.types


def best_first(typed: Sequence[C], untyped: Sequence[C], k: int,
               score: Callable[[C], float | None]) -> list[C]:
    """A pool's two searches as one of ``k`` hits, best score first (an unscored one last).

    >>> best_first([("t1", 0.9), ("t2", 0.4)], [("u1", 0.7)], 2, lambda hit: hit[1])
    [('t1', 0.9), ('u1', 0.7)]
    """
    merged = [*typed, *untyped]
    merged.sort(key=lambda hit: (score(hit) is None, -(score(hit) or 0.0)))
    return merged[:k]


def check_search_size(name: str, value: Any) -> int | None:
    """A per-pool search size: None (the default rule), or an int >= 1."""
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise ValueError(f"{name} must be an int >= 1 or None, got {value!r}")
    return value


class VectorSource(ABC, Generic[C]):
    """Where a retriever reads memory that lives in a vector store, on every query.

    The plan, the same for every framework: the tenant's filter is checked
    (each value a str or a number, which every store's metadata filter can
    compare), the query is made ready to search (embedded, its dimension
    checked), the always tier is read by metadata filter (``scope ==
    "always"`` and the tenant: every correction, whatever a search finds),
    then each pool runs one filtered search (its types and the tenant) of
    :meth:`top_k` hits, so a crowded type cannot push a quiet one out of the
    candidates before pool-split runs. A pool whose types name ``"note"``
    also searches the documents without a ``type`` (the core reads them as
    notes) and keeps the best :meth:`top_k` of both (:func:`best_first`).
    Subclasses supply the framework's calls: :meth:`_prepare`, :meth:`_always`
    and :meth:`_search`.
    """

    #: The store searched; its class name names it in messages.
    vector_store: Any

    @property
    @abstractmethod
    def search_size(self) -> int | None:
        """The per-pool search size as given (None: :meth:`top_k`'s rule)."""

    @property
    def name(self) -> str:
        """The vector store's class name, for messages."""
        return type(self.vector_store).__name__

    def top_k(self, pool: Pool) -> int:
        """The search size of one pool: as given, else 3 x its entry cap (at least 10)."""
        return self.search_size if self.search_size is not None else max(10, 3 * pool.max_entries)

    def candidates(self, query: Any, pools: Sequence[Pool],
                   tenant: Mapping[str, Any] | None) -> list[C]:
        """The always tier (no score), then each pool's hits, best first."""
        checked = self.check_tenant(tenant)
        ready = self._prepare(query, checked)
        found = list(self._always(ready))
        for pool in pools:
            found.extend(self._search(ready, pool))
        return found

    def check_tenant(self, tenant: Mapping[str, Any] | None) -> dict[str, Any]:
        """The tenant's filter, each value one the store can compare (a str or a number)."""
        checked = dict(tenant or {})
        for key, value in checked.items():
            if isinstance(value, bool) or not isinstance(value, FILTERABLE):
                raise ValueError(
                    f"the filter {key}={value!r} cannot be expressed as a metadata filter of"
                    f" {self.name} (a str or a number is)")
        return checked

    @abstractmethod
    def _prepare(self, query: Any, tenant: dict[str, Any]) -> Any:
        """What one query's reads need (its embedding, the store's filters), checked."""

    @abstractmethod
    def _always(self, ready: Any) -> list[C]:
        """The tenant's always-scope memory, read by metadata filter (no score)."""

    @abstractmethod
    def _search(self, ready: Any, pool: Pool) -> list[C]:
        """One pool's filtered search: its types (untyped too for notes), the tenant; top_k hits."""
