"""The one mapping between framework documents and poolsplit entry dicts.

Both adapters (LangChain ``Document``, LlamaIndex ``TextNode``) reduce their
objects to ``(text, metadata, id)`` and call :func:`to_entry`; results go back
through :func:`result_metadata`. Nothing here imports a framework.

============================  =================================================
entry key                      comes from
============================  =================================================
``content``                    the text (``page_content`` / node text)
``id``                         ``metadata["id"]``, else the document/node id
``type``                       ``metadata["type"]`` (missing: ``"note"``)
``scope``                      ``metadata["scope"]`` (``"always"`` = correction)
``tags``                       ``metadata["tags"]`` (a str is one tag)
``project``                    ``metadata["project"]``
``created``                    ``metadata["created"]`` (ISO-8601 or datetime)
``token_count``                ``metadata["token_count"]`` (positive int)
``base_priority``              ``metadata["base_priority"]`` (default 5)
``status``                     ``metadata["status"]`` (default ``"active"``)
``superseded_by``              ``metadata["superseded_by"]``
``similarity``                 a candidate's retriever score, when it has one
any other key                  passed through for a custom scorer
============================  =================================================

Results carry three added metadata keys: ``poolsplit_pool`` (the pool's
name), ``poolsplit_score`` (the score, ``None`` for always-scope) and
``poolsplit_always`` (bool). Metadata is always copied, never changed in place.

Also shared by every component: the options and their checks
(:data:`OPTION_CHECKS`), the refusal of unknown keyword arguments
(:func:`refuse_unknown`), and serialisation -- pools as plain data
(``{"name", "max_tokens", "max_entries", "types"}``), callables refused by
name (:func:`refuse_unserialisable`).
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from poolsplit_core._plain import pool_from_data, pool_to_data
from poolsplit_core.poolsplit import (
    AlwaysScopeOverflowError,
    ConfiguredScorer,
    Decision,
    Explanation,
    Pool,
    PreparedStore,
    _check_pools,
    default_is_active,
    default_scorer,
    default_token_counter,
    make_scorer,
)

logger = logging.getLogger("poolsplit")

#: The entry keys the README gives a meaning to ("Entries and the framework mapping"),
#: read from metadata.
ENTRY_KEYS = (
    "id", "type", "scope", "tags", "project", "created",
    "token_count", "base_priority", "status", "superseded_by",
)
#: Metadata keys poolsplit adds to the documents it returns.
RESULT_KEYS = ("poolsplit_pool", "poolsplit_score", "poolsplit_always")


def to_entry(
    text: str,
    metadata: Mapping[str, Any] | None,
    doc_id: str | None = None,
    *,
    similarity: float | None = None,
) -> dict[str, Any]:
    """Map ``(text, metadata, id)`` to a new entry dict; ``metadata`` is copied.

    >>> to_entry("Never force-push.", {"scope": "always"}, "d1")
    {'scope': 'always', 'content': 'Never force-push.', 'id': 'd1'}
    """
    entry = dict(metadata or {})
    entry["content"] = text
    if entry.get("id") is None and doc_id is not None:
        entry["id"] = doc_id
    if similarity is not None:
        entry["similarity"] = similarity
    return entry


def result_metadata(
    metadata: Mapping[str, Any] | None, pool: str, score: float | None, always: bool
) -> dict[str, Any]:
    """A copy of ``metadata`` with the three ``poolsplit_*`` keys added.

    >>> result_metadata({"type": "task"}, "work", 4.5, False)
    {'type': 'task', 'poolsplit_pool': 'work', 'poolsplit_score': 4.5, 'poolsplit_always': False}
    """
    out = dict(metadata or {})
    out["poolsplit_pool"] = pool
    out["poolsplit_score"] = score
    out["poolsplit_always"] = always
    return out


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


@dataclass(frozen=True)
class Hit:
    """One loaded entry, in the order an adapter returns it."""

    index: int  # position in the entries given to the core
    pool: str
    score: float | None  # None for always-scope entries
    always: bool


def assemble(loaded: Mapping[str, Sequence[Decision]], k: int | None = None) -> list[Hit]:
    """Flatten one call's loaded entries into the order adapters return.

    Every always-scope entry of every pool comes first (pool order, then
    store order), then the contextual entries pool by pool in selection
    order. ``k`` caps the contextual entries across pools, filled fairly:
    round-robin over the pools in pool order, each pool's best first. It
    never cuts an always-scope entry. ``loaded`` is the loaded Decisions per
    pool, in load order (:meth:`PreparedStore.decide` or ``Explanation.loaded()``).
    """
    always = [d for picked in loaded.values() for d in picked if d.outcome == "always"]
    contextual = [[d for d in picked if d.outcome == "selected"] for picked in loaded.values()]
    if k is not None:
        keep = _round_robin_counts([len(picked) for picked in contextual], k)
        contextual = [picked[:n] for picked, n in zip(contextual, keep)]
    ordered = always + [d for picked in contextual for d in picked]
    return [
        Hit(d.index, d.pool or "", None if d.outcome == "always" else d.score,
            d.outcome == "always")
        for d in ordered
    ]


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


def check_k(k: Any) -> int | None:
    """Validate a contextual cap: None, or an int >= 0."""
    return _optional_count("k", k)


def _optional_count(name: str, value: Any) -> int | None:
    """None, or an int >= 0 (not a bool); the error names ``name`` and the value."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int or None, got {value!r}")
    if value < 0:
        raise ValueError(f"{name} must be >= 0, got {value}")
    return value


