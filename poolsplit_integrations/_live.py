"""The living store every component holds: a PreparedStore and the framework object of each entry.

A component maps its documents or nodes to entries once, at construction,
and writes to the store through the core's API (``upsert``/``delete``), so
a write is seen by the very next query with nothing rebuilt
(:class:`LiveStore`). Bad memory is refused where it enters
(:func:`refuse_bad`), unless the component was built with ``strict=False``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from poolsplit_core.poolsplit import (
    Decision,
    _hashable,
    default_is_active,
    default_scorer,
    default_token_counter,
)
from poolsplit_core.prepared import PreparedStore
from poolsplit_integrations._tenancy import carries_user

__all__ = ["LiveStore", "refuse_bad"]


class LiveStore:
    """A :class:`PreparedStore` of entries plus the framework object behind each.

    Every component holds one and writes to it through the core's API
    (``upsert``/``delete``), so a write is seen by the very next query with
    nothing rebuilt. Components that share one (``with_filter``, a memory
    block over a retriever) see each other's writes.

    >>> live = LiveStore([({"id": "a", "content": "alpha"}, "doc-a")])
    >>> live.write([({"id": "b", "content": "beta"}, "doc-b")])
    ['b']
    >>> live.delete(["a"]); [live.object_of(e) for e in live.store.entries]
    ['doc-b']
    """

    def __init__(
        self,
        items: Iterable[tuple[Mapping[str, Any], Any]] = (),
        *,
        scorer: Any = default_scorer,
        token_counter: Any = default_token_counter,
        is_active: Any = default_is_active,
        partition_key: str | None = None,
        key: Callable[[Any], Any] | None = None,
        store: PreparedStore | None = None,
        strict: bool = True,
    ) -> None:
        pairs = list(items)
        self.strict = strict
        if strict:
            refuse_bad([entry for entry, _ in pairs])
        self.key = key
        self.version = 0  # counts writes, so views of the objects know when to re-read
        self._writing = threading.Lock()  # one write at a time: the bookkeeping below
        self._objects: dict[int, Any] = {id(entry): obj for entry, obj in pairs}
        self._keys: dict[Any, int] = {}
        #: The oversized always tiers already warned of: (owner, budget, cost, positions).
        self.warned: set[tuple[str, int, int, tuple[int, ...]]] = set()
        for _, obj in pairs:
            self._count(obj, 1)
        #: How many stored entries carry a ``user_id`` (kept by writes); None for a
        #: store shared with its owner, who writes to it directly: read per call.
        self.users: int | None = None if store is not None else sum(
            carries_user(entry) for entry, _ in pairs)
        self.store = store if store is not None else PreparedStore(
            [entry for entry, _ in pairs], scorer=scorer, token_counter=token_counter,
            is_active=is_active, partition_key=partition_key)

    def user_counts(self) -> tuple[int, int]:
        """How many stored entries carry a ``user_id``, and how many in all."""
        if self.users is None:
            entries = self.store.entries
            return sum(map(carries_user, entries)), len(entries)
        return self.users, len(self.store)

    def __deepcopy__(self, memo: dict[int, Any]) -> LiveStore:
        """An independent store holding the same objects (a lock cannot be copied)."""
        entries = self.store.entries
        pairs = [(dict(entry), self.object_of(entry)) for entry in entries]
        return LiveStore(pairs, scorer=self.store.scorer, token_counter=self.store.token_counter,
                         is_active=self.store.is_active,
                         partition_key=self.store.partition_key, key=self.key,
                         strict=self.strict)

    def object_of(self, entry: Mapping[str, Any]) -> Any:
        """The framework object an entry was mapped from (the entry itself if none)."""
        return self._objects.get(id(entry), entry)

    def objects_of(self, loaded: Sequence[Decision], extra: Sequence[Mapping[str, Any]] = (),
                   extra_objects: Sequence[Any] = ()) -> list[Any]:
        """The framework object of each loaded entry: a candidate's own, else the stored one.

        ``extra`` are the call's candidate entries, mapped from ``extra_objects``.
        """
        stored = self._objects.get
        if not extra:
            return [stored(id(d.entry), d.entry) for d in loaded]
        joined = {id(entry): obj for entry, obj in zip(extra, extra_objects)}
        return [joined.get(id(d.entry)) or stored(id(d.entry), d.entry) for d in loaded]

    def objects(self) -> list[Any]:
        """The framework objects, in store order."""
        return [self.object_of(entry) for entry in self.store.entries]

    def holds_key(self, key: Any) -> bool:
        """Whether a stored object has this duplicate key (``key(obj)`` lists an object's keys)."""
        return self._keys.get(key, 0) > 0

    def write(self, items: Sequence[tuple[Mapping[str, Any], Any]]) -> list[Any]:
        """Upsert each ``(entry, object)`` by the entry's ``id``; the ids, in order.

        Every entry is read first (a bad field refused, naming it) so a
        refused batch writes nothing.
        """
        for entry, _ in items:
            if entry.get("id") is None:
                raise ValueError(f"cannot write an entry without an id: {entry!r}")
        if self.strict:
            refuse_bad([entry for entry, _ in items])
        PreparedStore([entry for entry, _ in items],  # reads (and refuses) before any write
                      scorer=self.store.scorer, token_counter=self.store.token_counter,
                      is_active=self.store.is_active)
        with self._writing:
            return [self._upsert(entry, obj) for entry, obj in items]

    def _upsert(self, entry: Mapping[str, Any], obj: Any) -> Any:
        old = self._stored(entry["id"])
        # the object is known before the store can return its entry (queries run in threads)
        self._objects[id(entry)] = obj
        try:
            self.store.upsert(entry)
        except BaseException:
            del self._objects[id(entry)]
            raise
        if old is not None and old is not entry:
            self._forget(old)
        self._count(obj, 1)
        if self.users is not None:
            self.users += carries_user(entry) - (old is not None and carries_user(old))
        self.version += 1
        return entry["id"]

    def delete(self, ids: Iterable[Any]) -> None:
        """Delete each entry by id; a ``KeyError`` names an unknown id before any delete."""
        listed = list(ids)
        with self._writing:
            unknown = [i for i in listed if self._stored(i) is None]
            if unknown:
                raise KeyError(f"no stored entry has id {unknown[0]!r} (ids {unknown!r}"
                               " unknown); nothing was deleted")
            for entry_id in listed:
                old = self._stored(entry_id)
                if old is not None:
                    self.store.delete(entry_id)
                    self._forget(old)
                    if self.users is not None:
                        self.users -= carries_user(old)
                    self.version += 1

    def _stored(self, entry_id: Any) -> Mapping[str, Any] | None:
        """The stored entry with this id (None for an id no entry, or several, hold)."""
        if not _hashable(entry_id):
            return None
        try:
            return self.store.get(entry_id)
        except ValueError:  # held by several: as unknown, for the callers' messages
            return None

    def _forget(self, entry: Mapping[str, Any]) -> None:
        obj = self._objects.pop(id(entry), None)
        if obj is not None:
            self._count(obj, -1)

    def _count(self, obj: Any, step: int) -> None:
        """Count ``obj``'s duplicate keys in (``step=1``) or out (-1); ``key(obj)`` lists them."""
        if self.key is not None:
            for key in self.key(obj):
                self._keys[key] = self._keys.get(key, 0) + step


def refuse_bad(entries: Sequence[Mapping[str, Any]]) -> None:
    """Refuse entries the strict rules find a problem in: one ValueError naming each.

    The rules are the core's :func:`poolsplit_core.checks.check_entries`
    (``scope`` "always"/"contextual"/absent, a non-empty ``status``, a
    parseable ``created``, a positive int ``token_count``, ``tags`` not a
    bare str, ...); each entry is named by its id (the framework's), else
    its position. A component built with ``strict=False`` skips this.
    """
    from poolsplit_core.checks import refuse_bad_entries

    refuse_bad_entries(entries)
