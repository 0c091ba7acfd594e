"""LangGraph adapter: pool-split reads over the ``BaseStore`` an agent already has.

Two components:

- :class:`PoolSplitStore` -- a ``BaseStore`` that wraps any ``BaseStore``
  (``InMemoryStore``, ``PostgresStore``, ``SqliteStore``, ...). Every store
  call answers exactly as the wrapped store does; every write through it also
  updates a prepared index of each namespace it has read (the core's
  ``PreparedStore``, kept current by upsert and delete, never rebuilt). It adds
  :meth:`PoolSplitStore.retrieve_pools` and :meth:`PoolSplitStore.explain_pools`:
  for a namespace, pools and a context, the loaded items per pool and the
  core's account of why.
- :class:`PoolSplitStoreRetriever` -- a LangChain ``BaseRetriever`` over such a
  store, its namespace a template filled from the run's config
  (``("memories", "{user_id}")``), failing closed when a variable is missing.

Freshness, in three rules:

1. **Corrections are never stale.** Items with ``scope="always"`` are read from
   the wrapped store on every query (one small filtered ``search``), so a
   correction another process wrote loads on the very next query.
2. **Writes through this object** are in the index when the write returns.
3. **Other processes' writes** (another worker on the same PostgreSQL) are in
   the index within ``refresh_interval`` seconds (default 5): at most that
   often a query first reads the namespace newest-first (``search`` lists by
   ``updated_at`` descending on PostgreSQL and SQLite) down to the last
   ``updated_at`` it had seen. Deletes leave no trace to poll, and a store
   that does not list newest-first (``InMemoryStore``) cannot be polled that
   way: a full read of the namespace every ``reconcile_interval`` seconds
   (default 60) catches both, so every change is in within
   ``reconcile_interval``. :meth:`PoolSplitStore.refresh` does the full read
   now. :meth:`PoolSplitStore.explain_pools` reports the index's staleness.

The mapping from a store item to an entry is
:func:`poolsplit_integrations._entries.item_to_entry` (table in its section
and in the README). Reads made for pool-split pass ``refresh_ttl=False``: they
never keep a memory alive that the agent itself did not read.

Needs the ``langgraph`` extra: ``pip install 'poolsplit[langgraph]'``
(``poolsplit[postgres]`` adds LangGraph's ``PostgresStore`` and a driver).
"""

# The imports below must follow the require() call, which turns a missing
# langgraph into an ImportError naming the extra to install.
# ruff: noqa: E402

from __future__ import annotations

from poolsplit_integrations._extras import require

require("langgraph.store.base", "langgraph")
require("langchain_core", "langgraph")

import string
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any, Literal

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableConfig, ensure_config
from langgraph.store.base import (
    NOT_PROVIDED,
    BaseStore,
    GetOp,
    Item,
    NamespacePath,
    NotProvided,
    Op,
    PutOp,
    Result,
    SearchItem,
)
from pydantic import ConfigDict, Field, field_validator

from poolsplit_core.poolsplit import (
    Decision,
    Explanation,
    Ledger,
    Pool,
    PreparedStore,
    default_is_active,
    default_token_counter,
)
from poolsplit_integrations._entries import (
    assemble,
    build_context,
    check_k,
    check_max_always_tokens,
    check_pools_arg,
    item_entry_id,
    item_to_entry,
    refuse_unknown,
    result_metadata,
)

__all__ = ["PoolSplitStore", "PoolSplitStoreRetriever", "StoreExplanation"]

#: How far before the last ``updated_at`` seen a poll reads again: a write
#: whose transaction started before another one committed may carry an older
#: timestamp than that one. Anything older still is the reconcile's.
POLL_MARGIN = timedelta(seconds=2)


# --------------------------------------------------------------------------
# Private helpers
# --------------------------------------------------------------------------


def _check_namespace(namespace: Any, what: str = "namespace") -> tuple[str, ...]:
    """A non-empty tuple of non-empty str labels without dots, else a ValueError naming it."""
    if isinstance(namespace, str) or not isinstance(namespace, (tuple, list)):
        raise TypeError(f"{what} must be a tuple of str labels, got {namespace!r}")
    labels = tuple(namespace)
    if not labels:
        raise ValueError(f"{what} must hold at least one label, got ()")
    for label in labels:
        if not isinstance(label, str) or not label or "." in label:
            raise ValueError(
                f"{what} {labels!r}: every label must be a non-empty str without '.',"
                f" got {label!r}"
            )
    return labels


