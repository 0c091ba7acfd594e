"""The options every adapter component shares, declared once, and the refusal of any other.

:class:`Options` is the one declaration of the shared options: each
field's type, default, description and whether a component freezes it
(``field(metadata={"description": ..., "frozen": ...})``). Everything else is
read from it: :data:`OPTION_NAMES`, the hooks and their defaults
(:data:`CALLABLE_DEFAULTS`), the pydantic fields every pydantic component
inherits (:class:`~poolsplit_integrations._models.OptionsModel`, generated),
and what the LlamaIndex retriever writes when serialised
(:meth:`Options.to_data`). Each option's check is in :data:`OPTION_CHECKS`,
which the dataclass and the pydantic validators both run.

>>> opts = Options([{"name": "all", "max_tokens": 100, "max_entries": 5}], k=2)
>>> opts.pools, opts.k
([Pool(name='all', max_tokens=100, max_entries=5, types=None)], 2)

An argument that is not an option or a call's keyword is refused by name
(:func:`refuse_unknown`): a misspelt ``top_n=`` never does nothing silently.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, fields
from datetime import datetime
from typing import Any

from poolsplit_core._plain import pool_to_data
from poolsplit_core.poolsplit import (
    Pool,
    _check_context_keys,
    _check_limit,
    _check_pools,
    _options_of,
    default_is_active,
    default_scorer,
    default_token_counter,
    make_scorer,
)
from poolsplit_integrations._tenancy import check_filter, check_required_keys

__all__ = [
    "ALWAYS_POOL", "CALLABLE_DEFAULTS", "CONTEXT_KWARGS", "OPTION_CHECKS", "OPTION_NAMES",
    "Options", "check_context", "check_k", "check_max_always_tokens", "check_option",
    "check_pools_arg", "check_strict", "model_arguments", "refuse_unknown",
    "refuse_unknown_fields", "scorer_from_data",
]

#: The pool under which every active always-scope entry that no pool's types
#: take is loaded (the core's ``always_pool=True``, on in every component).
ALWAYS_POOL = "always"


# --------------------------------------------------------------------------
# Each option's check
# --------------------------------------------------------------------------


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
    """Validate an adapter's pool list at construction: Pools (or their data), unique names.

    An empty list is allowed: the component then loads only the corrections
    (``always_pool``), and warns that it does.

    A pool may be given as plain data (``{"name", "max_tokens", "max_entries",
    "types"}``, as serialised), read by the core's one rule, so a component
    rebuilt from its dict gets Pools, and the core and the adapters cannot differ.

    >>> check_pools_arg([{"name": "all", "max_tokens": 10, "max_entries": 2}])
    [Pool(name='all', max_tokens=10, max_entries=2, types=None)]
    """
    checked = _check_pools(pools)  # the core's rule: a Pool, or a mapping of Pool's fields
    for pool in checked:
        if pool.name == ALWAYS_POOL:
            raise ValueError(
                f"pools: the name {ALWAYS_POOL!r} is the pool under which the corrections no"
                f" other pool takes load; give {pool!r} another name"
            )
    return checked


def check_strict(value: Any) -> bool:
    """Validate ``strict``: a bool."""
    if not isinstance(value, bool):
        raise TypeError(f"strict must be True or False, got {value!r}")
    return value


def check_max_always_tokens(value: Any) -> int | None:
    """Validate ``max_always_tokens``: None, or an int >= 0 -- the core's own check, early."""
    return _check_limit(value)


def check_context(context: Any, scorer: Any) -> None:
    """Refuse, early, a default context the core would refuse: the core's own rule.

    With the default score (``default_scorer``, a ``make_scorer`` scorer) a
    key other than ``message``, ``project`` and ``tags`` is a ValueError
    naming it; a custom scorer gets every key.

    >>> check_context({"projcet": "atlas"}, default_scorer)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: context has an unknown key 'projcet' (did you mean 'project'?): ...
    """
    if isinstance(context, Mapping) and _options_of(scorer) is not None:
        _check_context_keys(context)


def scorer_from_data(value: Any) -> Any:
    """``value``, or the configured scorer a mapping of options describes.

    >>> scorer_from_data({"words": "unicode"}).to_data()
    {'words': 'unicode'}
    """
    if isinstance(value, Mapping):
        return make_scorer(**{str(key): option for key, option in value.items()})
    return value


#: How each shared option is checked: by :class:`Options`, and by one pydantic
#: ``field_validator(*OPTION_CHECKS)`` per component, which calls :func:`check_option`.
OPTION_CHECKS: dict[str, Callable[[Any], Any]] = {
    "pools": check_pools_arg,
    "k": check_k,
    "scorer": scorer_from_data,
    "filter": check_filter,
    "require_filter_keys": check_required_keys,
    "max_always_tokens": check_max_always_tokens,
    "strict": check_strict,
}


def check_option(name: str | None, value: Any) -> Any:
    """Check the shared option ``name`` (a pydantic validator's ``info.field_name``)."""
    return OPTION_CHECKS[name or ""](value)


# --------------------------------------------------------------------------
# The shared options, declared once, as one value
# --------------------------------------------------------------------------


