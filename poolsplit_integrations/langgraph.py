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
2. **Writes through this object** are in the index when the write returns, or
   else read again before the next answer (below).
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

How the in-process index keeps those rules under concurrent writers:

- **A full read is one snapshot**: the cold read of a namespace, the
  reconcile, :meth:`PoolSplitStore.refresh`, and a poll that cannot stop at
  the last ``updated_at`` seen each read the whole namespace in one
  ``search`` call, never page by page (a write between two pages would shift
  rows, and the read would drop an item it skipped). A poll reads at most
  ``page_size`` items (default 1000) in its one call; when more than that
  changed since the last one, it does a full read instead.
- **A read-back is applied only when it can be ordered.** After each write
  the written items are read back by key. The result is applied when no
  other read of that key (another write's read-back, a full read or poll
  of its namespace) was in flight with it and, an item, it is not older by
  ``updated_at`` than the item the index holds; otherwise the key is read
  again, by key, before the next answer. So after concurrent writes of one
  key (threads, or coroutines awaiting ``aput``) have returned, the next
  answer serves what the store holds.
- **A failed read-back does not fail the write.** A write that reached the
  store returns normally even when reading it back fails (a connection lost
  after the commit); a warning goes to the ``"poolsplit"`` logger and the
  namespace is read in full before its next answer. A write that raises
  may have committed all the same, so its namespace is read in full before
  its next answer too.
- **Memory is bounded.** An index is kept per namespace read, at most
  ``max_namespaces`` of them (default 1024, the least recently read dropped
  first), and one not read for ``evict_after`` seconds (default 600) is
  dropped when the next pool-split read comes. A dropped namespace is read
  cold, in full, the next time it is asked for.

Safe with no option set:

- **Every correction loads.** Pool-split reads run the core with
  ``always_pool=True``: an active correction whose type no pool takes (or
  with no type) loads all the same, under one more pool, ``"always"``.
- **A bad item never takes a namespace down.** An item written around this
  object (the bare store, another service, old data) that the core would
  refuse, or that :mod:`poolsplit_core.checks` finds a problem in
  (``strict=True``), is skipped from pool-split reads, logged once per
  (namespace, key, problem) on the ``"poolsplit"`` logger and listed in
  :attr:`StoreExplanation.skipped`; every other item still loads.
- **Writes are strict.** ``put``/``aput``/``batch`` refuse such a value
  before anything is written, naming namespace, key and field
  (``strict=False``: only what the core itself refuses). A value of
  ``None`` deletes the item, as LangGraph's ``BaseStore`` defines.
- **A namespace is a tuple, on every call.** A bare str (``"mem/ana"``),
  which LangGraph's stores read as one label per character, is refused
  with a TypeError by every read and write alike.
- **Tenancy fails closed**, by one rule (see :class:`PoolSplitStore`): a
  namespace whose items carry a ``user_id`` answers only a call that names
  a user.

The mapping from a store item to an entry is
:func:`poolsplit_integrations._entries.item_to_entry` (table in its section
and in the user guide's LangGraph page); :func:`item_entry` gives one item's,
e.g. to render a result as prompt text with ``render_pools(got, entry=item_entry)``.
Reads made for pool-split pass ``refresh_ttl=False``: they never keep a memory
alive that the agent itself did not read.

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

import asyncio
import inspect
import logging
import re
import string
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AsyncExitStack, ExitStack, asynccontextmanager, contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from types import MappingProxyType
from typing import Any, Literal, NamedTuple, NoReturn, TypeVar, cast

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
    ListNamespacesOp,
    NamespacePath,
    NotProvided,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
)
from pydantic import ConfigDict, ValidationInfo, field_validator

from poolsplit_core import tracing
from poolsplit_core.checks import entry_problems
from poolsplit_core.poolsplit import (
    Decision,
    Explanation,
    Ledger,
    Pool,
    default_is_active,
    default_token_counter,
)
from poolsplit_core.prepared import PreparedStore
from poolsplit_integrations._entries import item_entry_id, item_to_entry, result_metadata
from poolsplit_integrations._models import option_field
from poolsplit_integrations._options import (
    check_k,
    check_max_always_tokens,
    check_option,
    check_pools_arg,
    check_strict,
    refuse_unknown,
)
from poolsplit_integrations._select import assemble, build_context, check_query
from poolsplit_integrations._tenancy import (
    USER_KEY,
    UnboundTenant,
    carries_user,
    check_required_keys,
    matches,
    narrow,
    refuse_unbound,
)

__all__ = ["PoolSplitStore", "PoolSplitStoreRetriever", "StoreExplanation", "as_poolsplit",
           "item_entry"]

logger = logging.getLogger("poolsplit")

#: How many (namespace, key, problem) warnings a store remembers having
#: given; past it, it forgets them all (a warning may then come again).
WARNED_LIMIT = 10_000
#: How many verdicts on database items (checked value, by namespace and key) are kept.
VERDICTS_KEPT = 16_384

_T = TypeVar("_T")

#: How far before the last ``updated_at`` seen a poll reads again: a write
#: whose transaction started before another one committed may carry an older
#: timestamp than that one. Anything older still is the reconcile's.
POLL_MARGIN = timedelta(seconds=2)

#: The ``limit`` of a full read: larger than any namespace an in-process index
#: could hold, so one ``search`` call returns the whole namespace (one snapshot;
#: reading it page by page would let a write between two pages shift rows and
#: skip an item the read would then drop).
FULL_READ_LIMIT = 2**31 - 1

#: A store item, as a write names it: its namespace and key.
_Key = tuple[tuple[str, ...], str]


# --------------------------------------------------------------------------
# Private helpers
# --------------------------------------------------------------------------


def _refuse_str_namespace(namespace: Any, what: str = "namespace") -> None:
    """A TypeError for a bare str namespace, on every call that takes one, read or write.

    LangGraph's stores take a tuple of labels and read a str as a sequence of
    one-character labels (``"mem/ana"`` is stored under ``('m', 'e', 'm', '/',
    ...)``), where no tuple finds it again.
    """
    if not isinstance(namespace, str):
        return
    labels = tuple(label for label in re.split(r"[/.]", namespace) if label)
    one = f" (or {(namespace,)!r} for one label)" if "." not in namespace and len(
        labels) > 1 else ""
    raise TypeError(
        f"{what} must be a tuple of str labels, got the str {namespace!r}, which a LangGraph"
        f" store reads as one label per character: pass"
        f" {labels if len(labels) > 1 else (namespace,)!r}{one}"
    )


def _check_namespace(namespace: Any, what: str = "namespace") -> tuple[str, ...]:
    """A non-empty tuple of non-empty str labels without dots, else a ValueError naming it."""
    _refuse_str_namespace(namespace, what)
    if not isinstance(namespace, (tuple, list)):
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