def check_pools_arg(pools: Iterable[Any]) -> list[Any]:
    """Validate an adapter's pool list at construction: non-empty, unique names.

    A pool may be given as plain data (``{"name", "max_tokens", "max_entries",
    "types"}``, as serialised), so a component rebuilt from its dict gets Pools.

    >>> check_pools_arg([{"name": "all", "max_tokens": 10, "max_entries": 2}])
    [Pool(name='all', max_tokens=10, max_entries=2, types=None)]
    """
    if isinstance(pools, (list, tuple)):
        pools = [pool_from_data(pool, f"pools[{i}]") if isinstance(pool, Mapping) else pool
                 for i, pool in enumerate(pools)]
    checked = _check_pools(pools)
    if not checked:
        raise ValueError("pools must hold at least one Pool, got an empty list")
    return checked


class _Default:
    def __repr__(self) -> str:
        return "DEFAULT"


#: "Not given": keep the retriever's own setting (``None`` means "no filter").
DEFAULT: Any = _Default()


class Selector:
    """What both adapters delegate to: the prepared static store and the core's options.

    Built once per retriever (the static store is mapped and prepared once),
    then asked per query. It returns the entries the core saw and the
    :class:`Hit` list in adapter order, so the adapter only translates back.

    >>> sel = Selector([{"id": "fix", "scope": "always"}, {"id": "a", "content": "alpha"}],
    ...                [Pool("all", max_tokens=100, max_entries=5)])
    >>> entries, hits = sel.select("alpha?")
    >>> [(entries[h.index]["id"], h.always) for h in hits]
    [('fix', True), ('a', False)]

    Tenancy: ``filter`` keeps only entries whose keys equal every item of it
    (an entry lacking a key does not match), always-scope entries included,
    before pool-split runs. With ``require_filter_keys``, a call whose filter
    lacks any of those keys is refused -- fail closed. ``max_always_tokens``
    caps the always tier: a call whose loaded always-scope entries cost more
    raises :class:`AlwaysScopeOverflowError` rather than drop a correction.
    """

    def __init__(
        self,
        entries: Sequence[Mapping[str, Any]],
        pools: Iterable[Pool],
        *,
        context: Mapping[str, Any] | None = None,
        k: int | None = None,
        scorer: Any = default_scorer,
        token_counter: Any = default_token_counter,
        is_active: Any = default_is_active,
        now: datetime | None = None,
        filter: Mapping[str, Any] | None = None,
        require_filter_keys: Iterable[str] = (),
        max_always_tokens: int | None = None,
    ) -> None:
        self.entries = list(entries)
        self.pools = check_pools_arg(pools)
        self.context = dict(context or {})
        self.k = check_k(k)
        self.scorer, self.now = scorer, now
        self.token_counter, self.is_active = token_counter, is_active
        self.filter = check_filter(filter)
        self.require_filter_keys = check_required_keys(require_filter_keys)
        self.max_always_tokens = check_max_always_tokens(max_always_tokens)
        # The store indexes with the scorer's word reader (make_scorer), so a
        # factory scorer keeps the prepared walk.
        self.store = PreparedStore(self.entries, scorer=scorer, token_counter=token_counter,
                                   is_active=is_active)

    def with_filter(self, filter: Mapping[str, Any] | None) -> Selector:
        """The same prepared store and options under another default filter (cheap)."""
        other = copy.copy(self)
        other.filter = check_filter(filter)
        return other

    def select(
        self,
        message: str,
        extra: Sequence[Mapping[str, Any]] = (),
        *,
        k: int | None = None,
        filter: Any = DEFAULT,
        **overrides: Any,
    ) -> tuple[list[Mapping[str, Any]], list[Hit]]:
        """Run pool-split for one query over the static store plus ``extra``.

        ``overrides`` (e.g. ``project``, ``tags``) replace the default context
        for this call; ``k`` replaces the default cap; ``filter`` replaces the
        default filter (``None`` or ``{}``: no filter, if none is required).
        """
        refuse_unknown("Selector.select()", overrides, CONTEXT_KWARGS)
        context, include = self._call(message, filter, overrides)
        decided = self.store.decide(self.pools, context, scorer=self.scorer, now=self.now,
                                    extra=extra, include=include)
        self._check_always(decided)
        entries = self.entries + list(extra) if extra else self.entries
        return entries, assemble(decided, self.k if k is None else check_k(k))

    def explain(
        self,
        message: str,
        extra: Sequence[Mapping[str, Any]] = (),
        *,
        filter: Any = DEFAULT,
        **overrides: Any,
    ) -> Explanation:
        """The core's records and ledgers for the call :meth:`select` would make.

        Same context and filter (and the same refusal when a required filter
        key is missing); ``k`` does not apply. Entries the filter rejects get
        no record.
        """
        refuse_unknown("Selector.explain()", overrides, CONTEXT_KWARGS)
        context, include = self._call(message, filter, overrides)
        return self.store.explain_pools(self.pools, context, scorer=self.scorer, now=self.now,
                                        extra=extra, include=include)

    def refuse_missing_keys(
        self, filter: Any = DEFAULT, *, owner: str = "this retriever", hint: str = ""
    ) -> dict[str, Any] | None:
        """Fail closed: the call's filter, or a ValueError naming the required keys it lacks.

        Adapters call this before any work (a base retriever is not even
        queried); :meth:`select` and :meth:`explain` check again on their own.
        """
        active = self.filter if filter is DEFAULT else check_filter(filter)
        missing = [key for key in self.require_filter_keys if key not in (active or {})]
        if missing:
            raise ValueError(
                f"{owner} requires a filter on {missing}; its filter {dict(active or {})!r}"
                f" lacks {missing}" + (f"; {hint}" if hint else "")
            )
        return active

    def _call(
        self, message: str, filter: Any, overrides: Mapping[str, Any]
    ) -> tuple[dict[str, Any], Callable[[Mapping[str, Any]], bool] | None]:
        active = self.refuse_missing_keys(filter)
        return build_context(self.context, message, **overrides), matcher(active)

    def _check_always(self, decided: Mapping[str, Sequence[Decision]]) -> None:
        always = [d for picked in decided.values() for d in picked if d.outcome == "always"]
        total = sum(d.cost or 0 for d in always)
        if self.max_always_tokens is not None:
            if total > self.max_always_tokens:
                raise AlwaysScopeOverflowError([d.entry for d in always], total,
                                               self.max_always_tokens)
        elif total > sum(pool.max_tokens for pool in self.pools):
            logger.warning(
                "always-scope entries cost %d tokens, more than all pools' max_tokens together"
                " (%d): %s; set max_always_tokens to make this an error", total,
                sum(pool.max_tokens for pool in self.pools),
                ", ".join(str(d.entry.get("id", f"index {d.index}")) for d in always),
            )