def _option(description: str, *, frozen: bool = False) -> dict[str, Any]:
    """A field's metadata: its description, and whether a component freezes it.

    A frozen option shapes the prepared store (the entries' costs, which
    entries may load, how bad memory is read): assigning it on a built
    component is refused; build a new component instead.
    """
    return {"description": description, "frozen": frozen}


@dataclass(frozen=True)
class Options:
    """The options every component shares, checked once, as one value.

    >>> Options([Pool("all", 100, 5)], k=2).k
    2

    Components read it from their fields on every call (:meth:`of`), so
    assigning ``retriever.k = 2`` needs nothing rebuilt: the prepared store
    depends only on the entries, ``token_counter`` and ``is_active`` (and
    indexes with the scorer's word reader, :func:`~poolsplit_core.poolsplit.make_scorer`:
    a scorer assigned later with another reader is still obeyed, by the
    stateless path). Each field's type, default and metadata are the
    pydantic field every pydantic component inherits.
    """

    pools: list[Pool] = field(metadata=_option("The reserved budgets, filled in order."))
    k: int | None = field(default=None, metadata=_option(
        "Fair cap on contextual entries across pools; never cuts always-scope."))
    context: dict[str, Any] | None = field(default=None, metadata=_option(
        "Default retrieval context (project, tags; other keys for a custom scorer only)."))
    scorer: Callable[..., float] = field(default=default_scorer, metadata=_option(
        "scorer(entry, context, now=now) -> float."))
    token_counter: Callable[[str], int] = field(default=default_token_counter, metadata=_option(
        "Token cost of an entry without a positive token_count.", frozen=True))
    is_active: Callable[[Mapping[str, Any]], bool] = field(
        default=default_is_active, metadata=_option("Which entries may load at all.",
                                                    frozen=True))
    now: datetime | None = field(default=None, metadata=_option(
        "Fixed clock for scoring; None means the current time."))
    filter: dict[str, Any] | None = field(default=None, metadata=_option(
        "Tenant filter: equality on every key, before pool-split, always-scope included;"
        " a per-call filter can only narrow it."))
    require_filter_keys: tuple[str, ...] | None = field(default=None, metadata=_option(
        "Keys every call's filter must hold with a value; else refused (ValueError)."
        " None: user_id as soon as a memory carries one; () states a shared store."))
    max_always_tokens: int | None = field(default=None, metadata=_option(
        "Always-tier ceiling: costlier always-scope entries raise AlwaysScopeOverflowError."))
    strict: bool = field(default=True, metadata=_option(
        "Refuse bad memory (scope, status, created, token_count, tags, ...) where it enters;"
        " False reads it as the specification's core does.", frozen=True))

    def __post_init__(self) -> None:
        for name, check in OPTION_CHECKS.items():
            object.__setattr__(self, name, check(getattr(self, name)))
        if self.context is not None:
            object.__setattr__(self, "context", dict(self.context))
        check_context(self.context, self.scorer)

    @classmethod
    def of(cls, component: Any) -> Options:
        """The options a component's attributes hold (one per name of :data:`OPTION_NAMES`)."""
        return cls(**{name: getattr(component, name) for name in OPTION_NAMES})

    @property
    def partition_key(self) -> str | None:
        """The key a tenant's query names for sure: the first required filter key.

        ``None`` when the keys are automatic: a query naming a user is then
        routed by the prepared store's view of ``user_id``, built on first use.
        """
        return self.require_filter_keys[0] if self.require_filter_keys else None

    def to_data(self) -> dict[str, Any]:
        """The options that are data, JSON-ready, in declaration order.

        >>> Options([Pool("all", 100, 5)], require_filter_keys=("user_id",)).to_data()
        ... # doctest: +NORMALIZE_WHITESPACE
        {'pools': [{'name': 'all', 'max_tokens': 100, 'max_entries': 5, 'types': None}],
         'k': None, 'context': None, 'now': None, 'filter': None,
         'require_filter_keys': ['user_id'], 'max_always_tokens': None, 'strict': True}

        The hooks (:data:`CALLABLE_DEFAULTS`) are code, not data: left out
        (a configured scorer's options are written by
        :func:`~poolsplit_integrations._serialise.scorer_data`).
        """
        return {name: _as_data(getattr(self, name)) for name in OPTION_NAMES
                if name not in CALLABLE_DEFAULTS}


#: The options every component shares, in the order they are declared (and documented).
OPTION_NAMES = tuple(option.name for option in fields(Options))

#: The hooks each component takes, and their defaults: the options whose default
#: is code. A default serialises as "the default" (left out, or null); a custom
#: callable cannot serialise.
CALLABLE_DEFAULTS: dict[str, Callable[..., Any]] = {
    option.name: option.default for option in fields(Options) if callable(option.default)
}


def _as_data(value: Any) -> Any:
    """An option's value as JSON-ready data: pools as dicts, a time as ISO-8601, tuples as lists."""
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, (list, tuple)):
        return [pool_to_data(item) if isinstance(item, Pool) else item for item in value]
    return value


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
    return [info.alias or name for name, info in model.model_fields.items()]


def refuse_unknown_fields(model: Any, data: Any) -> Any:
    """A pydantic ``model_validator(mode="before")`` body: refuse keys that are not fields."""
    if isinstance(data, Mapping):
        refuse_unknown(f"{model.__name__}()", data, model_arguments(model))
    return data
