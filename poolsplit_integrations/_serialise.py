"""Serialising a component: pools as plain data, code and live objects refused by name.

A component serialises what is data: its pools as ``{"name", "max_tokens",
"max_entries", "types"}``, its options, its stored documents or nodes as the
framework writes them. A hook (``scorer``, ``token_counter``, ``is_active``)
serialises only as its default (left out, or null, read back as the default)
or, for a configured scorer (:func:`~poolsplit_core.poolsplit.make_scorer`),
as its named options; anything else that is code, or a live object (a base
retriever, a vector store), is refused naming the field
(:func:`refuse_unserialisable`), before the framework would fail inside.

>>> pools_to_data([Pool("work", 800, 6, ("task",))])
[{'name': 'work', 'max_tokens': 800, 'max_entries': 6, 'types': ['task']}]
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from poolsplit_core._plain import pool_to_data
from poolsplit_core.poolsplit import ConfiguredScorer, Pool
from poolsplit_integrations._options import CALLABLE_DEFAULTS

__all__ = [
    "NotSerializableError", "default_hook", "excluded", "pools_to_data", "refuse_unserialisable",
    "scorer_data",
]


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

    A ``scorer`` given as a mapping (a configured scorer's options, as
    serialised) is read back by its option check,
    :func:`~poolsplit_integrations._options.scorer_from_data`.
    """
    return CALLABLE_DEFAULTS[name] if value is None else value


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
    retriever, a live store) only as None.

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