def matcher(
    filter: Mapping[str, Any] | None,
) -> Callable[[Mapping[str, Any]], bool] | None:
    """A predicate for a hard metadata filter: equality on every key; None for no filter.

    >>> keep = matcher({"user_id": "a"})
    >>> keep({"user_id": "a", "type": "task"}), keep({"user_id": "b"}), keep({})
    (True, False, False)
    """
    if not filter:
        return None
    items = tuple(filter.items())

    def keep(entry: Mapping[str, Any]) -> bool:
        return all(key in entry and entry[key] == value for key, value in items)

    return keep


def check_filter(filter: Any) -> dict[str, Any] | None:
    """Validate a filter: None, or a mapping with str keys (copied)."""
    if filter is None:
        return None
    if not isinstance(filter, Mapping):
        raise TypeError(f"filter must be a dict or None, got {type(filter).__name__}")
    for key in filter:
        if not isinstance(key, str):
            raise TypeError(f"filter keys must be str, got {key!r}")
    return dict(filter)


def check_required_keys(keys: Any) -> tuple[str, ...]:
    """Validate ``require_filter_keys``: an iterable of str (a bare str is one key)."""
    if isinstance(keys, str):
        return (keys,)
    out = tuple(keys)
    for key in out:
        if not isinstance(key, str):
            raise TypeError(f"require_filter_keys must hold str, got {key!r}")
    return out


