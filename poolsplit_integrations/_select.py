"""One call's work, shared by every component: filter, run the core, order the hits.

:class:`Selector` narrows the call's filter (:mod:`~poolsplit_integrations._tenancy`),
refuses an unbound call, runs the core over the living store plus the call's
candidates (:class:`~poolsplit_integrations._live.LiveStore`) and flattens
what loaded into the order adapters return (:func:`assemble`): corrections
first, then each pool's picks, ``k`` filled fairly. It also says out loud
what the pools leave out (:func:`warn_unpooled`) and warns once of an
always tier costlier than every pool together.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from poolsplit_core import tracing
from poolsplit_core.poolsplit import Decision, Explanation, Pool, _hashable
from poolsplit_integrations._live import LiveStore
from poolsplit_integrations._options import (
    ALWAYS_POOL,
    CONTEXT_KWARGS,
    Options,
    check_k,
    refuse_unknown,
)
from poolsplit_integrations._tenancy import (
    DEFAULT,
    USER_KEY,
    carries_user,
    check_user,
    narrow,
    refuse_unbound,
)

__all__ = ["Selector", "assemble", "build_context", "check_query", "warn_unpooled"]

#: Where the Selector warns (an oversized always tier, memories that are no user's).
logger = logging.getLogger("poolsplit")


def build_context(
    default: Mapping[str, Any] | None, message: str, **overrides: Any
) -> dict[str, Any]:
    """The retrieval context of one call: defaults, then overrides, then the query.

    >>> build_context({"project": "atlas", "tags": ["db"]}, "why?", tags=["ops"])
    {'project': 'atlas', 'tags': ['ops'], 'message': 'why?'}

    Overrides whose value is ``None`` are ignored, so ``project=None`` keeps
    the default.
    """
    context = dict(default or {})
    context.update({key: value for key, value in overrides.items() if value is not None})
    context["message"] = message
    return context


def check_query(query: Any, call: str, name: str | None = "retriever") -> str:
    """``query`` if it is a str, else a TypeError saying what the call takes and how to pass it.

    >>> check_query({"question": "why?"}, "PoolSplitRetriever.invoke()")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    TypeError: PoolSplitRetriever.invoke() takes the query as a str, got dict {'question': 'why?'}; in a chain whose input is a dict, pick the query out first: itemgetter('question') | retriever (from operator import itemgetter)

    The query becomes ``context["message"]``; a chain's dict input or a chat
    message reaching ``invoke`` would otherwise be refused by the core as a
    bad context, naming neither the call nor the fix. ``name`` is how the
    hint names the component in a chain (None: a call no chain makes).
    """  # noqa: E501
    if isinstance(query, str):
        return query
    shown = repr(query)
    shown = shown if len(shown) <= 80 else shown[:77] + "..."
    got = f"{call} takes the query as a str, got {type(query).__name__} {shown}"
    if isinstance(query, Mapping):
        key = next((k for k, value in query.items() if isinstance(value, str)), "<key>")
        if name is None:
            raise TypeError(f"{got}; pass the query itself, e.g. query[{key!r}]")
        raise TypeError(f"{got}; in a chain whose input is a dict, pick the query out first:"
                        f" itemgetter({key!r}) | {name} (from operator import itemgetter)")
    if isinstance(getattr(query, "content", None), str):  # a chat message
        raise TypeError(f"{got}; pass its text, .content")
    raise TypeError(got)


def assemble(loaded: Mapping[str, Sequence[Decision]], k: int | None = None) -> list[Decision]:
    """Flatten one call's loaded entries into the order adapters return.

    Every always-scope entry of every pool comes first (in the result's
    order: the ``always`` pool's first, then each pool's, each in store
    order), then the contextual entries pool by pool in selection order.
    ``k`` caps the contextual entries across pools, filled fairly:
    round-robin over the pools in pool order, each pool's best first. It
    never cuts an always-scope entry. ``loaded`` is the loaded Decisions per
    pool, in load order (:meth:`PreparedStore.decide` or ``Explanation.loaded()``);
    an always-scope one has no score.
    """
    always = [d for picked in loaded.values() for d in picked if d.outcome == "always"]
    contextual = [[d for d in picked if d.outcome == "selected"] for picked in loaded.values()]
    if k is not None:
        keep = _round_robin_counts([len(picked) for picked in contextual], k)
        contextual = [picked[:n] for picked, n in zip(contextual, keep)]
    return always + [d for picked in contextual for d in picked]


def _round_robin_counts(sizes: Sequence[int], k: int) -> list[int]:
    """How many of each pool's entries a fair cap of ``k`` keeps.

    >>> _round_robin_counts([5, 1, 3], 6)
    [3, 1, 2]
    """
    keep = [0] * len(sizes)
    budget = k
    while budget > 0 and any(n < size for n, size in zip(keep, sizes)):
        for i, size in enumerate(sizes):
            if budget > 0 and keep[i] < size:
                keep[i] += 1
                budget -= 1
    return keep


def warn_unpooled(
    log: logging.Logger, owner: str, entries: Iterable[Mapping[str, Any]], pools: Sequence[Pool],
    *, written: bool = False, all_memory: bool = True,
) -> None:
    """Say out loud what the pools leave out: types no pool takes, types no entry has.

    A type no pool takes: its contextual entries never load (its corrections
    still do, under the ``always`` pool). A pool naming a type no entry has
    (``"tsak"`` for ``"task"``) is checked when a component is built over
    entries, not on a write (``written=True``); an empty pool list loads
    corrections only. ``explain`` says ``no_pool`` per entry; this says it
    once, when entries are read. ``all_memory=False`` says the entries are not
    all the memory (pinned ones, beside candidates found per call): no
    type is then missing for sure.
    """
    listed = list(entries)
    if not pools and listed and not written:
        log.warning("%s: no pool: only corrections (always-scope entries) load", owner)
        return
    unpooled: dict[str, Any] = {}  # repr of a type no pool takes -> the id of one such entry
    seen: set[Any] = set()
    for entry in listed:
        entry_type = entry.get("type", "note")
        if _hashable(entry_type):
            seen.add(entry_type)
        name = repr(entry_type)
        if (entry.get("scope") != "always" and name not in unpooled
                and not any(pool.accepts(entry_type) for pool in pools)):
            unpooled[name] = entry.get("id")
    if unpooled:
        named = "; ".join(f"type {name} (e.g. id={one!r})" for name, one in unpooled.items())
        log.warning("%s: no pool takes %s -- such entries never load, but their corrections"
                    " do, under the %r pool (pools: %s)", owner, named, ALWAYS_POOL,
                    ", ".join(f"{p.name} {list(p.types) if p.types else 'every type'}"
                              for p in pools))
    if written or not listed or not all_memory:
        return
    for pool in pools:
        for missing in [t for t in pool.types or () if t not in seen]:
            log.warning("%s: pool %r names type %r, which no entry has (types: %s)", owner,
                        pool.name, missing, ", ".join(sorted(map(repr, seen), key=str)))


class Selector:
    """One call's work, shared by every component: filter, run the core, order the hits.

    >>> live = LiveStore([({"id": "fix", "scope": "always"}, None),
    ...                   ({"id": "a", "content": "alpha"}, None)])
    >>> hits = Selector(live, Options([Pool("all", max_tokens=100, max_entries=5)])
    ...                 ).select("alpha?")
    >>> [(d.entry["id"], d.outcome) for d in hits]
    [('fix', 'always'), ('a', 'selected')]

    Tenancy: the call's filter is the component's ``filter`` AND the run's
    bound tenant AND the per-call filter (:func:`narrow`); it keeps only
    entries whose keys equal every item of it, always-scope entries included,
    before pool-split runs. A call whose filter lacks a required key (or
    gives one no value) is refused -- fail closed. The required keys are
    ``require_filter_keys`` when it was given; by default (``None``) they are
    ``("user_id",)`` as soon as one memory -- stored, or a candidate of this
    call -- carries a ``user_id``, so a multi-user store never answers a query
    that names no user, and a memory without ``user_id`` in such a store is
    no user's (a warning says so once). A ``user_id`` in a filter must be a
    non-empty string. The filter goes to the core as ``where=``, which walks
    only the named tenant's entries. Every active correction loads: the core
    runs with ``always_pool=True``, and ``max_always_tokens`` goes to it too.
    """

    def __init__(self, live: LiveStore, options: Options, owner: str = "this retriever",
                 how: str = "pass filter={filter}") -> None:
        # how: how the component's caller names a tenant (refuse_unbound's ``how``)
        self.live, self.options, self.owner, self.how = live, options, owner, how

    def required_keys(self, extra: Iterable[Mapping[str, Any]] = ()) -> tuple[str, ...]:
        """The keys a call's filter must hold: as given, else ``user_id`` when memories carry one.

        >>> live = LiveStore([({"id": "a", "user_id": "ana"}, None)])
        >>> Selector(live, Options([])).required_keys()
        ('user_id',)
        >>> Selector(live, Options([], require_filter_keys=())).required_keys()
        ()
        """
        keys = self.options.require_filter_keys
        if keys is not None:
            return keys
        users, total = self.live.user_counts()
        if users or any(map(carries_user, extra)):
            if users < total:
                self._warn_unowned(total - users)
            return (USER_KEY,)
        return ()

    def active_filter(
        self, filter: Any = DEFAULT, bound: Mapping[str, Any] | None = None,
        extra: Iterable[Mapping[str, Any]] = (),
    ) -> dict[str, Any] | None:
        """The call's filter (component AND bound AND per call), or a ValueError: fail closed."""
        active = narrow(self.options.filter, bound, filter, owner=self.owner)
        required = self.required_keys(extra)
        why = (f"its memories carry {USER_KEY!r} (require_filter_keys=() shares them with"
               " every caller)" if self.options.require_filter_keys is None and required else "")
        refuse_unbound(active, required, owner=self.owner, how=self.how, why=why)
        if active is not None and USER_KEY in active:
            check_user(active[USER_KEY], f"{self.owner}: its filter")
        return active

    def narrowed(self, filter: Any) -> Options:
        """The options with their filter narrowed by ``filter``, refused if still unbound.

        What ``with_filter`` gives a component: its filter AND ``filter``
        (:func:`~poolsplit_integrations._tenancy.narrow`: a conflict is a
        ValueError), refused -- fail closed -- when the result lacks a
        required key or gives one no value.
        """
        narrowed = narrow(self.options.filter, filter, owner=self.owner)
        options = dataclasses.replace(self.options, filter=narrowed)
        Selector(self.live, options, owner=self.owner,
                 how="pass with_filter({filter})").active_filter()
        return options

    def _warn_unowned(self, count: int) -> None:
        """Say once per component that memories without ``user_id`` are no user's."""
        situation = (self.owner, -1, count, ())
        if situation in self.live.warned:
            return
        self.live.warned.add(situation)
        logger.warning(
            "%s: %d memor%s carry no %r while others do: no user's query returns them."
            " Give each a %r, or build the component with require_filter_keys=() to"
            " serve one shared store", self.owner, count, "y" if count == 1 else "ies",
            USER_KEY, USER_KEY)

    def select(
        self,
        message: str,
        extra: Sequence[Mapping[str, Any]] = (),
        *,
        k: int | None = None,
        filter: Any = DEFAULT,
        bound: Mapping[str, Any] | None = None,
        **overrides: Any,
    ) -> list[Decision]:
        """Run pool-split for one query over the store plus ``extra``: loaded, in adapter order.

        ``overrides`` (``project``, ``tags``) replace the default context for
        this call; ``k`` replaces the default cap.
        """
        options = self.options
        context = build_context(options.context, message, **overrides)
        component = self.owner[5:] if self.owner.startswith("this ") else self.owner
        # One span per read, opened first so that a refused call is an error span
        # (or the adapter's, opened before its own refusals: this joins it).
        engine = self.live.store.engine
        with tracing.read(component, context, None, engine, join=True) as span:
            span.engine(engine)
            refuse_unknown("Selector.select()", overrides, CONTEXT_KWARGS)
            where = self.active_filter(filter, bound, extra=extra)
            span.filtered(where)
            decided = self.live.store.decide(
                options.pools, context, scorer=options.scorer, now=options.now, extra=extra,
                where=where, max_always_tokens=options.max_always_tokens, always_pool=True)
            self._warn_always(decided)
            got = assemble(decided, options.k if k is None else check_k(k))
            span.loaded(len(got), lambda: self.explain(message, extra, filter=filter,
                                                       bound=bound, **overrides), got)
        return got

    def explain(
        self,
        message: str,
        extra: Sequence[Mapping[str, Any]] = (),
        *,
        filter: Any = DEFAULT,
        bound: Mapping[str, Any] | None = None,
        **overrides: Any,
    ) -> Explanation:
        """The core's records and ledgers for the call :meth:`select` would make.

        Same context and filter (and the same refusals); ``k`` does not apply,
        and an always tier above ``max_always_tokens`` is reported, not raised.
        Entries the filter rejects get no record.
        """
        refuse_unknown("Selector.explain()", overrides, CONTEXT_KWARGS)
        options = self.options
        where = self.active_filter(filter, bound, extra=extra)
        return self.live.store.explain_pools(
            options.pools, build_context(options.context, message, **overrides),
            scorer=options.scorer, now=options.now, extra=extra, where=where,
            always_pool=True)

    def _warn_always(self, decided: Mapping[str, Sequence[Decision]]) -> None:
        if self.options.max_always_tokens is not None:
            return  # the core raised if the tier was over its ceiling
        always = [d for picked in decided.values() for d in picked if d.outcome == "always"]
        total = sum(d.cost or 0 for d in always)
        budget = sum(pool.max_tokens for pool in self.options.pools)
        if total > budget:
            # Once per tier and budget: the same tier on every turn is one situation.
            # A write or another tenant's tier is another.
            seen = self.live.warned
            situation = (self.owner, budget, total, tuple(d.index for d in always))
            if situation in seen:
                return
            if len(seen) >= 256:  # tenants are the users': keep it small
                seen.clear()
            seen.add(situation)
            logger.warning(
                "always-scope entries cost %d tokens, more than all pools' max_tokens together"
                " (%d): %s; set max_always_tokens to make this an error", total, budget,
                ", ".join(str(d.entry.get("id", f"index {d.index}")) for d in always),
            )
