"""Tenant filters: a component's filter, a run's tenant and a call's filter only narrow.

Shared by every adapter component and LangGraph's store. A filter is
equality on every key (a memory lacking the key does not match), applied
before pool-split to every entry, corrections included. Filters combine by
AND (:func:`narrow`): a different value for a key already set is refused,
never a silent widening to another tenant. Every filter is checked by one
function (:func:`check_filter`), whatever component it is given to. A call whose filter lacks a
required key, or gives it no value, is refused (:func:`refuse_unbound`:
fail closed), and a ``user_id`` must name one user (:func:`check_user`).

>>> narrow({"user_id": "ana"}, {"type": "task"})
{'user_id': 'ana', 'type': 'task'}
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = [
    "DEFAULT", "USER_KEY", "UnboundTenant", "carries_user", "check_filter",
    "check_required_keys", "check_user", "config_filter", "matches", "narrow", "refuse_unbound",
]

#: The metadata key that names a memory's user. A component whose memories carry
#: it serves several users: every query must name one (fail closed).
USER_KEY = "user_id"


class UnboundTenant(ValueError):
    """A call that must name its tenant (a user) named none: refused, fail closed.

    A ValueError; its own class so that a component built over another one
    can say how its own callers name the tenant. ``keys`` are the filter keys
    the call lacked (or gave no value).
    """

    def __init__(self, message: str, keys: Sequence[str] = (USER_KEY,)) -> None:
        super().__init__(message)
        self.keys = tuple(keys)


class _Default:
    def __repr__(self) -> str:
        return "DEFAULT"


#: "Not given": keep the component's own setting (same as ``None``).
DEFAULT: Any = _Default()


def narrow(
    base: Mapping[str, Any] | None, *more: Any, owner: str = "this retriever"
) -> dict[str, Any] | None:
    """``base`` AND each filter of ``more``: a filter can add keys, never widen.

    ``None`` (or :data:`DEFAULT`) in ``more`` keeps what is there; the same
    key with an equal value is kept once; a different value for a key already
    set is a ``ValueError`` -- never a silent widening to another tenant.

    >>> narrow({"user_id": "ana"}, {"type": "task"}, None)
    {'user_id': 'ana', 'type': 'task'}
    >>> narrow({"user_id": "ana"}, {"user_id": "bo"})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: this retriever is bound to user_id='ana'; a filter cannot change it to 'bo' ...
    """
    out = check_filter(base)
    for extra in more:
        if extra is None or extra is DEFAULT:
            continue
        for key, value in (check_filter(extra) or {}).items():
            if out is not None and key in out and out[key] != value:
                raise ValueError(
                    f"{owner} is bound to {key}={out[key]!r}; a filter cannot change it"
                    f" to {value!r} (filters only narrow)"
                )
            out = {**(out or {}), key: value}
    return out


def _blank(value: Any) -> bool:
    """A filter value that names no tenant: None, or an empty str/collection."""
    if value is None:
        return True
    try:
        return len(value) == 0
    except TypeError:
        return False


def refuse_unbound(
    filter: Mapping[str, Any] | None, required: Sequence[str], *,
    owner: str = "this retriever", how: str = "pass filter={filter}", why: str = "",
) -> None:
    """Fail closed: a ValueError unless ``filter`` holds every required key with a real value.

    >>> refuse_unbound({"type": "task"}, ["user_id"], why="its memories carry 'user_id'")
    Traceback (most recent call last):
    ...
    poolsplit_integrations._tenancy.UnboundTenant: this retriever requires a filter on ['user_id']; its filter {'type': 'task'} lacks ['user_id']; pass filter={'user_id': '<user>'}; its memories carry 'user_id'

    The error is an :class:`UnboundTenant`, a ValueError. A required key
    given as ``None`` or empty (``""``, ``[]``) names no tenant, so it is
    refused like a missing one. ``how`` says how the
    component's caller names them, ``{filter}`` standing for a filter of the
    keys it lacks (a component whose calls take no ``filter=`` says its own
    way); ``why`` says why the keys are required, when the caller did not.
    """  # noqa: E501
    active = dict(filter or {})
    missing = [key for key in required if key not in active]
    blank = [key for key in required if key in active and _blank(active[key])]
    if missing or blank:
        lacks = " and ".join(
            ([f"lacks {missing}"] if missing else [])
            + ([f"gives no value for {blank}"] if blank else []))
        example = repr({key: "<user>" if key == USER_KEY else f"<{key}>"
                        for key in missing + blank})
        raise UnboundTenant(
            f"{owner} requires a filter on {missing + blank}; its filter {active!r} {lacks}"
            + "".join(f"; {part}" for part in (how.format(filter=example), why) if part),
            missing + blank,
        )


def check_user(value: Any, where: str) -> str:
    """``value`` if it names a user: a non-empty str that is not only whitespace.

    >>> check_user("ana", "filter")
    'ana'
    >>> check_user(False, "filter")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: filter: user_id must be a non-empty string naming one user, got False ...

    None, ``""``, ``"  "``, ``False``, ``0`` and lists name no user: each
    would otherwise select a shared bucket (every request whose id resolved
    to ``False`` would see the same memories).
    """
    if not isinstance(value, str) or not value.strip():
        raise ValueError(
            f"{where}: {USER_KEY} must be a non-empty string naming one user, got {value!r}"
            f" (pass filter={{'{USER_KEY}': '<user>'}} or config={{'configurable':"
            f" {{'{USER_KEY}': '<user>'}}}})"
        )
    return value


def matches(entry: Mapping[str, Any], where: Mapping[str, Any]) -> bool:
    """Whether ``entry`` holds every key of ``where`` with an equal value (a filter's rule).

    >>> matches({"user_id": "ana", "type": "task"}, {"user_id": "ana"}), matches({}, {"x": 1})
    (True, False)
    """
    return all(key in entry and entry[key] == value for key, value in where.items())


def carries_user(entry: Mapping[str, Any]) -> bool:
    """Whether an entry belongs to a user: it has a ``user_id`` that is not None."""
    return entry.get(USER_KEY) is not None


def config_filter(configurable: Mapping[str, Any] | None,
                  keys: Sequence[str]) -> dict[str, Any] | None:
    """The tenant a run's ``config["configurable"]`` names: its values for ``keys``.

    >>> config_filter({"user_id": "ana", "thread_id": "t1"}, ("user_id",))
    {'user_id': 'ana'}
    """
    if not configurable:
        return None
    found = {key: configurable[key] for key in keys if key in configurable}
    return found or None


def check_filter(filter: Any) -> dict[str, Any] | None:
    """Validate a filter: None, or a mapping with str keys (copied); a user names one user.

    The one check of every filter -- a component's, ``with_filter``'s, a
    call's ``filter=``, a LangGraph store read's -- so no two components
    differ: anything but a mapping (or None) is a TypeError, and so is a key
    that is not a str; a ``user_id`` that names nobody (:func:`check_user`)
    is a ValueError. Values are compared by equality (a list value matches an
    equal list); ``{}`` narrows nothing.

    >>> check_filter({"user_id": ""})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: filter: user_id must be a non-empty string naming one user, got '' ...
    """
    if filter is None:
        return None
    if not isinstance(filter, Mapping):
        raise TypeError(f"filter must be a dict or None, got {type(filter).__name__}")
    for key in filter:
        if not isinstance(key, str):
            raise TypeError(f"filter keys must be str, got {key!r}")
    if USER_KEY in filter:
        check_user(filter[USER_KEY], "filter")
    return dict(filter)


def check_required_keys(keys: Any) -> tuple[str, ...] | None:
    """Validate ``require_filter_keys``: None (automatic), or an iterable of str.

    ``None``, the default, requires ``user_id`` exactly when the component's
    memories carry one; ``()`` given explicitly states a shared store; a bare
    str is one key.
    """
    if keys is None:
        return None
    if isinstance(keys, str):
        return (keys,)
    out = tuple(keys)
    for key in out:
        if not isinstance(key, str):
            raise TypeError(f"require_filter_keys must hold str, got {key!r}")
    return out