def check_max_always_tokens(value: Any) -> int | None:
    """Validate ``max_always_tokens``: None, or an int >= 0."""
    return _optional_count("max_always_tokens", value)


#: The options every adapter component shares, and how each is checked: one
#: pydantic ``field_validator(*OPTION_CHECKS)`` per component calls :func:`check_option`.
OPTION_CHECKS: dict[str, Callable[[Any], Any]] = {
    "pools": check_pools_arg,
    "k": check_k,
    "filter": check_filter,
    "require_filter_keys": check_required_keys,
    "max_always_tokens": check_max_always_tokens,
}


def check_option(name: str | None, value: Any) -> Any:
    """Check the shared option ``name`` (a pydantic validator's ``info.field_name``)."""
    return OPTION_CHECKS[name or ""](value)


# --------------------------------------------------------------------------
# Unknown keyword arguments: refused, naming the accepted ones
# --------------------------------------------------------------------------

#: The per-call context overrides every component's calls take.
CONTEXT_KWARGS = ("project", "tags")


def refuse_unknown(owner: str, given: Iterable[Any], accepted: Iterable[str]) -> None:
    """Raise a TypeError naming the keyword arguments of ``given`` not in ``accepted``.

    A misspelt argument (``top_n=``, ``tagz=``) would otherwise be dropped
    silently, and the caller would never learn that it did nothing.

    >>> refuse_unknown("Block.get()", {"tags": [], "tagz": []}, ["project", "tags"])
    Traceback (most recent call last):
    ...
    TypeError: Block.get() got unexpected keyword argument(s) ['tagz']; it accepts project=, tags=

    Args:
        owner: the call, as the user wrote it, e.g. ``"PoolSplitRetriever.invoke()"``.
        given: the names of the keyword arguments received.
        accepted: every name the call accepts, in the order to list them.
    """
    allowed = list(accepted)
    unknown = sorted(str(name) for name in given if name not in allowed)
    if unknown:
        raise TypeError(
            f"{owner} got unexpected keyword argument(s) {unknown};"
            f" it accepts {', '.join(f'{name}=' for name in allowed)}"
        )


def model_arguments(model: Any) -> list[str]:
    """The keyword arguments a pydantic model's constructor accepts: its fields (by alias)."""
    return [field.alias or name for name, field in model.model_fields.items()]


def refuse_unknown_fields(model: Any, data: Any) -> Any:
    """A pydantic ``model_validator(mode="before")`` body: refuse keys that are not fields."""
    if isinstance(data, Mapping):
        refuse_unknown(f"{model.__name__}()", data, model_arguments(model))
    return data


# --------------------------------------------------------------------------
# Serialisation: pools as plain data, callables refused by name
# --------------------------------------------------------------------------