def _check_count(name: str, value: Any) -> None:
    """An int >= 1, else a ValueError naming the option ``name`` and ``value``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be an int >= 1, got {value!r}")


def _reads_database(store: BaseStore) -> bool:
    """Whether pool-split reads of ``store`` go to its database (LangGraph's PostgreSQL stores).

    Decided by what the store is, subclasses included (a store made by a
    class of LangGraph's PostgreSQL module has had that module imported).
    """
    if "langgraph.store.postgres" not in sys.modules:
        return False  # (the postgres extra need not be installed)
    from poolsplit_integrations._postgres import is_database_store
    return is_database_store(store)


def _postgres_store_class() -> type:
    """LangGraph's ``PostgresStore`` (only asked once a store of its module exists)."""
    from langgraph.store.postgres import PostgresStore
    return PostgresStore


# SQLSTATEs of a lost or refused connection: class 08, and the server shutting down.
_CONNECTION_STATES = ("08", "57P01", "57P02", "57P03")
#: SQLSTATE of a statement the server cancelled (statement_timeout).
_CANCELLED = "57014"


def _is_connection_error(exc: BaseException) -> bool:
    """True for a lost or refused database connection (psycopg, its pool, sqlite3, sockets).

    A driver error carrying an SQLSTATE counts only when that state says so
    (a cancelled statement or a constraint is not a lost connection).
    """
    if isinstance(exc, OSError):
        return True
    state = getattr(exc, "sqlstate", None)
    if state:
        return str(state).startswith(_CONNECTION_STATES)
    return any(cls.__name__ in ("OperationalError", "InterfaceError", "PoolTimeout", "PoolClosed")
               for cls in type(exc).__mro__)


def _redact(conn_string: str) -> str:
    """A connection string with its password replaced by ``***``.

    >>> _redact("postgresql://ana:secret@db/mem?password=again")
    'postgresql://ana:***@db/mem?password=***'
    >>> _redact("host=db password='it s' dbname=mem")
    'host=db password=*** dbname=mem'
    """
    conn_string = _PASSWORD_PARAM.sub(r"\1***", conn_string)
    head, at, tail = conn_string.rpartition("@")
    if at and ":" in head.split("//", 1)[-1]:
        scheme, _, user_pass = head.rpartition("//")
        user = user_pass.split(":", 1)[0]
        return f"{scheme}//{user}:***@{tail}"
    return conn_string


#: A password given as a parameter: ``password=...`` (key=value, quoted or not) or
#: ``?password=...`` / ``&password=...`` in a URI.
_PASSWORD_PARAM = re.compile(r"((?:^|[\s?&])password\s*=\s*)('(?:[^'\\]|\\.)*'|[^\s&]*)")


def _one_line(exc: BaseException) -> str:
    """The message of ``exc`` on one line (libpq's messages span several)."""
    return " ".join(str(exc).split()) or type(exc).__name__


def _check_conninfo(name: str, conn_string: Any) -> None:
    """Refuse ``conn_string`` at once unless libpq can read it (a URI or key=value pairs)."""
    from psycopg import ProgrammingError
    from psycopg.conninfo import conninfo_to_dict

    if not isinstance(conn_string, str):
        raise TypeError(f"{name} must be a str (a PostgreSQL URI or key=value connection"
                        f" string), got {type(conn_string).__name__}")
    try:
        conninfo_to_dict(conn_string)
    except ProgrammingError as exc:
        reason = _one_line(exc).replace(conn_string, _redact(conn_string))
        raise ValueError(
            f"{name} is not a PostgreSQL connection string ({reason}), got"
            f" {_redact(conn_string)!r}; write a URI such as"
            " 'postgresql://user:password@host:5432/dbname' or key=value pairs such as"
            " 'host=localhost dbname=mydb'"
        ) from None


def _probe(conn_string: str, kwargs: Mapping[str, Any]) -> None:
    """Connect once, so that a refused connection says why at once (a pool would only time out).

    Raises:
        ConnectionError: naming the server (password hidden) and the driver's
            or the server's reason: no such database, authentication failed, a
            host that does not resolve, nothing listening...
    """
    import psycopg

    try:
        psycopg.connect(conn_string, autocommit=True, **kwargs).close()
    except psycopg.OperationalError as exc:
        raise ConnectionError(f"cannot connect to the PostgreSQL server at"
                              f" {_redact(conn_string)}: {_one_line(exc)}") from exc


#: SQLSTATE of a table that does not exist: a store whose ``setup()`` never ran.
_NO_TABLE = "42P01"


def _setup_named(exc: BaseException) -> BaseException | None:
    """``exc`` (the same type) saying to run ``setup()``, when it is about a missing table."""
    if getattr(exc, "sqlstate", None) != _NO_TABLE:
        return None
    said = getattr(getattr(exc, "diag", None), "message_primary", None) or _one_line(exc)
    return _renamed(exc, "the store's tables are not in this database: run setup() on the"
                         " store once before using it (PoolSplitStore.from_conn_string(...,"
                         " setup=True) does; over an AsyncPostgresStore: await asetup());"
                         f" the server said: {said}")


@contextmanager
def _naming_setup() -> Iterator[None]:
    """Re-raise an error about a missing table as one that says to run ``setup()``."""
    try:
        yield
    except Exception as exc:
        named = _setup_named(exc)
        if named is None:
            raise
        raise named from exc


def _item_label(item: Item) -> str:
    """How a problem names a store item: its namespace and key."""
    return f"store item {tuple(item.namespace)!r} key {item.key!r}"


def _strict_problems(entry: Mapping[str, Any], label: Callable[[], str],
                     now: datetime | None = None) -> list[str]:
    """The problems :func:`poolsplit_core.checks.entry_problems` finds, each naming ``label()``.

    The label is built only for an entry with a problem (a cold read checks
    every item). ``now`` (a write's time) adds a ``created`` in the future;
    a read never skips an item for the time it names.
    """
    if not entry_problems(entry, "", now=now):
        return []
    return entry_problems(entry, label(), now=now)


def _renamed(exc: BaseException, message: str) -> BaseException:
    """A copy of ``exc`` (same type and attributes) whose message is ``message``."""
    try:
        new = type(exc).__new__(type(exc))
        new.__dict__.update(vars(exc))
        new.args = (message,)
    except Exception:  # an exception type that cannot be copied this way keeps its message
        return exc
    return new


@contextmanager
def _naming(prefix: tuple[str, ...]) -> Iterator[None]:
    """Make a TypeError or ValueError raised inside name the namespace ``prefix``."""
    try:
        yield
    except (TypeError, ValueError) as exc:
        if repr(prefix) in str(exc):
            raise
        raise _renamed(exc, f"namespace {prefix!r}: {exc}") from exc


class _Skipped(NamedTuple):
    """An item pool-split reads leave out, and why."""

    item: Item
    entry: dict[str, Any] | None  # None: the value is not a mapping
    problems: tuple[str, ...]


class _View:
    """The prepared index of one namespace (prefix), as last read from the store."""

    engine = "index"  # what StoreExplanation.engine names
    read_from = "primary"  # StoreExplanation.read_from, .replica_lag
    replica_lag: float | None = None

    # invariants: 1) ``prepared`` holds one entry per item under ``prefix`` as
    # last read that has no problem (PoolSplitStore._problems), its id
    # item_entry_id(namespace, key, prefix); 2) ``items`` maps each such id to
    # that Item, ``skipped`` each other item's id to a _Skipped -- no id is in
    # both; 3) ``users`` holds the ids of both whose entry carries a user_id;
    # 4) ``watermark`` is the newest updated_at a read of the namespace (cold,
    # poll or reconcile) returned -- never that of this object's own writes,
    # which would hide another process's write stamped earlier but not yet
    # polled; 5) ``recheck`` holds the keys whose read-back could not be
    # ordered (read again before the next answer), ``needs_full`` says a
    # read-back failed (a full read before the next answer); a full read
    # clears both; 6) ``used`` is when a pool-split read last read the view
    # (the owner's ``_views`` lists views in that order).

    def __init__(self, owner: PoolSplitStore, prefix: tuple[str, ...], prepared: PreparedStore,
                 now: float) -> None:
        self.owner = owner
        self.prefix = prefix
        self.prepared = prepared
        self.items: dict[Any, Item] = {}
        self.skipped: dict[Any, _Skipped] = {}
        self.users: set[Any] = set()
        self.watermark: datetime | None = None
        self.polled = now  # monotonic time of the last poll or full read
        self.reconciled = now  # monotonic time of the last full read
        self.used = now  # monotonic time of the last pool-split read (eviction)
        self.recheck: set[_Key] = set()  # keys to read again before the next answer
        self.needs_full = False  # a full read before the next answer

    def last_read(self, entry_id: Any) -> Item | None:
        """The item this id had when last read, kept or skipped (None: not held)."""
        held = self.items.get(entry_id)
        if held is None and entry_id in self.skipped:
            return self.skipped[entry_id].item
        return held

    def apply(self, item: Item, *, polled: bool = True) -> None:
        """Put one item read from the store into the index (upsert in place, or append).

        ``polled``: the item came from a read of the namespace, so it may move
        the watermark (an item read back after this object's own write may not).
        An item with a problem is skipped instead, and its older copy dropped.
        """
        entry_id = item_entry_id(item.namespace, item.key, self.prefix)
        if polled and (self.watermark is None or item.updated_at > self.watermark):
            self.watermark = item.updated_at
        if _unchanged(self.last_read(entry_id), item):
            return  # unchanged (a store may stamp two writes in one second alike)
        entry, problems = self.owner._problems(item, self.prefix)
        if entry is not None and not problems:
            try:
                self.prepared.upsert(entry)
            except (TypeError, ValueError) as exc:  # the core refuses it
                problems = (f"{_item_label(item)}: {exc}",)
            else:
                self.skipped.pop(entry_id, None)
                self.items[entry_id] = item
                self._own(entry_id, entry)
                return
        self.remove(entry_id)
        self.skip(entry_id, _Skipped(item, entry, problems))

    def apply_read_back(self, target: _Key, item: Result, *, ordered: bool = False) -> None:
        """Apply one key as read by itself from the store (None: the store holds none).

        Unless ``ordered`` (no read of the namespace can be newer), an item
        older by ``updated_at`` than the one held is not applied: the key is
        marked for a re-read instead. One stamped alike is applied: no read of
        the key overlapped this one (the caller checks), so it was read later.
        Applying a key ends its pending re-read.
        """
        entry_id = item_entry_id(target[0], target[1], self.prefix)
        if not isinstance(item, Item):
            self.remove(entry_id)
        else:
            held = self.last_read(entry_id)
            if not ordered and held is not None and held.updated_at > item.updated_at:
                self.recheck.add(target)
                return
            self.apply(item, polled=False)
        self.recheck.discard(target)

    def skip(self, entry_id: Any, skipped: _Skipped) -> None:
        """Hold ``skipped`` out of the index (as read; the id is in no other map)."""
        self.skipped[entry_id] = skipped
        self._own(entry_id, skipped.entry)
        self.owner._report(self.prefix, skipped)

    def remove(self, entry_id: Any) -> None:
        if entry_id in self.items:
            self.prepared.delete(entry_id)
            del self.items[entry_id]
        self.skipped.pop(entry_id, None)
        self.users.discard(entry_id)

    def _own(self, entry_id: Any, entry: Mapping[str, Any] | None) -> None:
        if entry is not None and carries_user(entry):
            self.users.add(entry_id)
        else:
            self.users.discard(entry_id)


#: A call's context and ``now``, for a database that scores as it reads.
_Scoring = tuple["Mapping[str, Any] | None", "datetime | None"]


class _Unindexed(NamedTuple):
    """What a database read has in place of a view: no index, every item read for the call."""

    prepared: PreparedStore  # empty: the items are the call's extra entries
    polled: float  # when the read ran (monotonic)
    skipped: Mapping[Any, _Skipped] = MappingProxyType({})
    users: frozenset[Any] = frozenset()
    engine: str = "snapshot"  # or "database": the database scores (conn: its snapshot)
    conn: Any = None
    read_from: str = "primary"  # or "standby": the hot standby answered (PoolSplitStore(standby=))
    replica_lag: float | None = None  # its replay lag then, in seconds
    fetch: Any = None  # an async store's "database" read: its pages (_pgengine.LoopPages)
    scored: Any = None  # a small namespace's rows, scored as read (_pgengine.SmallRead)


def _unchanged(old: Item | None, item: Item) -> bool:
    """Whether ``item`` is ``old`` as read before: same ``updated_at``, same value."""
    return old is not None and old.updated_at == item.updated_at and old.value == item.value


class _Read(NamedTuple):
    """One pool-split read of a namespace: the caught-up view and the store's corrections now."""

    view: _View
    live_items: list[SearchItem]  # the corrections that load, as Items ...
    live: list[dict[str, Any]]  # ... and as entries, in the same order
    refused: dict[Any, _Skipped]  # the corrections read now that have a problem, by id

    def carries_user(self) -> bool:
        """Whether any item read carries a ``user_id`` (skipped ones too)."""
        return (bool(self.view.users) or any(map(carries_user, self.live))
                or any(s.entry is not None and carries_user(s.entry)
                       for s in self.refused.values()))

    def skipped(self, keep: Callable[[Mapping[str, Any]], bool] | None
                ) -> tuple[tuple[Any, str], ...]:
        """``(id, problem)`` of each skipped item that ``keep`` accepts (all for None).

        An item whose value is not a mapping is listed only when ``keep`` is None;
        a correction the index still holds skipped but the store now holds fixed
        (it loads, read live) is not.
        """
        loading = {entry["id"] for entry in self.live}
        held = {**{entry_id: s for entry_id, s in self.view.skipped.items()
                   if entry_id not in loading}, **self.refused}
        return tuple((entry_id, problem) for entry_id, s in held.items()
                     if keep is None or (s.entry is not None and keep(s.entry))
                     for problem in s.problems)


class _Call(NamedTuple):
    """One pool-split read of a namespace, checked, read and bound to its tenant."""

    prefix: tuple[str, ...]
    pools: list[Pool]
    read: _Read
    listed: Callable[[Mapping[str, Any]], bool] | None  # the skipped items to report
    core: dict[str, Any]  # the core's keywords: extra, where, include, max_always_tokens
    asked: dict[str, Any] | None  # the caller's filter, checked
    bound: str | None  # the user a namespace template named


@dataclass(frozen=True)
class StoreExplanation:
    """The core's account of one pool-split read of a namespace, and how fresh it was.

    ``explanation`` is the core's :class:`~poolsplit_core.Explanation` (one
    Decision per entry, one Ledger per pool). ``staleness`` is how many seconds
    ago the index last caught up with the store (0.0 right after a refresh):
    other processes' writes since then may be missing, except corrections,
    which ``always_read_live`` counts (read from the store for this query).
    ``skipped`` lists the items left out because of a problem, one
    ``(key, problem)`` pair per problem (the key of an item in a deeper
    namespace is its entry id: the labels below ``namespace``, then the key);
    each problem names the item's namespace, key and field. Under a filter,
    only the skipped items the filter would keep are listed.

    ``engine`` names what answered: ``"snapshot"`` when the store's database
    was read for this call (LangGraph's ``PostgresStore`` and
    ``AsyncPostgresStore``, and any subclass of them: every item read in one
    statement, so ``staleness`` is 0.0), ``"index"`` for the in-process
    index of other stores.

    ``read_from`` is ``"standby"`` when a hot standby answered the read
    (``PoolSplitStore(standby=...)``), else ``"primary"``; ``replica_lag`` is
    then how many seconds the standby's replay was behind the primary (0.0
    when it had replayed all it had received; None when the primary answered).
    """

    explanation: Explanation
    namespace: tuple[str, ...]
    staleness: float
    refresh_interval: float
    reconcile_interval: float
    always_read_live: int
    skipped: tuple[tuple[Any, str], ...] = ()
    engine: str = "index"
    replica_lag: float | None = None
    read_from: str = "primary"

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
        ```python
        from langgraph.store.memory import InMemoryStore
        store = PoolSplitStore(InMemoryStore())
        graph = builder.compile(store=store)  # nodes and langmem write through it
        ```

    Read:
        ```python
        got = store.retrieve_pools(("memories", "ana"), pools, {"message": msg})
        # {"corrections": [Item, ...], "work": [...], ...}
        ```

    Key init args:
        - ``store``: the LangGraph store to wrap.
        - ``strict``: refuse a write whose value :mod:`poolsplit_core.checks`
          finds a problem in (default True); ``False`` refuses only what the
          core itself would (a value that is not a mapping, ``tags`` that are
          not strings...). Pool-split reads skip the same items.
        - ``require_filter_keys``: the keys a pool-split read's filter must
          hold. ``None`` (default): ``("user_id",)`` as soon as an item read
          carries a ``user_id``; ``()`` states a shared store.
        - ``score_in_database``: over a ``PostgresStore`` on which
          :meth:`setup` has run (an ``AsyncPostgresStore``: :meth:`asetup`),
          let the database score large namespaces (default True; the user
          guide's "Scoring in the database"); False reads every namespace
          whole. The answers are the same.
        - ``refresh_interval``, ``reconcile_interval``: seconds (module
          docstring).
        - ``page_size``: the most items one poll reads (default 1000); more
          changes than that since the last poll are picked up by a full read,
          which always reads the whole namespace in one ``search`` call.
        - ``max_namespaces``: the most namespaces indexed at once (default
          1024); past it the least recently read is dropped.
        - ``evict_after``: seconds (default 600; ``math.inf``: never) a
          namespace stays indexed without being read. A dropped namespace is
          read cold, in full, the next time it is asked for.
        - ``standby``: a second LangGraph ``PostgresStore``
          (``AsyncPostgresStore`` when ``store`` is one) connected to a hot
          standby of ``store``'s database. Pool-split reads go to it unless
          that could hide a write made through this object: after each write
          the primary's WAL position is kept per namespace, and a read of a
          namespace whose position the standby has not replayed yet goes to the
          primary (so does every read while the standby fails: one warning is
          logged). Once :meth:`setup` ran on the primary, the standby scores
          the reads it answers as the primary would (``score_in_database``).
          :attr:`StoreExplanation.read_from` and ``replica_lag`` say which
          answered. Another process's write shows in a standby read once
          replayed; for it never to be hidden, writers commit with
          ``synchronous_commit = remote_apply`` and the standby is listed in
          the primary's ``synchronous_standby_names`` (see
          :mod:`poolsplit_integrations._standby`).

    Freshness of the in-process index (module docstring): a write through
    this object is read back and applied to the index before it returns,
    unless another read of the same key overlapped that read-back or the
    index holds the item with a newer ``updated_at``: then the key is read
    again before the next answer. If
    the read-back fails, the write still returns (a warning is logged) and
    the namespace is read in full before its next answer.

    Every ``BaseStore`` call (``get``, ``search``, ``list_namespaces``,
    ``batch``, their async twins, and ``put``/``delete`` with ``ttl`` where
    the wrapped store takes it) goes to the wrapped store and returns what it
    returns; ``put`` of ``None`` (and a ``PutOp`` whose value is None)
    deletes, as ``BaseStore`` defines. Attributes it lacks (``setup()``,
    ``conn``, ``sweep_ttl``...) are the wrapped store's.

    Writes: a value that is not a mapping, that the core would refuse, or
    (``strict``) that has a problem is refused before anything is written,
    naming the namespace, key and field; a batch is checked whole first.
    Reads: an item with such a problem that reached the store another way
    is skipped from pool-split reads, logged once and listed in
    :attr:`StoreExplanation.skipped`. Pool-split reads run the core with
    ``always_pool=True`` unless told otherwise, so every active correction
    loads (under the pool ``"always"`` when no pool takes its type).

    Tenancy, one rule: when any item a pool-split read finds under the
    namespace carries a ``user_id`` (skipped items too), the call must name a
    user -- ``filter={"user_id": ...}`` on :meth:`retrieve_pools` and
    :meth:`explain_pools`, or a :class:`PoolSplitStoreRetriever` whose
    namespace template holds ``{user_id}`` -- else a ValueError, unless the
    store was built with ``require_filter_keys=()``. A named user sees only
    the items whose ``user_id`` is theirs; in a namespace named by the
    template, items without a ``user_id`` are that user's too. A ``user_id``
    must be a non-empty, non-blank str.

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
        strict: bool = True,
        require_filter_keys: Sequence[str] | None = None,
        score_in_database: bool = True,
        max_namespaces: int = 1024,
        evict_after: float = 600.0,
        standby: BaseStore | None = None,
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
        _check_count("page_size", page_size)
        _check_count("max_namespaces", max_namespaces)
        if (isinstance(evict_after, bool) or not isinstance(evict_after, (int, float))
                or not evict_after > 0):
            raise ValueError(f"evict_after must be a number of seconds > 0 (math.inf: never),"
                             f" got {evict_after!r}")
        self.strict = check_strict(strict)
        self.require_filter_keys = check_required_keys(require_filter_keys)
        if not isinstance(score_in_database, bool):
            raise TypeError(f"score_in_database must be a bool, got {score_in_database!r}")
        self.score_in_database = score_in_database
        self.store = store
        self.refresh_interval = float(refresh_interval)
        self.reconcile_interval = float(reconcile_interval)
        self.token_counter = token_counter
        self.is_active = is_active
        self.page_size = page_size
        self.max_namespaces = max_namespaces
        self.evict_after = float(evict_after)
        self.clock = clock
        self.supports_ttl = store.supports_ttl
        self.ttl_config = store.ttl_config
        #: The views, least recently read first (evicted from the front).
        self._views: dict[tuple[str, ...], _View] = {}
        #: How many read-backs of each key are in flight (read from the store, not applied).
        self._in_flight: dict[_Key, int] = {}
        #: The keys in flight whose read-back another read of them overlapped.
        self._contested: set[_Key] = set()
        self._lock = threading.RLock()
        #: Pool-split reads go to the database (LangGraph's PostgreSQL stores): no index.
        self._database = _reads_database(store)
        #: Pool-split reads from a hot standby, unless it could hide a write (_standby.py).
        self._standby: Any = None
        if standby is not None:
            from poolsplit_integrations._standby import StandbyReads
            self._standby = StandbyReads(store, standby)
        #: Whether the database scores reads (PoolSplitStore.setup ran), and when it was asked.
        self._in_database_ok: tuple[bool, float] | None = None
        #: Recent verdicts on database items: (namespace, key) -> (the item as checked,
        #: whether its value is a mapping, its problems).
        self._verdicts: OrderedDict[tuple[tuple[str, ...], str],
                                    tuple[Item, bool, tuple[str, ...]]]
        self._verdicts = OrderedDict()
        #: The (namespace, key, problem) triples of skipped items already logged.
        self._warned: set[tuple[tuple[str, ...], str, str]] = set()

    @classmethod
    @contextmanager
    def from_conn_string(cls, conn_string: str, *, setup: bool = True, strict: bool = True,
                         pool_size: int = 4, statement_timeout: float | None = 30.0,
                         connect_timeout: float = 5.0, standby_conn_string: str | None = None,
                         **options: Any) -> Iterator[PoolSplitStore]:
        """A PoolSplitStore over LangGraph's ``PostgresStore`` at ``conn_string``, closed on exit.

        ``conn_string`` is a libpq URI (``postgresql://user:password@host/db``)
        or key=value string; one libpq cannot read is a ValueError at once.
        One connection is made first: a server that refuses it (no such
        database, authentication failed, a host that does not resolve, nothing
        listening) is a ConnectionError naming the server (password hidden) and
        the reason, before any pool is opened. The store then reaches the
        server through a connection pool of at most
        ``pool_size`` connections, each checked before use: after a server
        restart the next call reconnects, and while the server is down a call
        raises a ConnectionError naming it after at most
        ``connect_timeout`` seconds. A statement running longer than
        ``statement_timeout`` seconds (None: no limit) is cancelled by the
        server. ``setup`` creates LangGraph's store tables if needed (its own
        migrations); ``strict`` and the other ``options`` are
        :class:`PoolSplitStore`'s. Needs ``pip install 'poolsplit[postgres]'``.

        ``standby_conn_string``: a hot standby of that server (streaming
        replication). Its own pool (read-only sessions, the same sizes and
        timeouts) becomes the ``standby`` store; the primary's connections
        then commit with ``synchronous_commit = remote_apply``, so that when
        the primary lists the standby in ``synchronous_standby_names`` every
        write this store acknowledges is already applied on the standby.
        """
        check_strict(strict)  # before a connection is opened
        if standby_conn_string is not None and "standby" in options:
            raise TypeError("pass standby_conn_string or standby, not both")
        if isinstance(pool_size, bool) or not isinstance(pool_size, int) or pool_size < 1:
            raise ValueError(f"pool_size must be an int >= 1, got {pool_size!r}")
        for name, value in (("statement_timeout", statement_timeout),
                            ("connect_timeout", connect_timeout)):
            if value is None and name == "statement_timeout":
                continue
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
                raise ValueError(f"{name} must be a number of seconds > 0, got {value!r}")
        postgres = require("langgraph.store.postgres", "postgres", "psycopg", "psycopg_pool",
                           what="PoolSplitStore.from_conn_string")
        _check_conninfo("conn_string", conn_string)
        if standby_conn_string is not None:
            _check_conninfo("standby_conn_string", standby_conn_string)
        from psycopg_pool import ConnectionPool

        kwargs: dict[str, Any] = {"connect_timeout": max(1, round(connect_timeout))}
        if statement_timeout is not None:
            kwargs["options"] = f"-c statement_timeout={max(1, round(statement_timeout * 1000))}"
        # A pool retries a lost server with growing pauses; giving up after
        # connect_timeout lets the next call after a restart connect at once.
        pool = {"min_size": 1, "max_size": pool_size, "kwargs": kwargs,
                "check": ConnectionPool.check_connection, "timeout": connect_timeout,
                "reconnect_timeout": connect_timeout}
        if standby_conn_string is not None:
            read_only = " ".join([*kwargs.get("options", "").split(),
                                  "-c default_transaction_read_only=on"])
            standby_pool = {**pool, "kwargs": {**kwargs, "options": read_only}}
            kwargs["options"] = " ".join([*kwargs.get("options", "").split(),
                                          "-c synchronous_commit=remote_apply"])
        _probe(conn_string, kwargs)
        with ExitStack() as stack:
            try:
                if standby_conn_string is not None:  # (not set up: the primary's tables replicate)
                    options["standby"] = stack.enter_context(
                        postgres.PostgresStore.from_conn_string(standby_conn_string,
                                                                pool_config=standby_pool))
                inner = stack.enter_context(
                    postgres.PostgresStore.from_conn_string(conn_string, pool_config=pool))
                store = cls(inner, strict=strict, **options)
                if setup:
                    store.setup()
            except Exception as exc:
                if isinstance(exc, TimeoutError):  # (an OSError, but the server answered)
                    raise
                if _is_connection_error(exc) or isinstance(exc.__cause__, ConnectionError):
                    raise ConnectionError(
                        f"cannot reach the PostgreSQL server at {_redact(conn_string)}: {exc}"
                    ) from exc
                raise
            yield store

    def setup(self) -> None:
        """The wrapped store's own setup (LangGraph's migrations), then pool-split's.

        Over LangGraph's ``PostgresStore`` it also installs, idempotently, the
        schema ``poolsplit_v1`` (SQL functions that read a row as the core
        reads its entry, a table of each row's readings and the triggers on
        ``store`` that keep it): from then on the database scores pool-split
        reads (the user guide's PostgreSQL section). Every process may run it:
        once a release's install has finished, running it again costs a few
        statements whatever the store's size. The first run (and the first
        after an upgrade whose SQL changed) gives every row a reading; on a
        large store, run it once without a statement timeout
        (``poolsplit-postgres setup DSN``). A setup the server cancels
        (``statement_timeout``) raises a TimeoutError saying so. Over a store
        whose own setup is async (``AsyncPostgresStore``), await :meth:`asetup`
        instead.
        """
        own = getattr(self.store, "setup", None)
        if own is not None and inspect.iscoroutinefunction(own):
            raise TypeError(f"PoolSplitStore.setup() cannot set up an {type(self.store).__name__}"
                            " (its setup is async): await store.asetup() in its event loop")
        with self._setting_up():
            if own is not None:
                own()
            if self._database and isinstance(self.store, _postgres_store_class()):
                from langgraph.checkpoint.postgres import _internal as pg_internal

                from poolsplit_integrations import _pgengine
                with pg_internal.get_connection(cast(Any, self.store).conn) as conn:
                    _pgengine.setup_entries(conn)
                self._in_database_ok = None

    async def asetup(self) -> None:
        """The async twin of :meth:`setup`, for an ``AsyncPostgresStore`` (in its event loop).

        Awaits the wrapped store's own setup (LangGraph's migrations), then
        installs ``poolsplit_v1`` through the store's async connection, as
        :meth:`setup` does: from then on the database scores the store's
        awaited pool-split reads. Over a store whose setup is synchronous it
        runs :meth:`setup` in a worker thread.
        """
        own = getattr(self.store, "setup", None)
        if own is None or not inspect.iscoroutinefunction(own):
            await asyncio.to_thread(self.setup)
            return
        with self._setting_up():
            await own()
            from langgraph.store.postgres import AsyncPostgresStore
            if isinstance(self.store, AsyncPostgresStore):
                from poolsplit_integrations import _pgengine
                async with _pgengine.aheld(self.store) as conn:
                    await _pgengine.asetup_entries(conn)
                self._in_database_ok = None

    def __getattr__(self, name: str) -> Any:
        # Only called for names this object lacks: the wrapped store's own API.
        if name.startswith("_") or name == "store":
            raise AttributeError(name)
        return getattr(self.store, name)

    # ----------------------------------------------------------------------
    # The BaseStore API: the wrapped store answers; writes also reach the index
    # ----------------------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run ``ops`` on the wrapped store, then bring the index up to date with its writes.

        Every ``PutOp`` is checked before any op runs (one error naming each
        problem: nothing is written); a ``PutOp`` whose value is None deletes.
        """
        listed = list(ops)
        self._check_ops(listed)
        written = _put_targets(listed)
        with self._writing(written):
            results = self.store.batch(listed)
        self._written(written)
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """The async twin of :meth:`batch`."""
        listed = list(ops)
        self._check_ops(listed)
        written = _put_targets(listed)
        with self._writing(written):
            results = await self.store.abatch(listed)
        await self._awritten(written)
        return results

    def get(self, namespace: tuple[str, ...], key: str, *,
            refresh_ttl: bool | None = None) -> Item | None:
        """The wrapped store's ``get``."""
        _refuse_str_namespace(namespace)
        with _naming_setup():
            return self.store.get(namespace, key, refresh_ttl=refresh_ttl)

    def search(self, namespace_prefix: tuple[str, ...], /, *, query: str | None = None,
               filter: dict[str, Any] | None = None, limit: int = 10, offset: int = 0,
               refresh_ttl: bool | None = None) -> list[SearchItem]:
        """The wrapped store's ``search``."""
        _refuse_str_namespace(namespace_prefix, "namespace_prefix")
        with _naming_setup():
            return self.store.search(namespace_prefix, query=query, filter=filter, limit=limit,
                                     offset=offset, refresh_ttl=refresh_ttl)

    def put(self, namespace: tuple[str, ...], key: str, value: Mapping[str, Any] | None,
            index: Literal[False] | list[str] | None = None, *,
            ttl: float | NotProvided | None = NOT_PROVIDED) -> None:
        """The wrapped store's ``put``; the index has the item when it returns.

        ``value=None`` deletes the item, as ``BaseStore`` defines (the index
        drops it); any other value is checked first (see the class docstring).
        A namespace must be a tuple: a bare str is refused, as on every call.
        """
        _refuse_str_namespace(namespace)
        if value is not None:
            self._check_writes([(namespace, key, value, "put()")])
        # BaseStore.put makes a PutOp of any value, and a PutOp of None deletes.
        written = [(tuple(namespace), str(key))]
        with self._writing(written):
            self.store.put(namespace, key, value, index, ttl=ttl)  # type: ignore[arg-type]
        self._written(written)

    def delete(self, namespace: tuple[str, ...], key: str) -> None:
        """The wrapped store's ``delete``; the index drops the item when it returns."""
        _refuse_str_namespace(namespace)
        written = [(tuple(namespace), str(key))]
        with self._writing(written):
            self.store.delete(namespace, key)
        self._written(written)

    def list_namespaces(self, *, prefix: NamespacePath | None = None,
                        suffix: NamespacePath | None = None, max_depth: int | None = None,
                        limit: int = 100, offset: int = 0) -> list[tuple[str, ...]]:
        """The wrapped store's ``list_namespaces``."""
        _refuse_str_namespace(prefix, "prefix")
        _refuse_str_namespace(suffix, "suffix")
        with _naming_setup():
            return self.store.list_namespaces(prefix=prefix, suffix=suffix, max_depth=max_depth,
                                              limit=limit, offset=offset)

    async def aget(self, namespace: tuple[str, ...], key: str, *,
                   refresh_ttl: bool | None = None) -> Item | None:
        """The wrapped store's ``aget``."""
        _refuse_str_namespace(namespace)
        with _naming_setup():
            return await self.store.aget(namespace, key, refresh_ttl=refresh_ttl)

    async def asearch(self, namespace_prefix: tuple[str, ...], /, *, query: str | None = None,
                      filter: dict[str, Any] | None = None, limit: int = 10, offset: int = 0,
                      refresh_ttl: bool | None = None) -> list[SearchItem]:
        """The wrapped store's ``asearch``."""
        _refuse_str_namespace(namespace_prefix, "namespace_prefix")
        with _naming_setup():
            return await self.store.asearch(namespace_prefix, query=query, filter=filter,
                                            limit=limit, offset=offset, refresh_ttl=refresh_ttl)

    async def aput(self, namespace: tuple[str, ...], key: str, value: Mapping[str, Any] | None,
                   index: Literal[False] | list[str] | None = None, *,
                   ttl: float | NotProvided | None = NOT_PROVIDED) -> None:
        """The wrapped store's ``aput``; the index has the item when it returns (None deletes)."""
        _refuse_str_namespace(namespace)
        if value is not None:
            self._check_writes([(namespace, key, value, "aput()")])
        written = [(tuple(namespace), str(key))]
        with self._writing(written):
            await self.store.aput(namespace, key, value, index, ttl=ttl)  # type: ignore[arg-type]
        await self._awritten(written)

    async def adelete(self, namespace: tuple[str, ...], key: str) -> None:
        """The wrapped store's ``adelete``; the index drops the item when it returns."""
        _refuse_str_namespace(namespace)
        written = [(tuple(namespace), str(key))]
        with self._writing(written):
            await self.store.adelete(namespace, key)
        await self._awritten(written)

    async def alist_namespaces(self, *, prefix: NamespacePath | None = None,
                               suffix: NamespacePath | None = None,
                               max_depth: int | None = None, limit: int = 100,
                               offset: int = 0) -> list[tuple[str, ...]]:
        """The wrapped store's ``alist_namespaces``."""
        _refuse_str_namespace(prefix, "prefix")
        _refuse_str_namespace(suffix, "suffix")
        with _naming_setup():
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
        filter: Mapping[str, Any] | None = None,
        now: datetime | None = None,
        max_always_tokens: int | None = None,
        always_pool: bool = True,
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

        Every item whose namespace starts with ``namespace`` takes part,
        except the skipped ones (class docstring). The answer is the core's
        ``retrieve_pools`` over those items mapped to entries (:meth:`entries`
        lists them, in the order the core saw them), with corrections read
        from the store for this call. Returns the store's ``Item`` objects
        (``.value``, ``.key``, ``.namespace``).

        ``filter`` keeps only the items whose value holds each of its keys
        with an equal value, corrections included, before pool-split runs (it
        only narrows); it must name a user when the namespace's items carry a
        ``user_id`` (the class docstring's tenancy rule). ``always_pool``
        (default True) loads every active correction no pool's types take
        under one more pool, ``"always"`` (present only when it loads one).
        """
        decided, items = self._decide(namespace, pools, context, now, max_always_tokens,
                                      filter=filter, always_pool=always_pool)
        return {name: [items[d.index] for d in picked] for name, picked in decided.items()}

    def explain_pools(
        self,
        namespace: tuple[str, ...],
        pools: Sequence[Pool],
        context: Mapping[str, Any] | None = None,
        *,
        filter: Mapping[str, Any] | None = None,
        now: datetime | None = None,
        max_always_tokens: int | None = None,
        always_pool: bool = True,
    ) -> StoreExplanation:
        """Why each item under ``namespace`` was or was not loaded, how fresh the index was.

        Same arguments, filter and refusals as :meth:`retrieve_pools`; the
        items skipped for a problem are in :attr:`StoreExplanation.skipped`.
        """
        return self._explain(namespace, pools, context, now, max_always_tokens,
                             filter=filter, always_pool=always_pool)

    async def aretrieve_pools(
        self,
        namespace: tuple[str, ...],
        pools: Sequence[Pool],
        context: Mapping[str, Any] | None = None,
        *,
        filter: Mapping[str, Any] | None = None,
        now: datetime | None = None,
        max_always_tokens: int | None = None,
        always_pool: bool = True,
    ) -> dict[str, list[Item]]:
        """The async twin of :meth:`retrieve_pools` (its read does not block the event loop)."""
        decided, items = await self._adecide(namespace, pools, context, now, max_always_tokens,
                                             filter=filter, always_pool=always_pool)
        return {name: [items[d.index] for d in picked] for name, picked in decided.items()}

    async def aexplain_pools(
        self,
        namespace: tuple[str, ...],
        pools: Sequence[Pool],
        context: Mapping[str, Any] | None = None,
        *,
        filter: Mapping[str, Any] | None = None,
        now: datetime | None = None,
        max_always_tokens: int | None = None,
        always_pool: bool = True,
    ) -> StoreExplanation:
        """The async twin of :meth:`explain_pools`."""
        return await self._aexplain(namespace, pools, context, now, max_always_tokens,
                                    filter=filter, always_pool=always_pool)

    def entries(self, namespace: tuple[str, ...]) -> list[Mapping[str, Any]]:
        """The entries a pool-split read of ``namespace`` would give the core now, in order.

        The indexed items other than corrections, then the corrections as the
        store holds them this moment; skipped items are not among them. No
        filter applies (this lists every user's entries: it is for checking,
        as the store's own ``search`` is).
        """
        prefix = _check_namespace(namespace)
        if self._database:
            return list(self._snapshot(prefix, self._read_database(prefix)).live)
        with self._lock:
            read = self._read(prefix)
            keep = _not_replaced_by(read.live, read.refused)
            return [*(entry for entry in read.view.prepared.entries if keep(entry)), *read.live]

    def refresh(self, namespace: tuple[str, ...] | None = None) -> None:
        """Read ``namespace`` (default: every namespace read so far) in full from the store now.

        Afterwards the index holds exactly what the store holds: new and
        changed items in, deleted ones out (items with a problem held out).
        Over a database store there is no index: every read is fresh, and this
        does nothing.
        """
        if namespace is not None:
            _check_namespace(namespace)
        if self._database:
            return
        with self._lock:
            prefixes = list(self._views) if namespace is None else [_check_namespace(namespace)]
            for prefix in prefixes:
                view = self._views.get(prefix)
                if view is None:
                    self._load(prefix)
                    self._evict_surplus()
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
        *,
        filter: Mapping[str, Any] | None = None,
        bound: str | None = None,
        always_pool: bool = True,
    ) -> tuple[dict[str, list[Decision]], dict[int, Item]]:
        """The loaded Decisions per pool, and each one's Item by the Decision's index.

        ``bound``: the user a namespace template named (see :meth:`_tenancy`).
        """
        with tracing.read("PoolSplitStore", context, filter):
            try:
                with self._calling(namespace, pools, max_always_tokens, filter, bound,
                                   scoring=(context, now)) as call:
                    return self._decided(call, context, now, always_pool)
            except self._stale_readings() as exc:
                self._read_whole_instead(namespace, exc)
            with self._calling(namespace, pools, max_always_tokens, filter, bound,
                               whole=True) as call:
                return self._decided(call, context, now, always_pool)

    def _explain(
        self,
        namespace: tuple[str, ...],
        pools: Sequence[Pool],
        context: Mapping[str, Any] | None,
        now: datetime | None,
        max_always_tokens: int | None,
        *,
        filter: Mapping[str, Any] | None = None,
        bound: str | None = None,
        always_pool: bool = True,
    ) -> StoreExplanation:
        """:meth:`explain_pools`, for a namespace whose user ``bound`` names (:meth:`_tenancy`)."""
        with tracing.read("PoolSplitStore", context, filter), self._calling(
                namespace, pools, max_always_tokens, filter, bound, whole=True) as call:
            return self._explained(call, context, now, always_pool)

    async def _aexplain(
        self,
        namespace: tuple[str, ...],
        pools: Sequence[Pool],
        context: Mapping[str, Any] | None,
        now: datetime | None,
        max_always_tokens: int | None,
        *,
        filter: Mapping[str, Any] | None = None,
        bound: str | None = None,
        always_pool: bool = True,
    ) -> StoreExplanation:
        """The async twin of :meth:`_explain`."""
        if not self._database:
            return await asyncio.to_thread(
                self._explain, namespace, pools, context, now, max_always_tokens,
                filter=filter, bound=bound, always_pool=always_pool)
        with tracing.read("PoolSplitStore", context, filter):
            async with self._acalling(namespace, pools, max_always_tokens, filter, bound,
                                      whole=True) as call:
                return self._explained(call, context, now, always_pool)

    def _stale_readings(self) -> type[Exception] | tuple[()]:
        """What a database-scored read raises on meeting a reading that is not its row's."""
        if not self._database:
            return ()
        from poolsplit_integrations._postgres import StaleReadings
        return StaleReadings

    def _read_whole_instead(self, namespace: tuple[str, ...], exc: Exception) -> None:
        """Say that a read is answered from the rows, its readings being behind them."""
        logger.warning("PoolSplitStore: %s; the read of %r is answered from its rows",
                       exc, namespace)

    async def _adecide(
        self,
        namespace: tuple[str, ...],
        pools: Sequence[Pool],
        context: Mapping[str, Any] | None,
        now: datetime | None,
        max_always_tokens: int | None,
        *,
        filter: Mapping[str, Any] | None = None,
        bound: str | None = None,
        always_pool: bool = True,
    ) -> tuple[dict[str, list[Decision]], dict[int, Item]]:
        """The async twin of :meth:`_decide`."""
        if not self._database:
            return await asyncio.to_thread(
                self._decide, namespace, pools, context, now, max_always_tokens,
                filter=filter, bound=bound, always_pool=always_pool)
        with tracing.read("PoolSplitStore", context, filter):
            try:
                async with self._acalling(namespace, pools, max_always_tokens, filter, bound,
                                          scoring=(context, now)) as call:
                    if call.read.view.engine == "database":
                        # the fill runs in a worker thread; its pages are read in this loop
                        return await asyncio.to_thread(self._decided, call, context, now,
                                                       always_pool)
                    return self._decided(call, context, now, always_pool)
            except self._stale_readings() as exc:
                self._read_whole_instead(namespace, exc)
            async with self._acalling(namespace, pools, max_always_tokens, filter, bound,
                                      whole=True) as call:
                return self._decided(call, context, now, always_pool)

    def _decided(self, call: _Call, context: Mapping[str, Any] | None, now: datetime | None,
                 always_pool: bool) -> tuple[dict[str, list[Decision]], dict[int, Item]]:
        """The core's loaded Decisions for a bound call, and each one's Item by index."""
        span = tracing.current()
        span.engine(call.read.view.engine)
        span.filtered(call.core["where"], call.bound)
        if call.read.view.engine == "database":
            got = self._decided_in_database(call, context, now, always_pool)
            span.loaded(len(got[1]), None)  # (no ledger: that would be a second database read)
            return got

        def run(call: _Call) -> dict[str, list[Decision]]:
            return call.read.view.prepared.decide(call.pools, context, now=now,
                                                  always_pool=always_pool, **call.core)

        call, decided = self._core(call, run)
        read, view = call.read, call.read.view
        stored = len(view.prepared)
        items = {d.index: view.items[d.entry["id"]] if d.index < stored
                 else read.live_items[d.index - stored]
                 for picked in decided.values() for d in picked}
        span.loaded(sum(map(len, decided.values())), lambda: view.prepared.explain_pools(
            call.pools, context, now=now, always_pool=always_pool, **call.core))
        return decided, items

    def _decided_in_database(self, call: _Call, context: Mapping[str, Any] | None,
                             now: datetime | None, always_pool: bool
                             ) -> tuple[dict[str, list[Decision]], dict[int, Item]]:
        """:meth:`_decided` with the database scoring the rows it reads exactly."""
        from poolsplit_integrations import _pgengine

        engines: list[_pgengine.DatabaseEngine] = []

        def run(call: _Call) -> dict[str, list[Decision]]:
            where, include = call.core["where"], call.core["include"]

            def keep(entry: Mapping[str, Any]) -> bool:
                return ((include is None or bool(include(entry)))
                        and (where is None or matches(entry, where)))

            read = call.read
            kept = [(item, entry) for item, entry in zip(read.live_items, read.live)
                    if keep(entry)]
            # Without a where or a bound user, include drops only corrections and the
            # entries a row read whole replaces: it keeps every row the database scores,
            # and the engine may read their store rows after the fill, all at once.
            narrows = None if where is None and call.bound is None else keep
            view = cast(_Unindexed, read.view)
            engine = _pgengine.DatabaseEngine(
                view.conn, self.store, call.prefix, [item for item, _ in kept],
                [entry for _, entry in kept], context, now, narrows, fetch=view.fetch,
                scored=view.scored)
            engines.append(engine)
            with self._reading(call.prefix):
                return _pgengine.decide(engine, call.pools, always_pool,
                                        call.core["max_always_tokens"])

        call, decided = self._core(call, run)
        items = engines[-1].items
        return decided, {d.index: items[d.index] for picked in decided.values() for d in picked}

    def _explained(self, call: _Call, context: Mapping[str, Any] | None, now: datetime | None,
                   always_pool: bool) -> StoreExplanation:
        """The core's explanation of a bound call, with how fresh its read was."""
        def run(call: _Call) -> Explanation:
            return call.read.view.prepared.explain_pools(call.pools, context, now=now,
                                                         always_pool=always_pool, **call.core)

        call, got = self._core(call, run)
        read = call.read
        span = tracing.current()  # (an explain is a read too: its ledger is the explanation)
        span.engine(read.view.engine)
        span.filtered(call.core["where"], call.bound)
        span.loaded(sum(map(len, got.loaded().values())), lambda: got)
        # (a database read is the database at the call: nothing older answered)
        staleness = 0.0 if read.view.engine == "snapshot" else self.clock() - read.view.polled
        corrections = sum(entry.get("scope") == "always" for entry in read.live)
        return StoreExplanation(got, call.prefix, staleness, self.refresh_interval,
                                self.reconcile_interval, corrections,
                                read.skipped(call.listed), engine=read.view.engine,
                                replica_lag=read.view.replica_lag, read_from=read.view.read_from)

    def _core(self, call: _Call, run: Callable[[_Call], _T]) -> tuple[_Call, _T]:
        """``run(call)``; over a database read, an entry the core refuses is held out.

        A database read checks items with :mod:`poolsplit_core.checks` only
        (cheap); should the core refuse one, each is tried alone, the refused
        ones are skipped (logged, listed) and the call runs again.
        """
        try:
            return call, run(call)
        except (TypeError, ValueError):
            if not isinstance(call.read.view, _Unindexed):
                raise
            read = call.read
            kept = [(item, entry) for item, entry in zip(read.live_items, read.live)
                    if not self._refused(item, entry, call.prefix, read.refused)]
            if len(kept) == len(read.live):
                raise  # not an entry's fault
        tried = _Read(read.view, [item for item, _ in kept], [entry for _, entry in kept],
                      read.refused)
        call = self._bind(call.prefix, call.pools, call.core["max_always_tokens"], call.asked,
                          call.bound, tried)
        return call, run(call)

    def _check_alone(self, entry: Mapping[str, Any]) -> None:
        """Raise what the core raises for ``entry`` alone (TypeError, ValueError), if anything.

        (A store of the one entry, on the stdlib engine: a numpy index of one
        entry costs more to build and refuses the same entries.)
        """
        PreparedStore([entry], token_counter=self.token_counter, is_active=self.is_active,
                      engine="python")

    def _refused(self, item: Item, entry: dict[str, Any], prefix: tuple[str, ...],
                 refused: dict[Any, _Skipped]) -> bool:
        """Whether the core refuses ``entry`` alone; if so it joins ``refused`` (and is logged)."""
        try:
            self._check_alone(entry)
        except (TypeError, ValueError) as exc:
            skipped = _Skipped(item, entry, (f"{_item_label(item)}: {exc}",))
            refused[entry["id"]] = skipped
            self._report(prefix, skipped)
            return True
        return False

    @contextmanager
    def _calling(self, namespace: tuple[str, ...], pools: Sequence[Pool],
                 max_always_tokens: Any, filter: Any, bound: str | None,
                 whole: bool = False, scoring: _Scoring = (None, None)) -> Iterator[_Call]:
        """One pool-split read: its arguments checked, then, under the lock, read and bound.

        The body runs the core under the lock too; a TypeError or ValueError
        raised in it, or by the checks, names the namespace. ``whole``: every
        item is read (explain_pools accounts for each), never scored in the
        database. ``scoring``: the call's context and ``now``, for a database
        that scores a small namespace in the statement that reads it.
        """
        prefix = _check_namespace(namespace)
        with _naming(prefix):
            checked = check_pools_arg(pools)
            limit = check_max_always_tokens(max_always_tokens)
            asked = self._asked(prefix, filter, bound)
            if self._database and not whole and self._scores_in_database(prefix):
                with self._in_database(prefix, scoring) as read:
                    yield self._bind(prefix, checked, limit, asked, bound, read)
                return
            if self._database:
                read = self._snapshot(prefix, self._read_database(prefix))
                yield self._bind(prefix, checked, limit, asked, bound, read)
                return
            with self._lock:
                yield self._bind(prefix, checked, limit, asked, bound, self._read(prefix))

    def _scores_in_database(self, prefix: tuple[str, ...] = ()) -> bool:
        """Whether the database can score this store's reads (:meth:`setup` has run on it).

        Only for the default token counter and activity test, and a sync
        store without a shared pipeline (an async one: :meth:`_ascores_in_database`);
        asked of the database once, or again a minute after it said no.
        """
        from langgraph.store.postgres import PostgresStore

        from poolsplit_integrations import _pgengine
        known = self._scoring_known(PostgresStore)
        if known is not None:
            return known
        with self._reading(prefix), _pgengine.snapshot(self.store) as conn:
            ready = _pgengine.entries_kept(conn)
        self._in_database_ok = (ready, self.clock())
        return ready

    async def _ascores_in_database(self, prefix: tuple[str, ...] = ()) -> bool:
        """The async twin of :meth:`_scores_in_database`, for an ``AsyncPostgresStore``."""
        from langgraph.store.postgres import AsyncPostgresStore

        from poolsplit_integrations import _pgengine
        known = self._scoring_known(AsyncPostgresStore)
        if known is not None:
            return known
        with self._reading(prefix):
            async with _pgengine.asnapshot(self.store) as conn:
                ready = await _pgengine.aentries_kept(conn)
        self._in_database_ok = (ready, self.clock())
        return ready

    def _scoring_known(self, kind: type) -> bool | None:
        """Whether reads of a ``kind`` store are scored in the database; None: ask it."""
        if not isinstance(self.store, kind):
            return False
        if self._in_database_ok is not None:
            ready, asked = self._in_database_ok
            if ready or self.clock() - asked < 60.0:
                return ready
        # (a store's own deserializer may change values the SQL readings read as stored)
        if not (self.score_in_database and cast(Any, self.store).pipe is None
                and cast(Any, self.store)._deserializer is None
                and self.token_counter is default_token_counter
                and self.is_active is default_is_active):
            self._in_database_ok = (False, self.clock())
            return False
        return None

    @contextmanager
    def _in_database(self, prefix: tuple[str, ...], scoring: _Scoring) -> Iterator[_Read]:
        """One snapshot of the database: the rows read whole, the connection to score the rest.

        A namespace with fewer than ``SCORED_FROM`` rows to score is read and
        scored for ``scoring`` in one statement (its own snapshot): one round
        trip. A larger one is read again in a REPEATABLE READ transaction that
        the scoring shares.
        With a standby that may answer (``_standby.StandbyReads.snapshot``),
        both run in the standby's snapshot instead.
        """
        from poolsplit_integrations import _pgengine

        with ExitStack() as stack:  # the transaction ends when the call's body does
            standby = (None if self._standby is None
                       else stack.enter_context(self._standby.snapshot(prefix)))
            conn = None if standby is None else standby.conn
            with self._reading(prefix):
                small = _pgengine.read_if_small(self.store, prefix, conn, scoring)
            if small is not None:
                yield self._scored_read(prefix, small.items, standby, carries=small.carries,
                                        scored=small.scored)
                return
            with self._reading(prefix):
                if conn is None:
                    conn = stack.enter_context(_pgengine.snapshot(self.store))
                items, carries = _pgengine.read_rows(conn, self.store, prefix)
            yield self._scored_read(prefix, items, standby, conn=conn, carries=carries)

    @asynccontextmanager
    async def _ain_database(self, prefix: tuple[str, ...], scoring: _Scoring
                            ) -> AsyncIterator[_Read]:
        """The async twin of :meth:`_in_database` (an ``AsyncPostgresStore``, in its loop).

        A large namespace's transaction holds one connection of the store for
        the whole call; the read's ``fetch`` reads its pages there, for a fill
        run in a worker thread.
        """
        from poolsplit_integrations import _pgengine

        async with AsyncExitStack() as stack:  # the transaction ends when the call's body does
            standby = (None if self._standby is None
                       else await stack.enter_async_context(self._standby.asnapshot(prefix)))
            conn = None if standby is None else standby.conn
            with self._reading(prefix):
                small = await _pgengine.aread_if_small(self.store, prefix, conn, scoring)
            if small is not None:
                yield self._scored_read(prefix, small.items, standby, carries=small.carries,
                                        scored=small.scored)
                return
            with self._reading(prefix):
                if conn is None:
                    conn = await stack.enter_async_context(_pgengine.asnapshot(self.store))
                items, carries = await _pgengine.aread_rows(conn, self.store, prefix)
            pages = _pgengine.LoopPages(conn, asyncio.get_running_loop())
            stack.callback(pages.close)  # (before the transaction ends)
            yield self._scored_read(prefix, items, standby, conn=conn, carries=carries,
                                    fetch=pages)

    def _scored_read(self, prefix: tuple[str, ...], items: list[SearchItem],
                     standby: Any, **found: Any) -> _Read:
        """A read the database scores, as :meth:`_snapshot` makes it (``standby``: it answered)."""
        return self._snapshot(prefix, items if standby is None else standby.rows(items),
                              engine="database", **found)

    @asynccontextmanager
    async def _acalling(self, namespace: tuple[str, ...], pools: Sequence[Pool],
                        max_always_tokens: Any, filter: Any, bound: str | None,
                        whole: bool = False, scoring: _Scoring = (None, None)
                        ) -> AsyncIterator[_Call]:
        """The async twin of :meth:`_calling`, for a database store (read in the event loop)."""
        prefix = _check_namespace(namespace)
        with _naming(prefix):
            checked = check_pools_arg(pools)
            limit = check_max_always_tokens(max_always_tokens)
            asked = self._asked(prefix, filter, bound)
            if not whole and await self._ascores_in_database(prefix):
                async with self._ain_database(prefix, scoring) as scored:
                    yield self._bind(prefix, checked, limit, asked, bound, scored)
                return
            read = self._snapshot(prefix, await self._aread_database(prefix))
            yield self._bind(prefix, checked, limit, asked, bound, read)

    def _bind(self, prefix: tuple[str, ...], pools: list[Pool], limit: int | None,
              asked: dict[str, Any] | None, bound: str | None, read: _Read) -> _Call:
        """A read bound to its tenant (:meth:`_tenancy`): the core's keywords for this call."""
        where, include, listed = self._tenancy(prefix, read, asked, bound)
        return _Call(prefix, pools, read, listed, {
            "extra": read.live, "where": where, "include": include,
            "max_always_tokens": limit}, asked, bound)

    def _asked(self, prefix: tuple[str, ...], filter: Any,
               bound: str | None) -> dict[str, Any] | None:
        """The call's filter, checked before anything is read.

        A ``user_id`` in it must name a user, and the user the namespace
        template named if there is one: a filter only narrows.
        """
        # the adapters' one rule (_tenancy.narrow): checked, and it can only narrow
        return narrow(None if bound is None else {USER_KEY: bound}, filter,
                      owner=f"namespace {prefix!r}")

    def _tenancy(
        self, prefix: tuple[str, ...], read: _Read, asked: dict[str, Any] | None,
        bound: str | None,
    ) -> tuple[dict[str, Any] | None, Callable[[Mapping[str, Any]], bool],
               Callable[[Mapping[str, Any]], bool] | None]:
        """Fail closed, then the call's ``where``, ``include`` and skipped-item test.

        The one rule: the keys a call's filter must hold are
        ``require_filter_keys`` when given, else ``("user_id",)`` when any item
        read carries one. ``bound`` (a namespace template's user) names the
        user: items whose ``user_id`` is absent, None or ``bound`` are theirs.
        """
        required = self.require_filter_keys
        if required is None:
            required = (USER_KEY,) if read.carries_user() else ()
        where = dict(asked or {})
        if bound is not None:
            where.pop(USER_KEY, None)  # the template's user, already checked against it
        elif USER_KEY in required and USER_KEY not in where:
            raise UnboundTenant(
                f"namespace {prefix!r}: its items carry {USER_KEY!r} and this read names no"
                f" user: pass filter={{'{USER_KEY}': '<user>'}}, or read it through a"
                f" PoolSplitStoreRetriever whose namespace template holds '{{{USER_KEY}}}';"
                " build the store with require_filter_keys=() to serve a shared namespace to"
                " every caller"
            )
        refuse_unbound(where, [key for key in required if key != USER_KEY or bound is None],
                       owner=f"a pool-split read of namespace {prefix!r}")
        fresh = _not_replaced_by(read.live, read.refused)
        if bound is None:
            include = fresh
        else:
            def include(entry: Mapping[str, Any]) -> bool:
                return fresh(entry) and entry.get(USER_KEY) in (None, bound)

        def keep(entry: Mapping[str, Any]) -> bool:  # a skipped item is listed to its user
            return (matches(entry, where)
                    and (bound is None or entry.get(USER_KEY) in (None, bound)))

        listed = None if not where and bound is None else keep
        return where or None, include, listed

    def _read(self, prefix: tuple[str, ...]) -> _Read:
        """The view, caught up as the intervals ask, and the store's corrections now.

        A correction with a problem is held out (and logged) like any item;
        one unchanged since the index read it is not checked again.
        """
        view = self._view(prefix)
        live_items: list[SearchItem] = []
        live: list[dict[str, Any]] = []
        refused: dict[Any, _Skipped] = {}
        for item in self._search_all(prefix, {"scope": "always"}):
            entry_id = item_entry_id(item.namespace, item.key, prefix)
            before = view.skipped.get(entry_id)
            entry: dict[str, Any] | None
            problems: tuple[str, ...]
            if _unchanged(view.items.get(entry_id), item):
                entry, problems = item_to_entry(item.namespace, item.key, item.value,
                                                created_at=item.created_at,
                                                read_from=prefix), ()
            elif before is not None and _unchanged(before.item, item):
                entry, problems = before.entry, before.problems
            else:
                entry, problems = self._problems(item, prefix, trial=True)
                if problems:
                    self._report(prefix, _Skipped(item, entry, problems))
            if entry is None or problems:
                refused[entry_id] = _Skipped(item, entry, problems)
            else:
                live_items.append(item)
                live.append(entry)
        return _Read(view, live_items, live, refused)

    def _read_database(self, prefix: tuple[str, ...]) -> list[SearchItem]:
        """Every item under ``prefix``, read from the database in one statement."""
        from poolsplit_integrations._postgres import read_namespace
        if self._standby is not None:  # the hot standby, unless it could hide a write
            got: list[SearchItem] | None = self._standby.read(prefix)
            if got is not None:
                return got
        with self._reading(prefix):
            return read_namespace(self.store, prefix)

    async def _aread_database(self, prefix: tuple[str, ...]) -> list[SearchItem]:
        from poolsplit_integrations._postgres import aread_namespace
        if self._standby is not None:
            got: list[SearchItem] | None = await self._standby.aread(prefix)
            if got is not None:
                return got
        with self._reading(prefix):
            return await aread_namespace(self.store, prefix)

    @contextmanager
    def _setting_up(self) -> Iterator[None]:
        """Re-raise a failed setup as an error that says it was the setup, and what to do.

        A statement the server cancelled (its ``statement_timeout``) is a
        TimeoutError; a lost or refused connection a ConnectionError.
        """
        kind = type(self.store).__name__
        try:
            yield
        except Exception as exc:
            if getattr(exc, "sqlstate", None) == _CANCELLED:
                raise TimeoutError(
                    f"PoolSplitStore.setup() of its {kind} was cancelled by the server"
                    " (statement_timeout): a first setup, or the first after an upgrade,"
                    " gives every row of a large store its reading; run it once without a"
                    " timeout (poolsplit-postgres setup DSN, or from_conn_string(...,"
                    " statement_timeout=None)), after which a setup is a few statements:"
                    f" {_one_line(exc)}") from exc
            if not isinstance(exc, OSError) and _is_connection_error(exc):
                raise ConnectionError(f"PoolSplitStore.setup() could not reach the database"
                                      f" of its {kind}: {_one_line(exc)}") from exc
            raise

    @contextmanager
    def _reading(self, prefix: tuple[str, ...]) -> Iterator[None]:
        """Re-raise a failed database read as :meth:`_lost` names it."""
        try:
            yield
        except Exception as exc:
            lost = self._lost(prefix, exc)
            if lost is exc:
                raise
            raise lost from exc

    def _lost(self, prefix: tuple[str, ...], exc: BaseException) -> BaseException:
        """A failed read as an error naming the namespace.

        A lost or refused connection is a ConnectionError, a statement the
        server cancelled (its ``statement_timeout``) a TimeoutError; any other
        error is ``exc`` itself.
        """
        where = f"namespace {prefix!r} from its {type(self.store).__name__}"
        named = _setup_named(exc)
        if named is not None:
            return named
        if getattr(exc, "sqlstate", None) == _CANCELLED:
            return TimeoutError(f"PoolSplitStore's read of {where} was cancelled by the server"
                                f" (statement_timeout): {exc}")
        if not _is_connection_error(exc):
            return exc
        return ConnectionError(f"PoolSplitStore could not read {where}: {exc}")

    def _snapshot(self, prefix: tuple[str, ...], items: list[SearchItem], *,
                  engine: str = "snapshot", conn: Any = None, carries: bool = False,
                  fetch: Any = None, scored: list[Any] | None = None) -> _Read:
        """A database read as the call's entries: every item, those with a problem held out.

        The verdict on an item (its entry, its problems) is kept while its
        ``updated_at`` and value stay the same (:data:`VERDICTS_KEPT` at most).
        """
        live_items: list[SearchItem] = []
        live: list[dict[str, Any]] = []
        refused: dict[Any, _Skipped] = {}
        verdicts = self._verdicts
        for item in items:
            name = (tuple(item.namespace), item.key)
            with self._lock:
                kept = verdicts.get(name)
                if kept is not None:
                    verdicts.move_to_end(name)
            if kept is not None and _unchanged(kept[0], item):
                # the same value: the same entry, but a new dict (the core sees it per call)
                entry, problems = (None if not kept[1] else
                                   item_to_entry(item.namespace, item.key, item.value,
                                                 created_at=item.created_at,
                                                 read_from=prefix)), kept[2]
            else:
                entry, problems = self._problems(item, prefix)
                with self._lock:
                    verdicts[name] = (item, entry is not None, problems)
                    if len(verdicts) > VERDICTS_KEPT:
                        verdicts.popitem(last=False)
            if entry is None or problems:
                skipped = _Skipped(item, entry, problems)
                refused[item_entry_id(item.namespace, item.key, prefix)] = skipped
                self._report(prefix, skipped)
            else:
                live_items.append(item)
                live.append(entry)
        view = _Unindexed(PreparedStore(token_counter=self.token_counter,  # (empty: no index
                                        is_active=self.is_active, engine="python"),  # to build)
                          self.clock(),
                          users=frozenset(("(a row the database read)",)) if carries
                          else frozenset(), engine=engine, conn=conn, fetch=fetch,
                          scored=scored)
        if getattr(items, "read_from", "primary") != "primary":  # a hot standby answered
            view = view._replace(read_from=items.read_from,  # type: ignore[attr-defined]
                                 replica_lag=items.replica_lag)  # type: ignore[attr-defined]
        return _Read(view, live_items, live, refused)  # type: ignore[arg-type]

    def _problems(self, item: Item, prefix: tuple[str, ...], *, trial: bool = False
                  ) -> tuple[dict[str, Any] | None, tuple[str, ...]]:
        """An item read under ``prefix`` as an entry, and what keeps it out of pool-split reads.

        A value that is not a mapping (no entry), then (``strict``) the
        problems :mod:`poolsplit_core.checks` finds; with ``trial``, also the
        core's refusal (otherwise found when the entry is indexed).
        """
        try:
            entry = item_to_entry(item.namespace, item.key, item.value,
                                  created_at=item.created_at, read_from=prefix)
        except TypeError as exc:
            return None, (str(exc),)
        problems = _strict_problems(entry, lambda: _item_label(item)) if self.strict else []
        if trial and not problems:
            try:
                self._check_alone(entry)
            except (TypeError, ValueError) as exc:
                problems = [f"{_item_label(item)}: {exc}"]
        return entry, tuple(problems)

    def _report(self, prefix: tuple[str, ...], skipped: _Skipped) -> None:
        """Log each problem of a skipped item once per (namespace, key, problem)."""
        item = skipped.item
        for problem in skipped.problems:
            seen = (tuple(item.namespace), item.key, problem)
            if seen in self._warned:
                continue
            if len(self._warned) >= WARNED_LIMIT:
                self._warned.clear()
            self._warned.add(seen)
            logger.warning("%s; PoolSplitStore skips it in pool-split reads of namespace %r"
                           " (fix or delete the item; every other item still loads)",
                           problem, prefix)

    def _search_all(self, prefix: tuple[str, ...],
                    filter: dict[str, Any] | None = None) -> list[SearchItem]:
        """Every item under ``prefix`` (matching ``filter``), in one ``search`` call.

        One call is one snapshot: paging would let a delete or an update by
        another writer between two pages shift rows, and a full read would
        then drop an item it skipped. Newest first where the store lists that
        way. A lost connection is a ConnectionError naming the namespace and
        the store.
        """
        return self._search(prefix, filter, FULL_READ_LIMIT, 0)

    def _search(self, prefix: tuple[str, ...], filter: dict[str, Any] | None, limit: int,
                offset: int) -> list[SearchItem]:
        with self._reading(prefix):
            return self.store.search(prefix, filter=filter, limit=limit, offset=offset,
                                     refresh_ttl=False)

    def _load(self, prefix: tuple[str, ...]) -> _View:
        """A cold read: every item under ``prefix``, prepared once; items with a problem held out.

        The core reads every entry in one build; only when it refuses one is
        each entry tried alone, to hold out just the refused ones. The view
        becomes the most recently read one.
        """
        self._contest(prefix)
        items = self._search_all(prefix)
        view = _View(self, prefix, PreparedStore(token_counter=self.token_counter,
                                                 is_active=self.is_active), self.clock())
        kept: list[tuple[Any, Item, dict[str, Any]]] = []
        for item in items:
            if view.watermark is None or item.updated_at > view.watermark:
                view.watermark = item.updated_at
            entry_id = item_entry_id(item.namespace, item.key, prefix)
            entry, problems = self._problems(item, prefix)
            if entry is None or problems:
                view.skip(entry_id, _Skipped(item, entry, problems))
            else:
                kept.append((entry_id, item, entry))
        try:
            view.prepared.rebuild([entry for _, _, entry in kept])
        except (TypeError, ValueError):  # the core refuses some entry: find each one
            tried = [(entry_id, held, entry, self._problems(held, prefix, trial=True)[1])
                     for entry_id, held, entry in kept]
            for entry_id, held, entry, problems in tried:
                if problems:
                    view.skip(entry_id, _Skipped(held, entry, problems))
            kept = [(entry_id, held, entry) for entry_id, held, entry, problems in tried
                    if not problems]
            view.prepared.rebuild([entry for _, _, entry in kept])
        for entry_id, held, indexed in kept:
            view.items[entry_id] = held
            if carries_user(indexed):
                view.users.add(entry_id)
        self._views[prefix] = view
        return view

    def _view(self, prefix: tuple[str, ...]) -> _View:
        """The view of ``prefix``, caught up, made the most recently read; others evicted.

        Views not read for ``evict_after`` seconds (this one too: it is then
        read cold), then the least recently read beyond ``max_namespaces``,
        are dropped.
        """
        now = self.clock()
        self._evict_idle(now)
        view = self._views.pop(prefix, None)
        if view is None:
            view = self._load(prefix)
        else:
            self._views[prefix] = view  # the most recently read: last
            self._catch_up(view)
        view.used = now
        self._evict_surplus()
        return view

    def _evict_idle(self, now: float) -> None:
        """Drop the views not read for ``evict_after`` seconds (the oldest are first)."""
        while self._views:
            prefix, view = next(iter(self._views.items()))
            if now - view.used < self.evict_after:
                return
            del self._views[prefix]

    def _evict_surplus(self) -> None:
        """Drop the least recently read views beyond ``max_namespaces``."""
        while len(self._views) > self.max_namespaces:
            del self._views[next(iter(self._views))]

    def _catch_up(self, view: _View) -> None:
        """Bring the view up to date as the intervals and its pending re-reads ask."""
        now = self.clock()
        if view.needs_full or now - view.reconciled >= self.reconcile_interval:
            self._reconcile(view)
        elif now - view.polled >= self.refresh_interval:
            self._poll(view)
        if view.recheck:
            self._reread(view)

    def _poll(self, view: _View) -> None:
        """Read newest-first down to the watermark, in one call of ``page_size`` items.

        That call is applied as a full read when it held the whole namespace.
        A store that turns out not to list newest-first, or more than
        ``page_size`` items newer than the watermark, is read in full instead
        (one call: a full read never pages).
        """
        started = self.clock()
        floor = None if view.watermark is None else view.watermark - POLL_MARGIN
        self._contest(view.prefix)
        page = self._search(view.prefix, None, self.page_size, 0)
        previous = None
        seen: list[SearchItem] = []
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
            self._apply_full(view, seen, started)  # the whole namespace, in one call
        else:
            self._reconcile(view)

    def _reconcile(self, view: _View) -> None:
        """A full read of the view's namespace (one ``search`` call), applied."""
        started = self.clock()
        self._contest(view.prefix)
        self._apply_full(view, self._search_all(view.prefix), started)

    def _apply_full(self, view: _View, items: list[SearchItem], started: float) -> None:
        """Make the view hold exactly ``items`` (a full read of its namespace)."""
        present = set()
        for item in items:
            view.apply(item)
            present.add(item_entry_id(tuple(item.namespace), item.key, view.prefix))
        for entry_id in [i for i in (*view.items, *view.skipped) if i not in present]:
            view.remove(entry_id)
        view.polled = view.reconciled = started
        view.needs_full = False
        view.recheck.clear()

    def _reread(self, view: _View) -> None:
        """Read the keys marked for a re-read again, and apply them as the store holds them."""
        targets = sorted(view.recheck)
        self._contest(view.prefix)
        with self._reading(view.prefix):
            got = self.store.batch([GetOp(ns, key, refresh_ttl=False) for ns, key in targets])
        for target, item in zip(targets, got):
            view.apply_read_back(target, item, ordered=True)
        view.recheck.clear()

    def _contest(self, prefix: tuple[str, ...]) -> None:
        """Mark each read-back in flight under ``prefix`` as overlapped by a read of it.

        Called under the lock by every read that changes a view (no read-back
        can start or end during it): such a read-back's result cannot be
        ordered against this read's, so it will not be applied, only re-read.
        """
        for target in self._in_flight:
            if target[0][:len(prefix)] == prefix:
                self._contested.add(target)

    def _check_writes(self, writes: Sequence[tuple[Any, Any, Any, str]]) -> None:
        """Refuse, before anything is written, a value the index could not hold or, strict, bad.

        ``writes`` are ``(namespace, key, value, where)``, ``where`` naming the
        call (``"put()"``, ``"batch() op 3"``). A value that is not a mapping
        is a TypeError, one the core refuses its TypeError or ValueError (the
        first such value); then, with ``strict``, one ValueError names every
        problem :mod:`poolsplit_core.checks` finds in any of them.
        """
        created = datetime.now(timezone.utc)
        problems: list[str] = []
        for namespace, key, value, where in writes:
            try:
                entry = item_to_entry(tuple(namespace), str(key), value, created_at=created)
            except TypeError as exc:
                raise TypeError(f"{where}: {exc}") from exc

            def label(where: str = where, namespace: Any = namespace, key: Any = key) -> str:
                return f"{where}: store item {tuple(namespace)!r} key {key!r}"

            try:
                self._check_alone(entry)
            except (TypeError, ValueError) as exc:
                raise type(exc)(f"{label()}: {exc}") from exc
            if self.strict:
                problems += _strict_problems(entry, label, now=created)
        if problems:
            count = f"{len(problems)} problem{'s' if len(problems) > 1 else ''}"
            raise ValueError(
                f"PoolSplitStore(strict=True) wrote nothing: {count}:\n"
                + "\n".join(f"  {problem}" for problem in problems)
                + "\nFix each value (build the store with strict=False to write values the"
                " core reads leniently, e.g. scope='Always' as contextual)"
            )

    def _check_ops(self, ops: list[Op]) -> None:
        for i, op in enumerate(ops):  # a str namespace, in any op: refused as on every call
            if isinstance(op, ListNamespacesOp):
                paths = [condition.path for condition in op.match_conditions or ()]
            else:
                paths = [op.namespace_prefix if isinstance(op, SearchOp) else op.namespace]
            for path in paths:
                _refuse_str_namespace(path, f"batch() op {i}: namespace")
        self._check_writes([(op.namespace, op.key, op.value, f"batch() op {i}")
                            for i, op in enumerate(ops)
                            if isinstance(op, PutOp) and op.value is not None])

    def _covering(self, namespace: tuple[str, ...]) -> list[_View]:
        """The views whose prefix ``namespace`` starts with."""
        return [view for prefix, view in self._views.items()
                if namespace[:len(prefix)] == prefix]

    def _targets(self, written: Iterable[_Key]) -> list[_Key]:
        """The written items that some view covers, each now a read-back in flight.

        Only they are read back (others are read when asked). A key with
        another read-back already in flight is contested: which of the two
        the store answered last is unknown.
        """
        with self._lock:
            targets = list(dict.fromkeys(
                (ns, key) for ns, key in written if self._covering(ns)))
            for target in targets:
                self._in_flight[target] = self._in_flight.get(target, 0) + 1
                if self._in_flight[target] > 1:
                    self._contested.add(target)
            return targets

    def _written(self, written: Iterable[_Key]) -> None:
        """Read the written items back into the index; a failed read-back is only logged."""
        if self._standby is not None:  # the primary's WAL position, per namespace written
            self._standby.wrote(ns for ns, _ in written)
        targets = self._targets(written)
        if not targets:
            return
        got = None
        try:
            got = self.store.batch([GetOp(ns, key, refresh_ttl=False) for ns, key in targets])
        except Exception as exc:  # the write happened: it must not raise now
            _warn_read_back(targets, self.store, exc)
        finally:
            self._apply_written(targets, got)

    async def _awritten(self, written: Iterable[_Key]) -> None:
        """The async twin of :meth:`_written`."""
        if self._standby is not None:
            await self._standby.awrote(ns for ns, _ in written)
        targets = self._targets(written)
        if not targets:
            return
        got = None
        try:
            got = await self.store.abatch(
                [GetOp(ns, key, refresh_ttl=False) for ns, key in targets])
        except Exception as exc:  # the write happened: it must not raise now
            _warn_read_back(targets, self.store, exc)
        finally:
            self._apply_written(targets, got)

    def _apply_written(self, targets: list[_Key], got: list[Result] | None) -> None:
        """End the read-backs of ``targets``: apply each result the index can order.

        ``got`` None (the read-back failed): every view covering a target is
        read in full before its next answer. A result is applied only when no
        other read of its key overlapped it in flight and it is not older
        than the item held (:meth:`_View.apply_read_back`); otherwise its key
        is read again before the next answer.
        """
        with self._lock:
            for i, target in enumerate(targets):
                contested = self._end_read_back(target)
                for view in self._covering(target[0]):
                    if got is None:
                        view.needs_full = True
                    elif contested:
                        view.recheck.add(target)
                    else:
                        view.apply_read_back(target, got[i])

    def _end_read_back(self, target: _Key) -> bool:
        """Count one read-back of ``target`` as ended; whether another read overlapped it."""
        contested = target in self._contested
        left = self._in_flight.pop(target) - 1
        if left:
            self._in_flight[target] = left
        else:
            self._contested.discard(target)
        return contested

    def _unsure(self, written: Iterable[_Key]) -> None:
        """A write raised, yet may have committed: read each covering view in full next."""
        if self._standby is not None:  # (its WAL position is read before the next read)
            self._standby.unsure(ns for ns, _ in written)
        with self._lock:
            for ns, _ in written:
                for view in self._covering(tuple(ns)):
                    view.needs_full = True

    @contextmanager
    def _writing(self, written: Sequence[_Key]) -> Iterator[None]:
        """Run a write of ``written``; if it raises, mark them with :meth:`_unsure`.

        A lost or refused connection is re-raised as a ConnectionError naming
        the store (the write may or may not have committed).
        """
        try:
            yield
        except BaseException as exc:
            self._unsure(written)
            if getattr(exc, "sqlstate", None) == _CANCELLED:
                raise TimeoutError(
                    f"PoolSplitStore's write to its {type(self.store).__name__} was cancelled"
                    f" by the server (statement_timeout; nothing was committed): {exc}"
                ) from exc
            if isinstance(exc, Exception) and not isinstance(exc, OSError) \
                    and _is_connection_error(exc):
                keys = ", ".join(f"{ns!r} key {key!r}" for ns, key in written[:3])
                more = f" (and {len(written) - 3} more)" if len(written) > 3 else ""
                raise ConnectionError(
                    f"PoolSplitStore could not complete a write of {keys}{more} to its"
                    f" {type(self.store).__name__} (it may or may not have committed): {exc}"
                ) from exc
            named = _setup_named(exc)
            if named is not None:
                raise named from exc
            raise


def as_poolsplit(store: BaseStore | None) -> PoolSplitStore:
    """The store a graph node was given, typed as the :class:`PoolSplitStore` it is.

    LangGraph injects the compiled graph's store into a node as a plain
    ``BaseStore``, so ``store.retrieve_pools(...)`` fails type-checking there;
    ``as_poolsplit(store)`` checks at run time that it is a PoolSplitStore and
    narrows the type for the checker::

        def node(state: State, *, store: BaseStore) -> dict[str, Any]:
            memories = as_poolsplit(store).retrieve_pools(ns, pools, context)

    >>> from langgraph.store.memory import InMemoryStore
    >>> wrapped = PoolSplitStore(InMemoryStore())
    >>> as_poolsplit(wrapped) is wrapped
    True
    >>> as_poolsplit(InMemoryStore())
    Traceback (most recent call last):
    ...
    TypeError: as_poolsplit needs a PoolSplitStore, got InMemoryStore; wrap the InMemoryStore the graph is compiled with: builder.compile(store=PoolSplitStore(store))

    Raises:
        TypeError: ``store`` is not a PoolSplitStore (None when the graph was
            compiled without a store), naming the type received.
    """  # noqa: E501
    if isinstance(store, PoolSplitStore):
        return store
    if store is None:
        raise TypeError("as_poolsplit needs a PoolSplitStore, got None: the graph was compiled"
                        " without a store; compile it with"
                        " builder.compile(store=PoolSplitStore(InMemoryStore()))")
    name = type(store).__name__
    raise TypeError(f"as_poolsplit needs a PoolSplitStore, got {name}; wrap the {name} the"
                    " graph is compiled with: builder.compile(store=PoolSplitStore(store))")


def item_entry(item: Item) -> dict[str, Any]:
    """The entry a pool-split read makes of a store item: its text as the core scored it.

    For :func:`~poolsplit_core.render.render_pools` over what
    :meth:`PoolSplitStore.retrieve_pools` returns, so that a structured
    value reads as the ``key: value`` lines the core scored and counted
    (the guide's mapping table):

    >>> from langgraph.store.memory import InMemoryStore
    >>> from poolsplit_core import Pool, render_pools
    >>> store = PoolSplitStore(InMemoryStore())
    >>> store.put(("m", "ana"), "fix", {"content": "Use just.", "scope": "always"})
    >>> store.put(("m", "ana"), "f1", {"kind": "fact", "content": {"staging db": "pg-2"}})
    >>> got = store.retrieve_pools(("m", "ana"), [Pool("facts", 100, 2, ("fact",))])
    >>> print(render_pools(got, entry=item_entry))
    ## Corrections (always apply)
    - Use just.
    <BLANKLINE>
    ## facts
    - staging db: pg-2

    A new dict: the item is not changed.
    """
    return item_to_entry(item.namespace, item.key, item.value, created_at=item.created_at,
                         read_from=item.namespace)


def _put_targets(ops: Sequence[Op]) -> list[tuple[tuple[str, ...], str]]:
    return [(tuple(op.namespace), str(op.key)) for op in ops if isinstance(op, PutOp)]


def _warn_read_back(targets: Sequence[_Key], store: BaseStore, exc: BaseException) -> None:
    """Log that a write happened but reading it back failed (the index reads it in full next)."""
    logger.warning(
        "PoolSplitStore wrote %s but could not read %s back from its %s (%s: %s); the write"
        " happened, and each namespace read holding it is read in full before its next answer",
        ", ".join(f"{ns!r} key {key!r}" for ns, key in targets),
        "it" if len(targets) == 1 else "them", type(store).__name__, type(exc).__name__, exc)


def _not_replaced_by(live: Sequence[Mapping[str, Any]], refused: Iterable[Any] = ()
                     ) -> Callable[[Mapping[str, Any]], bool]:
    """Keep an indexed entry unless it is a correction or the store now holds it as one.

    Corrections come from the live read alone, so a correction deleted or
    changed by another process is never loaded from the index's older copy;
    nor is one the store now holds with a problem (``refused``: their ids).
    """
    replaced = {entry["id"] for entry in live}
    replaced.update(refused)
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
_CALL_KWARGS = ("project", "tags", "k", "filter")
# LangChain's invoke() reads ``verbose`` itself and then forwards it to us.
_FRAMEWORK_KWARGS = frozenset({"verbose"})


#: How a run names a namespace template's variable, by default: its config.
_RUN_WITH_CONFIG = "config={{'configurable': {{{name!r}: '<{name}>'}}}}"


class _Filled(NamedTuple):
    """A namespace filled from a template, and the user its ``{user_id}`` named (or None)."""

    namespace: tuple[str, ...]
    user: str | None


def fill_namespace(template: Sequence[str], config: Mapping[str, Any] | None) -> tuple[str, ...]:
    """Fill a namespace template from ``config["configurable"]``; a blank value fails closed.

    >>> fill_namespace(("memories", "{user_id}"), {"configurable": {"user_id": "ana"}})
    ('memories', 'ana')
    >>> fill_namespace(("memories", "{user_id}"), {"configurable": {}})
    Traceback (most recent call last):
    ...
    ValueError: namespace template ('memories', '{user_id}') needs ...

    Every variable's value must be a str with a non-blank character: None,
    ``""``, ``" "``, ``False``, ``0`` or ``["ana"]`` would each name a bucket
    that many callers share, so each raises a ValueError naming the variable
    and the template.
    """
    return _fill(template, config).namespace


def _fill(template: Sequence[str], config: Mapping[str, Any] | None) -> _Filled:
    return _fill_from(template, (config or {}).get("configurable"))


def _fill_from(template: Sequence[str], values: Mapping[str, Any] | None, *,
              source: str = "config['configurable']", found: str = "this run's config",
              run_with: str | None = None) -> _Filled:
    """Fill ``template`` from ``values``: the one rule of every namespace template.

    ``source`` names where the values come from (``{source}[{name!r}]`` in a
    message), ``found`` what lacks one, and ``run_with`` how to pass one
    (formatted with the variable's ``name``; by default the run's config), so
    each caller's error says how its users name the variable.
    """
    configurable = dict(values or {})
    filled = []
    for label in template:
        names = [name for _, name, _, _ in string.Formatter().parse(label) if name is not None]
        for name in names:
            how = (run_with or _RUN_WITH_CONFIG).format(name=name)
            if name not in configurable:
                raise ValueError(
                    f"namespace template {tuple(template)!r} needs"
                    f" {source}[{name!r}], which {found} lacks"
                    + (f"; run with {how}" if run_with else "")
                )
            value = configurable[name]
            if not isinstance(value, str) or not value.strip():
                raise ValueError(
                    f"namespace template {tuple(template)!r}: {source}[{name!r}]"
                    f" must be a non-empty string (not only whitespace), got {value!r}; run"
                    f" with {how}"
                )
        filled.append(label.format_map(configurable))
    namespace = _check_namespace(tuple(filled), f"namespace filled from {tuple(template)!r}")
    named = any(name == USER_KEY for label in template
                for _, name, _, _ in string.Formatter().parse(label))
    return _Filled(namespace, configurable[USER_KEY] if named else None)


class PoolSplitStoreRetriever(BaseRetriever):
    """Pool-split retrieval of a user's memories in a LangGraph store, as a LangChain retriever.

    Setup:
        ``pip install 'poolsplit[langgraph]'``

    Key init args:
        - ``store``: a :class:`PoolSplitStore`.
        - ``namespace``: a namespace template, e.g. ``("memories",
          "{user_id}")``, filled from ``config["configurable"]`` on every call.
          A variable the config lacks, or whose value is not a non-blank str
          (None, ``""``, ``False``, ``0``, ``["ana"]``), raises a ValueError
          naming it: nothing is read.
        - ``pools``: the pools (``Pool`` objects or their plain-data dicts).
        - ``k``: caps the contextual results (fair round-robin across pools);
          corrections are never cut.

    Invoke:
        ```python
        retriever = PoolSplitStoreRetriever(store=store,
                                            namespace=("memories", "{user_id}"),
                                            pools=pools)
        docs = retriever.invoke("how do I deploy?",
                                {"configurable": {"user_id": "ana"}},
                                filter={"project": "atlas"})  # optional: narrows
        ```

    Inside a LangGraph node the run's config reaches the retriever on its own.
    Per call: ``project=``, ``tags=`` (the context), ``k=``, and ``filter=``,
    which keeps only the items whose value holds each of its keys with an
    equal value, corrections included, before pool-split runs: it only
    narrows.

    Results: corrections first -- every active one, those no pool takes under
    the pool ``"always"`` -- then each pool's picks; ``page_content`` is the
    entry's content (a structured ``content``, langmem's ``{"kind": "Profile",
    "content": {...}}``, as readable ``key: value`` lines -- the text the core
    scored), ``metadata`` the item's value (without ``content``) plus
    ``namespace``, ``key``, ``poolsplit_pool``, ``poolsplit_score`` and
    ``poolsplit_always``. Items the store skips for a problem never appear.

    Tenancy is the store's one rule (:class:`PoolSplitStore`): when the
    namespace's items carry a ``user_id``, a call must name a user. A
    template with a ``{user_id}`` variable names one: the namespace is that
    user's, items in it without a ``user_id`` are theirs, items with another
    user's are left out, and a ``filter`` naming another ``user_id`` is a
    ValueError. Without that variable, ``filter={"user_id": ...}`` names the
    user. A ``user_id`` must be a non-empty, non-blank str.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")

    store: PoolSplitStore
    namespace: tuple[str, ...]
    # The adapters' shared options this retriever takes (the store holds the others),
    # described and checked as declared once (poolsplit_integrations._options.Options).
    pools: list[Pool] = option_field("pools")
    k: int | None = option_field("k")
    context: dict[str, Any] = option_field("context", default_factory=dict)
    now: datetime | None = option_field("now")
    max_always_tokens: int | None = option_field("max_always_tokens")

    @field_validator("pools", "k", "max_always_tokens", mode="before")
    @classmethod
    def _check_options(cls, value: Any, info: ValidationInfo) -> Any:
        return check_option(info.field_name, value)

    @field_validator("namespace", mode="before")
    @classmethod
    def _check_template(cls, value: Any) -> Any:
        _refuse_str_namespace(value)
        if not isinstance(value, (tuple, list)) or not value:
            raise TypeError(f"namespace must be a non-empty tuple of str labels, got {value!r}")
        for label in value:
            if not isinstance(label, str) or not label:
                raise TypeError(f"namespace labels must be non-empty str, got {label!r}")
        return tuple(value)

    def invoke(self, input: str, config: RunnableConfig | None = None,
               **kwargs: Any) -> list[Document]:
        """Fill the namespace from ``config`` (or the run's), then retrieve.

        ``input`` is the query string (a chain whose input is a dict maps it
        first: ``itemgetter("question") | retriever``).
        """
        check_query(input, "PoolSplitStoreRetriever.invoke()")
        config = ensure_config(config)
        kwargs["namespace"] = self._namespace(config, kwargs)
        return super().invoke(input, config, **kwargs)

    async def ainvoke(self, input: str, config: RunnableConfig | None = None,
                      **kwargs: Any) -> list[Document]:
        """Fill the namespace from ``config`` (or the run's), then retrieve (awaited)."""
        check_query(input, "PoolSplitStoreRetriever.ainvoke()")
        config = ensure_config(config)
        kwargs["namespace"] = self._namespace(config, kwargs)
        return await super().ainvoke(input, config, **kwargs)

    def _namespace(self, config: RunnableConfig, kwargs: Mapping[str, Any]) -> _Filled:
        if "namespace" in kwargs:
            _refuse_namespace()
        refuse_unknown("PoolSplitStoreRetriever.invoke()",
                       [name for name in kwargs if name not in _FRAMEWORK_KWARGS], _CALL_KWARGS)
        return _fill(self.namespace, config)

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        filled, k, context, filter = self._call(query, kwargs)
        decided, items = self.store._decide(filled.namespace, self.pools, context, self.now,
                                            self.max_always_tokens, filter=filter,
                                            bound=filled.user)
        return _documents(decided, items, k)

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        filled, k, context, filter = self._call(query, kwargs)
        decided, items = await self.store._adecide(filled.namespace, self.pools, context,
                                                   self.now, self.max_always_tokens,
                                                   filter=filter, bound=filled.user)
        return _documents(decided, items, k)

    def _call(self, query: str, kwargs: dict[str, Any]
              ) -> tuple[_Filled, int | None, dict[str, Any], Any]:
        """The namespace, ``k``, context and filter of one call (checked)."""
        filled = kwargs.pop("namespace", None)
        if filled is not None and not isinstance(filled, _Filled):  # only invoke() fills it
            _refuse_namespace()
        if filled is None:
            filled = _fill(self.namespace, ensure_config())
        for name in _FRAMEWORK_KWARGS:
            kwargs.pop(name, None)
        refuse_unknown("PoolSplitStoreRetriever.invoke()", kwargs, _CALL_KWARGS)
        k = self.k if kwargs.get("k") is None else check_k(kwargs["k"])
        context = build_context(self.context, query, project=kwargs.get("project"),
                                tags=kwargs.get("tags"))
        return filled, k, context, kwargs.get("filter")


def _documents(decided: Mapping[str, list[Decision]], items: Mapping[int, Item],
               k: int | None) -> list[Document]:
    """The loaded items as Documents: corrections first, then ``k`` picks round-robin."""
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


def _refuse_namespace() -> NoReturn:
    """The template is the only way to name a namespace: a caller's own one could widen."""
    raise TypeError("PoolSplitStoreRetriever.invoke() got unexpected keyword argument"
                    " 'namespace'; the namespace comes from the template and the config")