def _is_connection_error(exc: BaseException) -> bool:
    """True for a lost or refused database connection (psycopg, sqlite3, sockets)."""
    return isinstance(exc, OSError) or type(exc).__name__ in (
        "OperationalError", "InterfaceError", "PoolTimeout")


def _redact(conn_string: str) -> str:
    """A connection string with its password replaced by ``***``."""
    head, at, tail = conn_string.rpartition("@")
    if at and ":" in head.split("//", 1)[-1]:
        scheme, _, user_pass = head.rpartition("//")
        user = user_pass.split(":", 1)[0]
        return f"{scheme}//{user}:***@{tail}"
    return conn_string


class _View:
    """The prepared index of one namespace (prefix), as last read from the store."""

    # invariants: 1) ``prepared`` holds one entry per item under ``prefix`` as
    # last read, its id item_entry_id(namespace, key, prefix); 2) ``items`` maps
    # each such id to that Item; 3) ``watermark`` is the newest updated_at a
    # read of the namespace (cold, poll or reconcile) returned -- never that of
    # this object's own writes, which would hide another process's write
    # stamped earlier but not yet polled.

    def __init__(self, prefix: tuple[str, ...], prepared: PreparedStore, now: float) -> None:
        self.prefix = prefix
        self.prepared = prepared
        self.items: dict[Any, Item] = {}
        self.watermark: datetime | None = None
        self.polled = now  # monotonic time of the last poll or full read
        self.reconciled = now  # monotonic time of the last full read

    def apply(self, item: Item, *, polled: bool = True) -> None:
        """Put one item read from the store into the index (upsert in place, or append).

        ``polled``: the item came from a read of the namespace, so it may move
        the watermark (an item read back after this object's own write may not).
        """
        entry = item_to_entry(item.namespace, item.key, item.value,
                              created_at=item.created_at, read_from=self.prefix)
        entry_id = entry["id"]
        old = self.items.get(entry_id)
        if polled and (self.watermark is None or item.updated_at > self.watermark):
            self.watermark = item.updated_at
        if old is not None and old.updated_at == item.updated_at and old.value == item.value:
            return  # unchanged (a store may stamp two writes in one second alike)
        self.prepared.upsert(entry)
        self.items[entry_id] = item

    def remove(self, entry_id: Any) -> None:
        if entry_id in self.items:
            self.prepared.delete(entry_id)
            del self.items[entry_id]


@dataclass(frozen=True)
class StoreExplanation:
    """The core's account of one pool-split read of a namespace, and how fresh it was.

    ``explanation`` is the core's :class:`~poolsplit_core.Explanation` (one
    Decision per entry, one Ledger per pool). ``staleness`` is how many seconds
    ago the index last caught up with the store (0.0 right after a refresh):
    other processes' writes since then may be missing, except corrections,
    which ``always_read_live`` counts (read from the store for this query).
    """

    explanation: Explanation
    namespace: tuple[str, ...]
    staleness: float
    refresh_interval: float
    reconcile_interval: float
    always_read_live: int

    @property
    def decisions(self) -> tuple[Decision, ...]:
        """One Decision per entry considered, as the core gives them."""
        return self.explanation.decisions

    @property
    def ledgers(self) -> dict[str, Ledger]:
        """One Ledger per pool, as the core gives them."""
        return self.explanation.ledgers

    def loaded(self) -> dict[str, list[Decision]]:
        """The loaded Decisions per pool, in load order."""
        return self.explanation.loaded()


# --------------------------------------------------------------------------
# PoolSplitStore
# --------------------------------------------------------------------------


