"""Pools and entries as plain, JSON-ready data, for the command line and the adapters.

A pool as plain data is ``{"name": str, "max_tokens": int, "max_entries": int,
"types": [str, ...] | None}`` -- what ``--pools FILE.json`` holds and what the
adapters serialise their pools to.

>>> data = pool_to_data(Pool("skills", 200, 2, ("skill",)))
>>> data
{'name': 'skills', 'max_tokens': 200, 'max_entries': 2, 'types': ['skill']}
>>> pool_from_data(data) == Pool("skills", 200, 2, ("skill",))
True
"""

from __future__ import annotations

from typing import Any

from poolsplit_core.poolsplit import _POOL_KEYS, Pool, _read_pool

__all__ = ["ENTRY_KEYS", "POOL_KEYS", "pool_from_data", "pool_to_data"]

#: The entry keys the core reads (the user guide's "Entries and the framework mapping").
ENTRY_KEYS = (
    "id", "type", "scope", "content", "token_count", "base_priority", "created",
    "tags", "project", "status", "superseded_by",
)
#: The keys of a pool as plain data; ``types`` may be left out (every type).
POOL_KEYS = _POOL_KEYS


def pool_to_data(pool: Pool) -> dict[str, Any]:
    """A pool as a JSON-ready dict (``types`` a list, or None for every type)."""
    return {
        "name": pool.name,
        "max_tokens": pool.max_tokens,
        "max_entries": pool.max_entries,
        "types": None if pool.types is None else list(pool.types),
    }


def pool_from_data(data: Any, where: str = "pool") -> Pool:
    """The :class:`~poolsplit_core.poolsplit.Pool` a plain dict describes.

    The core's one reading of a pool given as a mapping (what every
    component's ``pools=`` accepts too), so a pools file and a pool list
    cannot differ.

    Args:
        data: a mapping with ``name``, ``max_tokens``, ``max_entries`` and,
            optionally, ``types`` (a list of str, or None for every type).
        where: how errors name this pool, e.g. ``"pools[0]"``.

    Returns:
        The pool.

    Raises:
        TypeError: ``data`` is not a mapping, ``types`` is not a list of str
            or None, or a limit is not an int.
        ValueError: a key is missing or unknown, or a limit is negative.
    """
    return _read_pool(data, where)