#: The hooks each component takes, and their defaults. A default serialises
#: as "the default" (left out, or null); a custom callable cannot serialise.
CALLABLE_DEFAULTS: dict[str, Callable[..., Any]] = {
    "scorer": default_scorer,
    "token_counter": default_token_counter,
    "is_active": default_is_active,
}


class NotSerializableError(TypeError, ValueError):
    """A component holds something that is code or a live object, not data.

    A ``TypeError``, as ``json.dumps`` raises for a value it cannot write, and a
    ``ValueError``, as pydantic's serialisation errors are.
    """


def pools_to_data(pools: Iterable[Pool]) -> list[dict[str, Any]]:
    """The pools as JSON-ready dicts (``types``: a list, or None for every type).

    >>> pools_to_data([Pool("work", 800, 6, ("task",))])
    [{'name': 'work', 'max_tokens': 800, 'max_entries': 6, 'types': ['task']}]
    """
    return [pool_to_data(pool) for pool in pools]


def default_hook(name: str, value: Any) -> Any:
    """``value``, or the default hook for ``None`` (how a serialised default reads back).

    A ``scorer`` given as a mapping is a configured scorer's options, as
    serialised: ``{"words": "unicode"}`` reads back as ``make_scorer(words="unicode")``.
    """
    if value is None:
        return CALLABLE_DEFAULTS[name]
    return scorer_from_data(value) if name == "scorer" else value


def scorer_from_data(value: Any) -> Any:
    """``value``, or the configured scorer a mapping of options describes."""
    if isinstance(value, Mapping):
        return make_scorer(**{str(key): option for key, option in value.items()})
    return value


def scorer_data(values: Mapping[str, Any], skip: Iterable[str] = ()) -> dict[str, Any]:
    """``{"scorer": options}`` when the scorer is a configured one and not skipped, else ``{}``."""
    scorer = values.get("scorer")
    if "scorer" in set(skip) or not isinstance(scorer, ConfiguredScorer):
        return {}
    return {"scorer": scorer.to_data()}


def refuse_unserialisable(
    owner: str,
    values: Mapping[str, Any],
    *,
    live: Iterable[str] = (),
    skip: Iterable[str] = (),
    hint: str,
) -> None:
    """Refuse to serialise a component holding code: a NotSerializableError naming the field.

    A hook (``scorer``, ``token_counter``, ``is_active``) serialises only as
    its default, or for the scorer as a configured scorer's named options
    (:func:`~poolsplit_core.poolsplit.make_scorer`); a ``live`` field (a base
    retriever, a callable store) only as None.

    Args:
        owner: the component's class name.
        values: the component's field values by name.
        live: fields that must be None (or absent) to serialise.
        skip: fields the caller excluded from the output.
        hint: how to serialise anyway, with ``{name}`` for the field's name.
    """
    skipped = set(skip)
    for name, default in CALLABLE_DEFAULTS.items():
        value = values.get(name, default)
        if name not in skipped and isinstance(value, ConfiguredScorer):
            try:
                value.to_data()  # named options serialise as data
            except TypeError as exc:
                raise NotSerializableError(
                    f"{owner} cannot be serialised: {name} is {value!r}: {exc}; "
                    + hint.format(name=name)
                ) from None
            continue
        if name not in skipped and value is not default:
            raise NotSerializableError(
                f"{owner} cannot be serialised: {name} is a custom callable"
                f" ({_callable_name(value)}), which is code, not data; "
                + hint.format(name=name)
            )
    for name in live:
        value = values.get(name)
        if name not in skipped and value is not None:
            what = (f"is a callable ({_callable_name(value)}), which is code" if callable(value)
                    else f"holds a live object ({type(value).__name__})")
            raise NotSerializableError(
                f"{owner} cannot be serialised: {name} {what}, not data; "
                + hint.format(name=name)
            )


def excluded(exclude: Any) -> set[str]:
    """The top-level field names of a pydantic-style ``exclude`` argument."""
    if exclude is None:
        return set()
    return {str(name) for name in exclude}


def _callable_name(value: Any) -> str:
    name = getattr(value, "__qualname__", None) or getattr(value, "__name__", None)
    return str(name) if name else type(value).__name__

