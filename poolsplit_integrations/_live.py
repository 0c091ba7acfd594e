"""The living store every component holds: a PreparedStore and the framework object of each entry.

A component maps its documents or nodes to entries once, at construction,
and writes to the store through the core's API (``upsert``/``delete``), so
a write is seen by the very next query with nothing rebuilt
(:class:`LiveStore`). Bad memory is refused where it enters
(:func:`refuse_bad`), unless the component was built with ``strict=False``:
a field with a problem, a ``created`` more than a day in the future, and two
objects with one id (:func:`refuse_shared_ids`), which would name neither.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from poolsplit_core.poolsplit import (
    Decision,
    _hashable,
    _repeated_ids,
    default_is_active,
    default_scorer,
    default_token_counter,
)
from poolsplit_core.prepared import PreparedStore
from poolsplit_integrations._tenancy import carries_user

__all__ = ["LiveStore", "refuse_bad", "refuse_shared_ids"]


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

    Strict (the default), it refuses two items with one id, naming both
    positions in ``what`` (the component's argument: ``documents``,
    ``nodes``), and entries with a problem (:func:`refuse_bad`). Built with
    ``strict=False`` it keeps them all, as the core does, and
    :meth:`delete` of an id removes every entry holding it.
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
        what: str = "entries",
    ) -> None:
        pairs = list(items)
        self.strict, self.what = strict, what
        if strict:
            refuse_shared_ids([entry for entry, _ in pairs], what)
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
                         strict=self.strict, what=self.what)

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

    def write(self, items: Sequence[tuple[Mapping[str, Any], Any]], *,
              what: str = "entries") -> list[Any]:
        """Upsert each ``(entry, object)`` by the entry's ``id``; the ids, in order.

        Every entry is read first (a bad field refused, naming it; strict, two
        items of the batch with one id too, by their positions in ``what``)
        so a refused batch writes nothing. An id several stored entries hold
        (a store built with ``strict=False``) is refused: delete it first.
        """
        for entry, _ in items:
            if entry.get("id") is None:
                raise ValueError(f"cannot write an entry without an id: {entry!r}")
        if self.strict:
            refuse_shared_ids([entry for entry, _ in items], what)
            refuse_bad([entry for entry, _ in items])
        for entry, _ in items:
            held = len(self.store._holding(entry["id"]))
            if held > 1:
                raise ValueError(f"cannot write id {entry['id']!r}: {held} stored entries hold"
                                 " it, so which one it replaces is unknown; delete it first"
                                 " (which removes all of them), then write")
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
        """Delete every entry holding each id; a ``KeyError`` names an unknown id first.

        An id that several stored entries hold (kept by ``strict=False``)
        removes them all: a memory can always be forgotten.
        """
        listed = list(ids)
        with self._writing:
            unknown = [i for i in listed if not self.store._holding(i)]
            if unknown:
                raise KeyError(f"no stored entry has id {unknown[0]!r} (ids {unknown!r}"
                               " unknown); nothing was deleted")
            for entry_id in listed:
                held = self.store._holding(entry_id)
                if held:  # (an id listed twice: gone already)
                    self.store.delete(entry_id)
                    for old in held:
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
    parseable ``created`` at most a day after now, a positive int
    ``token_count``, ``tags`` not a bare str, ...); each entry is named by
    its id (the framework's), else its position. Now is the time of the
    write, not a component's fixed scoring clock (``now=``, which replays
    and tests pin): a ``created`` is refused for being later than when it
    is written. A component built with ``strict=False`` skips this.
    """
    from poolsplit_core.checks import refuse_bad_entries

    refuse_bad_entries(entries)


def refuse_shared_ids(entries: Sequence[Mapping[str, Any]], what: str) -> None:
    """Refuse two entries with one id, naming both positions in ``what``.

    >>> refuse_shared_ids([{"id": "a"}, {"id": "b"}, {"id": "a"}], "documents")
    Traceback (most recent call last):
    ...
    ValueError: documents[0] and documents[2] both have id 'a': give each memory its own id

    The id is the framework's (``Document.id``, the node id): a write or a
    delete by it could name neither.
    """
    for first, i, entry_id in _repeated_ids(entries):
        raise ValueError(f"{what}[{first}] and {what}[{i}] both have id {entry_id!r}:"
                         " give each memory its own id")