class PoolSplitStore(BaseStore):
    """A LangGraph store that also answers pool-split reads, over the store you have.

    Setup:
        ``pip install 'poolsplit[langgraph]'`` (``'poolsplit[postgres]'`` for
        ``PostgresStore``).

    Instantiate:
        .. code-block:: python

            from langgraph.store.memory import InMemoryStore
            store = PoolSplitStore(InMemoryStore())
            graph = builder.compile(store=store)  # nodes and langmem write through it

    Read:
        .. code-block:: python

            got = store.retrieve_pools(("memories", "ana"), pools, {"message": msg})
            # {"corrections": [Item, ...], "work": [...], ...}

    Every ``BaseStore`` call (``get``, ``search``, ``list_namespaces``,
    ``batch``, their async twins, and ``put``/``delete`` with ``ttl`` where
    the wrapped store takes it) goes to the wrapped store and returns what it
    returns. Attributes it lacks (``setup()``, ``conn``, ``sweep_ttl``...)
    are the wrapped store's.

    A value that is not a mapping, or that the core would refuse (say
    ``tags`` that are not strings), is refused before anything is written,
    naming the namespace and key. The module docstring states the freshness
    rules; ``refresh_interval`` and ``reconcile_interval`` are in seconds.
    Sync and async writes both keep the index current; pool-split reads are
    synchronous and need a wrapped store whose sync calls work.
    """

    def __init__(
        self,
        store: BaseStore,
        *,
        refresh_interval: float = 5.0,
        reconcile_interval: float = 60.0,
        token_counter: Callable[[str], int] = default_token_counter,
        is_active: Callable[[Mapping[str, Any]], bool] = default_is_active,
        page_size: int = 1000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not isinstance(store, BaseStore):
            raise TypeError(f"store must be a LangGraph BaseStore, got {type(store).__name__}")
        for name, value in (("refresh_interval", refresh_interval),
                            ("reconcile_interval", reconcile_interval)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
                raise ValueError(f"{name} must be a number of seconds >= 0, got {value!r}")
        if reconcile_interval < refresh_interval:
            raise ValueError(
                f"reconcile_interval must be >= refresh_interval ({refresh_interval}),"
                f" got {reconcile_interval}"
            )
        if isinstance(page_size, bool) or not isinstance(page_size, int) or page_size < 1:
            raise ValueError(f"page_size must be an int >= 1, got {page_size!r}")
        self.store = store
        self.refresh_interval = float(refresh_interval)
        self.reconcile_interval = float(reconcile_interval)
        self.token_counter = token_counter
        self.is_active = is_active
        self.page_size = page_size
        self.clock = clock
        self.supports_ttl = store.supports_ttl
        self.ttl_config = store.ttl_config
        self._views: dict[tuple[str, ...], _View] = {}
        self._lock = threading.RLock()

    @classmethod
    @contextmanager
    def from_conn_string(cls, conn_string: str, *, setup: bool = True,
                         **options: Any) -> Iterator[PoolSplitStore]:
        """A PoolSplitStore over LangGraph's ``PostgresStore`` at ``conn_string``, closed on exit.

        ``setup`` creates LangGraph's store tables if needed (its own
        migrations); ``options`` are :class:`PoolSplitStore`'s. A server that
        cannot be reached raises a ConnectionError naming it (password hidden).
        Needs ``pip install 'poolsplit[postgres]'``.
        """
        postgres = require("langgraph.store.postgres", "postgres")
        with ExitStack() as stack:
            try:
                inner = stack.enter_context(postgres.PostgresStore.from_conn_string(conn_string))
                if setup:
                    inner.setup()
            except Exception as exc:
                if _is_connection_error(exc):
                    raise ConnectionError(
                        f"cannot reach the PostgreSQL server at {_redact(conn_string)}: {exc}"
                    ) from exc
                raise
            yield cls(inner, **options)

    def __getattr__(self, name: str) -> Any:
        # Only called for names this object lacks: the wrapped store's own API.
        if name.startswith("_") or name == "store":
            raise AttributeError(name)
        return getattr(self.store, name)

    # ----------------------------------------------------------------------
    # The BaseStore API: the wrapped store answers; writes also reach the index
    # ----------------------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run ``ops`` on the wrapped store, then bring the index up to date with its writes."""
        listed = list(ops)
        self._check_ops(listed)
        results = self.store.batch(listed)
        self._written(_put_targets(listed))
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """The async twin of :meth:`batch`."""
        listed = list(ops)
        self._check_ops(listed)
        results = await self.store.abatch(listed)
        await self._awritten(_put_targets(listed))
        return results

    def get(self, namespace: tuple[str, ...], key: str, *,
            refresh_ttl: bool | None = None) -> Item | None:
        """The wrapped store's ``get``."""
        return self.store.get(namespace, key, refresh_ttl=refresh_ttl)

    def search(self, namespace_prefix: tuple[str, ...], /, *, query: str | None = None,
               filter: dict[str, Any] | None = None, limit: int = 10, offset: int = 0,
               refresh_ttl: bool | None = None) -> list[SearchItem]:
        """The wrapped store's ``search``."""
        return self.store.search(namespace_prefix, query=query, filter=filter, limit=limit,
                                 offset=offset, refresh_ttl=refresh_ttl)

    def put(self, namespace: tuple[str, ...], key: str, value: Mapping[str, Any],
            index: Literal[False] | list[str] | None = None, *,
            ttl: float | NotProvided | None = NOT_PROVIDED) -> None:
        """The wrapped store's ``put``; the index has the item when it returns."""
        self._check_value(namespace, key, value, "put()")
        self.store.put(namespace, key, value, index, ttl=ttl)
        self._written([(tuple(namespace), str(key))])

    def delete(self, namespace: tuple[str, ...], key: str) -> None:
        """The wrapped store's ``delete``; the index drops the item when it returns."""
        self.store.delete(namespace, key)
        self._written([(tuple(namespace), str(key))])

    def list_namespaces(self, *, prefix: NamespacePath | None = None,
                        suffix: NamespacePath | None = None, max_depth: int | None = None,
                        limit: int = 100, offset: int = 0) -> list[tuple[str, ...]]:
        """The wrapped store's ``list_namespaces``."""
        return self.store.list_namespaces(prefix=prefix, suffix=suffix, max_depth=max_depth,
                                          limit=limit, offset=offset)

    async def aget(self, namespace: tuple[str, ...], key: str, *,
                   refresh_ttl: bool | None = None) -> Item | None:
        """The wrapped store's ``aget``."""
        return await self.store.aget(namespace, key, refresh_ttl=refresh_ttl)

    async def asearch(self, namespace_prefix: tuple[str, ...], /, *, query: str | None = None,
                      filter: dict[str, Any] | None = None, limit: int = 10, offset: int = 0,
                      refresh_ttl: bool | None = None) -> list[SearchItem]:
        """The wrapped store's ``asearch``."""
        return await self.store.asearch(namespace_prefix, query=query, filter=filter,
                                        limit=limit, offset=offset, refresh_ttl=refresh_ttl)

    async def aput(self, namespace: tuple[str, ...], key: str, value: Mapping[str, Any],
                   index: Literal[False] | list[str] | None = None, *,
                   ttl: float | NotProvided | None = NOT_PROVIDED) -> None:
        """The wrapped store's ``aput``; the index has the item when it returns."""
        self._check_value(namespace, key, value, "aput()")
        await self.store.aput(namespace, key, value, index, ttl=ttl)
        await self._awritten([(tuple(namespace), str(key))])

    async def adelete(self, namespace: tuple[str, ...], key: str) -> None:
        """The wrapped store's ``adelete``; the index drops the item when it returns."""
        await self.store.adelete(namespace, key)
        await self._awritten([(tuple(namespace), str(key))])

    async def alist_namespaces(self, *, prefix: NamespacePath | None = None,
                               suffix: NamespacePath | None = None,
                               max_depth: int | None = None, limit: int = 100,
                               offset: int = 0) -> list[tuple[str, ...]]:
        """The wrapped store's ``alist_namespaces``."""
        return await self.store.alist_namespaces(prefix=prefix, suffix=suffix,
                                                 max_depth=max_depth, limit=limit,
                                                 offset=offset)

    # ----------------------------------------------------------------------
    # Pool-split reads
    # ----------------------------------------------------------------------

    def retrieve_pools(
        self,
        namespace: tuple[str, ...],
        pools: Sequence[Pool],
        context: Mapping[str, Any] | None = None,
        *,
        now: datetime | None = None,
        max_always_tokens: int | None = None,
    ) -> dict[str, list[Item]]:
        """The items each pool loads for ``context``, from the items under ``namespace``.

        >>> from langgraph.store.memory import InMemoryStore
        >>> store = PoolSplitStore(InMemoryStore())
        >>> store.put(("m", "ana"), "fix", {"content": "Use just.", "scope": "always"})
        >>> store.put(("m", "ana"), "t1", {"content": "deploy the api", "type": "task"})
        >>> store.put(("m", "ana"), "t2", {"content": "water the plants", "type": "task"})
        >>> got = store.retrieve_pools(("m", "ana"), [Pool("all", 100, 1)], {"message": "deploy"})
        >>> [item.key for item in got["all"]]
        ['fix', 't1']

        Every item whose namespace starts with ``namespace`` takes part. The
        answer is the core's ``retrieve_pools`` over those items mapped to
        entries (:meth:`entries` lists them, in the order the core saw them),
        with corrections read from the store for this call. Returns the
        store's ``Item`` objects (``.value``, ``.key``, ``.namespace``).
        """
        decided, items = self._decide(namespace, pools, context, now, max_always_tokens)
        return {name: [items[d.index] for d in picked] for name, picked in decided.items()}

    def explain_pools(
        self,
        namespace: tuple[str, ...],
        pools: Sequence[Pool],
        context: Mapping[str, Any] | None = None,
        *,
        now: datetime | None = None,
        max_always_tokens: int | None = None,
    ) -> StoreExplanation:
        """Why each item under ``namespace`` was or was not loaded, and how fresh the index was."""
        prefix = _check_namespace(namespace)
        checked = check_pools_arg(pools)
        with self._lock:
            view, _, live = self._read(prefix)
            got = view.prepared.explain_pools(
                checked, context, now=now, extra=live, include=_not_replaced_by(live),
                max_always_tokens=check_max_always_tokens(max_always_tokens))
            staleness = self.clock() - view.polled
        return StoreExplanation(got, prefix, staleness, self.refresh_interval,
                                self.reconcile_interval, len(live))

    def entries(self, namespace: tuple[str, ...]) -> list[Mapping[str, Any]]:
        """The entries a pool-split read of ``namespace`` would give the core now, in order.

        The indexed items other than corrections, then the corrections as the
        store holds them this moment.
        """
        prefix = _check_namespace(namespace)
        with self._lock:
            view, _, live = self._read(prefix)
            keep = _not_replaced_by(live)
            return [*(entry for entry in view.prepared.entries if keep(entry)), *live]

    def refresh(self, namespace: tuple[str, ...] | None = None) -> None:
        """Read ``namespace`` (default: every namespace read so far) in full from the store now.

        Afterwards the index holds exactly what the store holds: new and
        changed items in, deleted ones out.
        """
        with self._lock:
            prefixes = list(self._views) if namespace is None else [_check_namespace(namespace)]
            for prefix in prefixes:
                view = self._views.get(prefix)
                if view is None:
                    self._load(prefix)
                else:
                    self._reconcile(view)

    # ----------------------------------------------------------------------
    # Internals
    # ----------------------------------------------------------------------

    def _decide(
        self,
        namespace: tuple[str, ...],
        pools: Sequence[Pool],
        context: Mapping[str, Any] | None,
        now: datetime | None,
        max_always_tokens: int | None,
    ) -> tuple[dict[str, list[Decision]], dict[int, Item]]:
        """The loaded Decisions per pool, and each one's Item by the Decision's index."""
        prefix = _check_namespace(namespace)
        checked = check_pools_arg(pools)
        limit = check_max_always_tokens(max_always_tokens)
        with self._lock:
            view, live_items, live = self._read(prefix)
            decided = view.prepared.decide(checked, context, now=now, extra=live,
                                           include=_not_replaced_by(live),
                                           max_always_tokens=limit)
            stored = len(view.prepared)
            items = {d.index: view.items[d.entry["id"]] if d.index < stored
                     else live_items[d.index - stored]
                     for picked in decided.values() for d in picked}
        return decided, items

    def _read(
        self, prefix: tuple[str, ...]
    ) -> tuple[_View, list[SearchItem], list[dict[str, Any]]]:
        """The view, caught up as the intervals ask, and the store's corrections now.

        The corrections come as Items and as entries, in the same order.
        """
        view = self._views.get(prefix)
        if view is None:
            view = self._load(prefix)
        else:
            self._catch_up(view)
        live_items = self._search_all(prefix, {"scope": "always"})
        live = [item_to_entry(item.namespace, item.key, item.value,
                              created_at=item.created_at, read_from=prefix)
                for item in live_items]
        return view, live_items, live

    def _search_all(self, prefix: tuple[str, ...],
                    filter: dict[str, Any] | None = None) -> list[SearchItem]:
        """Every item under ``prefix`` (matching ``filter``), read page by page.

        Newest first where the store lists that way. A lost connection is a
        ConnectionError naming the namespace and the store.
        """
        out: list[SearchItem] = []
        seen: set[tuple[tuple[str, ...], str]] = set()
        offset = 0
        while True:
            page = self._search(prefix, filter, self.page_size, offset)
            for item in page:
                if (item.namespace, item.key) not in seen:  # a write mid-read shifts pages
                    seen.add((item.namespace, item.key))
                    out.append(item)
            if len(page) < self.page_size:
                return out
            offset += len(page)

    def _search(self, prefix: tuple[str, ...], filter: dict[str, Any] | None, limit: int,
                offset: int) -> list[SearchItem]:
        try:
            return self.store.search(prefix, filter=filter, limit=limit, offset=offset,
                                     refresh_ttl=False)
        except Exception as exc:
            if _is_connection_error(exc):
                raise ConnectionError(
                    f"PoolSplitStore could not read namespace {prefix!r} from its"
                    f" {type(self.store).__name__}: {exc}"
                ) from exc
            raise

    def _load(self, prefix: tuple[str, ...]) -> _View:
        """A cold read: every item under ``prefix``, prepared once."""
        items = self._search_all(prefix)
        view = _View(prefix, PreparedStore(token_counter=self.token_counter,
                                           is_active=self.is_active), self.clock())
        entries = []
        for item in items:
            entry = item_to_entry(item.namespace, item.key, item.value,
                                  created_at=item.created_at, read_from=prefix)
            entries.append(entry)
            view.items[entry["id"]] = item
            if view.watermark is None or item.updated_at > view.watermark:
                view.watermark = item.updated_at
        view.prepared.rebuild(entries)
        self._views[prefix] = view
        return view

    def _catch_up(self, view: _View) -> None:
        now = self.clock()
        if now - view.reconciled >= self.reconcile_interval:
            self._reconcile(view)
        elif now - view.polled >= self.refresh_interval:
            self._poll(view)

    def _poll(self, view: _View) -> None:
        """Read newest-first down to the watermark.

        A store that turns out not to list newest-first is read to the end,
        which is then a full reconcile.
        """
        started = self.clock()
        floor = None if view.watermark is None else view.watermark - POLL_MARGIN
        offset, previous = 0, None
        seen: list[SearchItem] = []
        while True:
            page = self._search(view.prefix, None, self.page_size, offset)
            for item in page:
                if previous is not None and item.updated_at > previous:
                    self._reconcile(view)  # not newest-first: only a full read is sure
                    return
                previous = item.updated_at
                if floor is not None and item.updated_at < floor:
                    for fresh in seen:
                        view.apply(fresh)
                    view.polled = started
                    return
                seen.append(item)
            if len(page) < self.page_size:
                self._apply_full(view, seen, started)
                return
            offset += len(page)

    def _reconcile(self, view: _View) -> None:
        started = self.clock()
        self._apply_full(view, self._search_all(view.prefix), started)

    def _apply_full(self, view: _View, items: list[SearchItem], started: float) -> None:
        """Make the view hold exactly ``items`` (a full read of its namespace)."""
        present = set()
        for item in items:
            view.apply(item)
            present.add(item_entry_id(tuple(item.namespace), item.key, view.prefix))
        for entry_id in [i for i in view.items if i not in present]:
            view.remove(entry_id)
        view.polled = view.reconciled = started

    def _check_value(self, namespace: Any, key: Any, value: Any, where: str) -> None:
        """Refuse, before anything is written, a value the index could not hold."""
        try:
            entry = item_to_entry(tuple(namespace), str(key), value,
                                  created_at=datetime.now(timezone.utc))
        except TypeError as exc:
            raise TypeError(f"{where}: {exc}") from exc
        try:
            PreparedStore([entry], token_counter=self.token_counter, is_active=self.is_active)
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"{where}: store item {tuple(namespace)!r} key {key!r}: {exc}"
                            ) from exc

    def _check_ops(self, ops: list[Op]) -> None:
        for i, op in enumerate(ops):
            if isinstance(op, PutOp) and op.value is not None:
                self._check_value(op.namespace, op.key, op.value, f"batch() op {i}")

    def _targets(self, written: Iterable[tuple[tuple[str, ...], str]]
                 ) -> list[tuple[tuple[str, ...], str]]:
        """The written items that some view covers (read back; others are read when asked)."""
        with self._lock:
            return list(dict.fromkeys(
                (ns, key) for ns, key in written
                if any(ns[:len(prefix)] == prefix for prefix in self._views)))

    def _written(self, written: Iterable[tuple[tuple[str, ...], str]]) -> None:
        targets = self._targets(written)
        if targets:
            got = self.store.batch([GetOp(ns, key, refresh_ttl=False) for ns, key in targets])
            self._apply_written(targets, got)

    async def _awritten(self, written: Iterable[tuple[tuple[str, ...], str]]) -> None:
        targets = self._targets(written)
        if targets:
            got = await self.store.abatch(
                [GetOp(ns, key, refresh_ttl=False) for ns, key in targets])
            self._apply_written(targets, got)

    def _apply_written(self, targets: list[tuple[tuple[str, ...], str]],
                       got: list[Result]) -> None:
        """The items as the store holds them after a write: upserted, or deleted if gone."""
        with self._lock:
            for (ns, key), item in zip(targets, got):
                for prefix, view in self._views.items():
                    if ns[:len(prefix)] != prefix:
                        continue
                    if isinstance(item, Item):
                        view.apply(item, polled=False)
                    else:
                        view.remove(item_entry_id(ns, key, prefix))


def _put_targets(ops: Sequence[Op]) -> list[tuple[tuple[str, ...], str]]:
    return [(tuple(op.namespace), str(op.key)) for op in ops if isinstance(op, PutOp)]


def _not_replaced_by(live: Sequence[Mapping[str, Any]]) -> Callable[[Mapping[str, Any]], bool]:
    """Keep an indexed entry unless it is a correction or the store now holds it as one.

    Corrections come from the live read alone, so a correction deleted or
    changed by another process is never loaded from the index's older copy.
    """
    replaced = {entry["id"] for entry in live}
    fresh = {id(entry) for entry in live}  # the live entries themselves (include sees them too)

    def keep(entry: Mapping[str, Any]) -> bool:
        if id(entry) in fresh:
            return True
        return entry.get("scope") != "always" and entry.get("id") not in replaced

    return keep


# --------------------------------------------------------------------------
# PoolSplitStoreRetriever
# --------------------------------------------------------------------------

# Keyword arguments ``PoolSplitStoreRetriever.invoke(query, **kwargs)`` accepts.
_CALL_KWARGS = ("project", "tags", "k")
# LangChain's invoke() reads ``verbose`` itself and then forwards it to us.
_FRAMEWORK_KWARGS = frozenset({"verbose"})


def fill_namespace(template: Sequence[str], config: Mapping[str, Any] | None) -> tuple[str, ...]:
    """Fill a namespace template from ``config["configurable"]``; a missing variable fails closed.

    >>> fill_namespace(("memories", "{user_id}"), {"configurable": {"user_id": "ana"}})
    ('memories', 'ana')
    >>> fill_namespace(("memories", "{user_id}"), {"configurable": {}})
    Traceback (most recent call last):
    ...
    ValueError: namespace template ('memories', '{user_id}') needs ...
    """
    configurable = dict((config or {}).get("configurable") or {})
    filled = []
    for label in template:
        names = [name for _, name, _, _ in string.Formatter().parse(label) if name is not None]
        for name in names:
            if name not in configurable or configurable[name] in (None, ""):
                raise ValueError(
                    f"namespace template {tuple(template)!r} needs"
                    f" config['configurable'][{name!r}], which this run's config lacks"
                )
        filled.append(label.format_map(configurable))
    return _check_namespace(tuple(filled), f"namespace filled from {tuple(template)!r}")


class PoolSplitStoreRetriever(BaseRetriever):
    """Pool-split retrieval of a user's memories in a LangGraph store, as a LangChain retriever.

    Setup:
        ``pip install 'poolsplit[langgraph]'``

    Key init args:
        store: a :class:`PoolSplitStore`.
        namespace: a namespace template, e.g. ``("memories", "{user_id}")``,
            filled from ``config["configurable"]`` on every call. A variable
            the config lacks raises a ValueError naming it: nothing is read.
        pools: the pools (``Pool`` objects or their plain-data dicts).
        k: caps the contextual results (fair round-robin across pools);
            corrections are never cut.

    Invoke:
        .. code-block:: python

            retriever = PoolSplitStoreRetriever(store=store,
                                                namespace=("memories", "{user_id}"),
                                                pools=pools)
            docs = retriever.invoke("how do I deploy?",
                                    {"configurable": {"user_id": "ana"}})

    Inside a LangGraph node the run's config reaches the retriever on its own.
    Results: corrections first, then each pool's picks; ``page_content`` is the
    entry's content, ``metadata`` the item's value (without ``content``) plus
    ``namespace``, ``key``, ``poolsplit_pool``, ``poolsplit_score`` and
    ``poolsplit_always``.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")

    store: PoolSplitStore
    namespace: tuple[str, ...]
    pools: list[Pool]
    k: int | None = None
    context: dict[str, Any] = Field(default_factory=dict)
    now: datetime | None = None
    max_always_tokens: int | None = None

    @field_validator("pools", mode="before")
    @classmethod
    def _check_pools(cls, value: Any) -> Any:
        return check_pools_arg(value)

    @field_validator("k", mode="before")
    @classmethod
    def _check_k(cls, value: Any) -> Any:
        return check_k(value)

    @field_validator("max_always_tokens", mode="before")
    @classmethod
    def _check_max_always_tokens(cls, value: Any) -> Any:
        return check_max_always_tokens(value)

    @field_validator("namespace", mode="before")
    @classmethod
    def _check_template(cls, value: Any) -> Any:
        if isinstance(value, str) or not isinstance(value, (tuple, list)) or not value:
            raise TypeError(f"namespace must be a non-empty tuple of str labels, got {value!r}")
        for label in value:
            if not isinstance(label, str) or not label:
                raise TypeError(f"namespace labels must be non-empty str, got {label!r}")
        return tuple(value)

    def invoke(self, input: str, config: RunnableConfig | None = None,
               **kwargs: Any) -> list[Document]:
        """Fill the namespace from ``config`` (or the run's), then retrieve."""
        config = ensure_config(config)
        kwargs["namespace"] = self._namespace(config, kwargs)
        return super().invoke(input, config, **kwargs)

    async def ainvoke(self, input: str, config: RunnableConfig | None = None,
                      **kwargs: Any) -> list[Document]:
        """Fill the namespace from ``config`` (or the run's), then retrieve."""
        config = ensure_config(config)
        kwargs["namespace"] = self._namespace(config, kwargs)
        return await super().ainvoke(input, config, **kwargs)

    def _namespace(self, config: RunnableConfig, kwargs: Mapping[str, Any]) -> tuple[str, ...]:
        if "namespace" in kwargs:  # the template is the only way to name one: it can't widen
            raise TypeError("PoolSplitStoreRetriever.invoke() got unexpected keyword argument"
                            " 'namespace'; the namespace comes from the template and the config")
        refuse_unknown("PoolSplitStoreRetriever.invoke()",
                       [name for name in kwargs if name not in _FRAMEWORK_KWARGS], _CALL_KWARGS)
        return fill_namespace(self.namespace, config)

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        namespace = kwargs.pop("namespace", None)
        if namespace is None:
            namespace = fill_namespace(self.namespace, ensure_config())
        for name in _FRAMEWORK_KWARGS:
            kwargs.pop(name, None)
        refuse_unknown("PoolSplitStoreRetriever.invoke()", kwargs, _CALL_KWARGS)
        k = self.k if kwargs.get("k") is None else check_k(kwargs["k"])
        context = build_context(self.context, query, project=kwargs.get("project"),
                                tags=kwargs.get("tags"))
        decided, items = self.store._decide(namespace, self.pools, context, self.now,
                                            self.max_always_tokens)
        entries = {d.index: d.entry for picked in decided.values() for d in picked}
        docs = []
        for d in assemble(decided, k):
            item = items[d.index]
            metadata = {name: value for name, value in item.value.items() if name != "content"}
            metadata["namespace"] = tuple(item.namespace)
            metadata["key"] = item.key
            docs.append(Document(
                page_content=str(entries[d.index].get("content", "")),
                metadata=result_metadata(metadata, d),
            ))
        return docs

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        return self._get_relevant_documents(query, run_manager=run_manager.get_sync(), **kwargs)
