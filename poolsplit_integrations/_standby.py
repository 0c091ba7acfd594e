"""Pool-split reads from a hot standby that never hide a write made through this object.

:class:`StandbyReads` routes the database reads of a
:class:`~poolsplit_integrations.langgraph.PoolSplitStore` built with
``standby=``: a second LangGraph ``PostgresStore`` (``AsyncPostgresStore``
when the primary is async) connected to a hot standby of the same database
(streaming replication).

The rule, per namespace:

- After every write through the PoolSplitStore (``put``/``delete``/``batch``
  and their async twins) returns, the primary's WAL position is read through
  the primary store's own connection (``pg_current_wal_lsn()``; the insert
  position when the session commits with ``synchronous_commit = off``, since
  such a commit need not be written yet) and kept per namespace written: the
  commit is at or before it. A write that raised may have committed all the
  same: its namespaces are marked, and the primary's position is read for them
  before their next read.
- A pool-split read of a prefix asks the standby, in one round trip (one
  pipeline), for its replay position (statement 1) and for every item under
  the prefix together with the replay position and lag (statement 2, one
  snapshot, :func:`standby_statement`). The answer is the standby's only when
  the position of statement 1 is at or past every position kept for a
  namespace under the prefix. Statement 1 runs before statement 2 takes its
  snapshot, and a transaction whose commit record the standby has replayed is
  in every snapshot taken afterwards; the replay position a statement reads
  about itself comes after its own snapshot, which is why the gate is a
  statement of its own. Otherwise (the standby behind, not in recovery, or a
  marked namespace) the caller reads the primary.
- A read the database scores (the primary set up) asks the same rule through
  :meth:`StandbyReads.snapshot`: the replay position is read on a standby
  connection before its REPEATABLE READ, READ ONLY transaction begins, and the
  transaction's first statement takes the snapshot; the scoring then reads in
  that snapshot, or on the primary when the standby may not answer.
- Kept positions are dropped as soon as the standby has replayed them; at
  most :data:`POSITIONS_KEPT` are kept, and the oldest ones beyond that fold
  into one floor every read must wait for (never dropped unreplayed).
- The standby failing (down, unreachable, a query cancelled by a recovery
  conflict, anything) sends the read to the primary: one warning on the
  ``"poolsplit"`` logger per outage, and the standby is not asked again for
  :data:`RETRY_AFTER` seconds.

Writes by other processes are not in the kept positions: a standby read shows
one once the standby has replayed it (``StoreExplanation.replica_lag`` says
how far behind it is), unless those writers commit with ``synchronous_commit
= remote_apply`` and the standby is in the primary's
``synchronous_standby_names``: then every acknowledged write is already
applied on the standby.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Sequence
from contextlib import AsyncExitStack, ExitStack, asynccontextmanager, contextmanager
from typing import Any, NamedTuple

from langgraph.store.base import SearchItem
from langgraph.store.postgres import AsyncPostgresStore, PostgresStore
from psycopg.rows import dict_row

from poolsplit_integrations._postgres import _items, _statement, is_database_store, run_in_loop

__all__ = ["POSITIONS_KEPT", "RETRY_AFTER", "StandbyReads", "StandbyRows", "StandbySnapshot",
           "parse_lsn", "standby_statement"]

logger = logging.getLogger("poolsplit")

#: The most (namespace -> WAL position) pairs kept; beyond it the oldest fold into a floor.
POSITIONS_KEPT = 4096
#: Seconds the standby is left alone after it failed (reads go to the primary meanwhile).
RETRY_AFTER = 5.0


#: The primary's WAL position a commit that just returned is at or before.
PRIMARY_POSITION = (
    "SELECT (CASE WHEN current_setting('synchronous_commit') = 'off'"
    " THEN pg_current_wal_insert_lsn() ELSE pg_current_wal_lsn() END)::text AS lsn"
)
#: The standby's replay position, before the read takes its snapshot (NULL: not a standby).
REPLAY_POSITION = (
    "SELECT (CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn() END)::text AS lsn"
)
#: The standby's recovery state: the first statement of :meth:`StandbyReads.snapshot`'s transaction.
REPLAY_STATE = (
    "SELECT pg_is_in_recovery() AS recovering, pg_last_wal_replay_lsn()::text AS replay_lsn,"
    " CASE WHEN pg_last_wal_receive_lsn() IS NOT NULL"
    " AND pg_last_wal_replay_lsn() >= pg_last_wal_receive_lsn() THEN 0.0"
    " ELSE greatest(0.0, extract(epoch FROM now() - pg_last_xact_replay_timestamp())::float8)"
    " END::float8 AS replay_lag"
)


class StandbyRows(list):  # type: ignore[type-arg]
    """The items a standby answered with: a list of ``SearchItem``, and how far behind it was."""

    read_from = "standby"

    def __init__(self, items: Iterable[SearchItem], replica_lag: float | None) -> None:
        super().__init__(items)
        #: Seconds the standby's replay was behind the primary (None: it cannot tell).
        self.replica_lag = replica_lag


class StandbySnapshot(NamedTuple):
    """A standby connection in a REPEATABLE READ, READ ONLY transaction, and its replay lag."""

    conn: Any
    replica_lag: float | None

    def rows(self, items: Iterable[SearchItem]) -> StandbyRows:
        """``items`` read on :attr:`conn`, as the standby's answer."""
        return StandbyRows(items, self.replica_lag)


def parse_lsn(text: str | None) -> int | None:
    """A ``pg_lsn`` in its text form (``"16/B374D848"``) as an int; None stays None."""
    if text is None:
        return None
    high, _, low = str(text).partition("/")
    return (int(high, 16) << 32) | int(low, 16)


def format_lsn(value: int) -> str:
    """The text form of a WAL position :func:`parse_lsn` read."""
    return f"{value >> 32:X}/{value & 0xFFFFFFFF:X}"


def standby_statement(primary: Any, prefix: Sequence[str],
                      required: int) -> tuple[str, tuple[Any, ...]]:
    """Every item under ``prefix`` as the primary's read sees them, plus the replay state.

    One statement (one snapshot): a first row-source reads the standby's
    recovery state once (replay position, replay lag in seconds: 0 when it
    has replayed all it received, else ``now() - pg_last_xact_replay_timestamp()``);
    the items are the primary read's own statement (:func:`_postgres._statement`,
    the same filter, expiry rule and order), read only when the standby is in
    recovery and has replayed ``required``. Every row carries ``recovering``,
    ``replay_lsn`` and ``replay_lag``; with no item (or not read) one row whose
    ``key`` is NULL.
    """
    items, params = _statement(primary, prefix)
    return (
        "WITH replay AS MATERIALIZED (SELECT pg_is_in_recovery() AS recovering,"
        " pg_last_wal_replay_lsn() AS lsn, pg_last_wal_receive_lsn() AS received,"
        " pg_last_xact_replay_timestamp() AS replayed_at)"
        " SELECT replay.recovering AS recovering, replay.lsn::text AS replay_lsn,"
        " CASE WHEN replay.received IS NOT NULL AND replay.lsn >= replay.received THEN 0.0"
        " ELSE greatest(0.0, extract(epoch FROM now() - replay.replayed_at)::float8)"
        " END::float8 AS replay_lag, item.*"
        f" FROM replay LEFT JOIN LATERAL (SELECT * FROM ({items}) AS listed"
        " WHERE replay.recovering AND replay.lsn >= %s::pg_lsn) AS item ON true"
        ' ORDER BY item.prefix COLLATE "C", item.key COLLATE "C"',
        (*params, format_lsn(required)),
    )


def primary_position(store: Any) -> int:
    """The primary's WAL position now, through ``store``'s own connection (or pool)."""
    if isinstance(store, AsyncPostgresStore):
        return run_in_loop(store, lambda: aprimary_position(store))
    with store._cursor() as cur:
        cur.execute(PRIMARY_POSITION)
        row = cur.fetchone()
    return parse_lsn(row["lsn"])  # type: ignore[return-value]


async def aprimary_position(store: Any) -> int:
    """The async twin of :func:`primary_position`."""
    if not isinstance(store, AsyncPostgresStore):
        return await asyncio.to_thread(primary_position, store)
    async with store._cursor() as cur:
        await cur.execute(PRIMARY_POSITION)
        row = await cur.fetchone()
    return parse_lsn(row["lsn"])  # type: ignore[index,return-value]


def _answer(primary: Any, gate: Any, rows: list[Any], required: int
            ) -> tuple[list[SearchItem] | None, int | None, float | None]:
    """(the items, or None when the gate shows the standby behind), replay position, lag."""
    replayed = parse_lsn(gate["lsn"]) if gate else None
    first = rows[0] if rows else {}
    lag = first.get("replay_lag")
    read_at = parse_lsn(first.get("replay_lsn"))  # the read's own (later) replay position
    if (replayed is None or replayed < required or not first.get("recovering")
            or read_at is None or read_at < required):
        # behind, or not a standby (any more): the items were not read
        return None, replayed, None
    return (_items(primary, [row for row in rows if row["key"] is not None]), replayed,
            None if lag is None else float(lag))


def read_standby(primary: Any, standby: Any, prefix: Sequence[str], required: int
                 ) -> tuple[list[SearchItem] | None, int | None, float | None]:
    """Read ``prefix`` on the standby, if it has replayed ``required`` (module docstring).

    Returns (the items, or None when the primary must answer; the replay
    position; the replay lag in seconds). Errors are the driver's.
    """
    if isinstance(standby, AsyncPostgresStore):
        return run_in_loop(standby, lambda: aread_standby(primary, standby, prefix, required))
    sql, params = standby_statement(primary, prefix, required)
    with standby._cursor(pipeline=True) as cur:
        with cur.connection.cursor(binary=True) as gate_cur:
            gate_cur.row_factory = cur.row_factory
            gate_cur.execute(REPLAY_POSITION)  # before the read takes its snapshot
            cur.execute(sql, params)
            gate = gate_cur.fetchone()
            rows = cur.fetchall()
    return _answer(primary, gate, rows, required)


async def aread_standby(primary: Any, standby: Any, prefix: Sequence[str], required: int
                        ) -> tuple[list[SearchItem] | None, int | None, float | None]:
    """The async twin of :func:`read_standby`."""
    if not isinstance(standby, AsyncPostgresStore):
        return await asyncio.to_thread(read_standby, primary, standby, prefix, required)
    sql, params = standby_statement(primary, prefix, required)
    async with standby._cursor(pipeline=True) as cur:
        async with cur.connection.cursor(binary=True) as gate_cur:
            gate_cur.row_factory = cur.row_factory
            await gate_cur.execute(REPLAY_POSITION)
            await cur.execute(sql, params)
            gate = await gate_cur.fetchone()
            rows = await cur.fetchall()
    return _answer(primary, gate, rows, required)


class StandbyReads:
    """Which of primary and standby answers a pool-split read; the positions writes left.

    ``primary`` and ``standby`` are LangGraph PostgreSQL stores of the same
    kind (both sync or both async). Thread-safe; see the module docstring.
    """

    def __init__(self, primary: Any, standby: Any, *, clock: Callable[[], float] = time.monotonic
                 ) -> None:
        if not is_database_store(primary):
            raise TypeError(
                "standby= needs the wrapped store to be LangGraph's PostgresStore or"
                f" AsyncPostgresStore (the primary), got {type(primary).__name__}"
            )
        kind = AsyncPostgresStore if isinstance(primary, AsyncPostgresStore) else PostgresStore
        if not isinstance(standby, kind):
            raise TypeError(
                f"standby must be a LangGraph {kind.__name__} (the kind of the wrapped store)"
                f" connected to a hot standby of its database, got {type(standby).__name__}"
            )
        if standby is primary:
            raise ValueError("standby must be a second store, connected to the hot standby")
        self.primary = primary
        self.standby = standby
        self.clock = clock
        self._lock = threading.Lock()
        #: namespace written -> the primary's WAL position after the write (oldest first).
        self._positions: dict[tuple[str, ...], int] = {}
        #: The highest position folded out of ``_positions`` (every read waits for it).
        self._floor = 0
        #: Namespaces written whose position is not known yet (the write or the query failed).
        self._unknown: set[tuple[str, ...]] = set()
        #: The standby is not asked before this (clock) time, after a failure.
        self._resting_until = float("-inf")
        self._warned = False

    # -- writes ---------------------------------------------------------------

    def wrote(self, namespaces: Iterable[tuple[str, ...]]) -> None:
        """Keep the primary's position for ``namespaces``, just written (never raises)."""
        names = set(map(tuple, namespaces))
        if not names:
            return
        try:
            position = primary_position(self.primary)
        except Exception:  # the write committed: it must not fail now
            self.unsure(names)
            return
        self._keep(names, position)

    async def awrote(self, namespaces: Iterable[tuple[str, ...]]) -> None:
        """The async twin of :meth:`wrote`."""
        names = set(map(tuple, namespaces))
        if not names:
            return
        try:
            position = await aprimary_position(self.primary)
        except Exception:
            self.unsure(names)
            return
        self._keep(names, position)

    def unsure(self, namespaces: Iterable[tuple[str, ...]]) -> None:
        """A write of ``namespaces`` raised, yet may have committed: their position is unknown."""
        with self._lock:
            self._unknown.update(map(tuple, namespaces))

    def _keep(self, names: set[tuple[str, ...]], position: int) -> None:
        with self._lock:
            positions = self._positions
            for name in names:
                held = positions.pop(name, 0)
                positions[name] = max(held, position)
                self._unknown.discard(name)
            while len(positions) > POSITIONS_KEPT:
                oldest = next(iter(positions))
                self._floor = max(self._floor, positions.pop(oldest))

    # -- reads ----------------------------------------------------------------

    def _required(self, prefix: tuple[str, ...]) -> tuple[int, bool]:
        """The position a standby read of ``prefix`` needs; whether an unknown one is under it."""
        size = len(prefix)
        with self._lock:
            required = max([self._floor, *(position for name, position
                                           in self._positions.items()
                                           if name[:size] == prefix)])
            unknown = [name for name in self._unknown if name[:size] == prefix]
        return required, bool(unknown)

    def _resolved(self, prefix: tuple[str, ...], position: int) -> None:
        """The unknown namespaces under ``prefix`` are at or before ``position`` now."""
        size = len(prefix)
        with self._lock:
            names = {name for name in self._unknown if name[:size] == prefix}
        self._keep(names, position)

    def _replayed(self, position: int | None) -> None:
        """Drop the positions the standby has replayed."""
        if position is None:
            return
        with self._lock:
            for name in [name for name, held in self._positions.items() if held <= position]:
                del self._positions[name]
            if self._floor <= position:
                self._floor = 0

    def _resting(self) -> bool:
        return self.clock() < self._resting_until

    def _failed(self, exc: BaseException) -> None:
        with self._lock:
            self._resting_until = self.clock() + RETRY_AFTER
            warn, self._warned = not self._warned, True
        if warn:
            logger.warning(
                "PoolSplitStore's standby %s did not answer (%s: %s); pool-split reads go to the"
                " primary until it does (asked again every %.0f s)",
                type(self.standby).__name__, type(exc).__name__, exc, RETRY_AFTER)

    def _answered(self, got: list[SearchItem] | None, position: int | None,
                  lag: float | None) -> StandbyRows | None:
        with self._lock:
            back, self._warned = self._warned, False
        if back:
            logger.info("PoolSplitStore's standby answers again; pool-split reads use it")
        self._replayed(position)
        return None if got is None else StandbyRows(got, lag)

    def read(self, prefix: tuple[str, ...]) -> StandbyRows | None:
        """The standby's items under ``prefix``, or None: the primary must answer."""
        required = self._required_now(prefix)
        if required is None:
            return None
        try:
            got, replayed, lag = read_standby(self.primary, self.standby, prefix, required)
        except Exception as exc:
            self._failed(exc)
            return None
        return self._answered(got, replayed, lag)

    async def aread(self, prefix: tuple[str, ...]) -> StandbyRows | None:
        """The async twin of :meth:`read`."""
        required = await self._arequired_now(prefix)
        if required is None:
            return None
        try:
            got, replayed, lag = await aread_standby(self.primary, self.standby, prefix,
                                                     required)
        except Exception as exc:
            self._failed(exc)
            return None
        return self._answered(got, replayed, lag)

    # -- database-scored reads --------------------------------------------------

    def _required_now(self, prefix: tuple[str, ...]) -> int | None:
        """The position a standby read of ``prefix`` needs; None: the primary must answer."""
        if self._resting():
            return None
        required, unknown = self._required(prefix)
        if unknown:
            try:
                position = primary_position(self.primary)
            except Exception:
                return None  # the primary's read will name the error
            self._resolved(prefix, position)
            required = max(required, position)
        return required

    async def _arequired_now(self, prefix: tuple[str, ...]) -> int | None:
        """The async twin of :meth:`_required_now`."""
        if self._resting():
            return None
        required, unknown = self._required(prefix)
        if unknown:
            try:
                position = await aprimary_position(self.primary)
            except Exception:
                return None
            self._resolved(prefix, position)
            required = max(required, position)
        return required

    def _opened(self, replayed: int | None, state: Any, required: int) -> bool:
        """Whether the snapshot just begun holds ``required`` (gate, then its first statement)."""
        read_at = None if state is None else parse_lsn(state["replay_lsn"])
        self._answered(None, replayed, None)
        return (replayed is not None and replayed >= required and state is not None
                and bool(state["recovering"]) and read_at is not None and read_at >= required)

    def _open(self, stack: ExitStack, required: int) -> StandbySnapshot | None:
        from poolsplit_integrations import _pgengine
        conn = stack.enter_context(_pgengine.held(self.standby))
        if not conn.autocommit:  # (the gate would take the transaction's snapshot itself)
            return None
        gate = conn.cursor(row_factory=dict_row).execute(REPLAY_POSITION).fetchone()
        replayed = parse_lsn(gate["lsn"])
        state: Any = None
        if replayed is not None and replayed >= required:
            stack.enter_context(_pgengine.read_only(conn))
            state = conn.cursor(row_factory=dict_row).execute(REPLAY_STATE).fetchone()
        if not self._opened(replayed, state, required):
            return None
        lag = state["replay_lag"]
        return StandbySnapshot(conn, None if lag is None else float(lag))

    async def _aopen(self, stack: AsyncExitStack, required: int) -> StandbySnapshot | None:
        from poolsplit_integrations import _pgengine
        conn = await stack.enter_async_context(_pgengine.aheld(self.standby))
        if not conn.autocommit:
            return None
        cur = conn.cursor(row_factory=dict_row)
        await cur.execute(REPLAY_POSITION)
        replayed = parse_lsn((await cur.fetchone())["lsn"])
        state: Any = None
        if replayed is not None and replayed >= required:
            await stack.enter_async_context(_pgengine.aread_only(conn))
            cur = conn.cursor(row_factory=dict_row)
            await cur.execute(REPLAY_STATE)
            state = await cur.fetchone()
        if not self._opened(replayed, state, required):
            return None
        lag = state["replay_lag"]
        return StandbySnapshot(conn, None if lag is None else float(lag))

    @contextmanager
    def snapshot(self, prefix: tuple[str, ...]) -> Iterator[StandbySnapshot | None]:
        """A standby connection in a read-only snapshot for a read of ``prefix``, or None.

        None: the primary must answer (the rule of :meth:`read`). The standby's
        replay position is read on the connection before its REPEATABLE READ,
        READ ONLY transaction begins; the transaction's first statement (the
        recovery state and lag) takes the snapshot after it. The transaction
        ends when the body does. The standby failing before the body runs
        gives None (as :meth:`read` does); an error in the body is the body's.
        """
        got: StandbySnapshot | None = None
        with ExitStack() as stack:
            required = self._required_now(prefix)
            if required is not None:
                try:
                    with ExitStack() as opening:
                        got = self._open(opening, required)
                        if got is not None:
                            stack.enter_context(opening.pop_all())
                except Exception as exc:
                    self._failed(exc)
                    got = None
            yield got

    @asynccontextmanager
    async def asnapshot(self, prefix: tuple[str, ...]) -> AsyncIterator[StandbySnapshot | None]:
        """The async twin of :meth:`snapshot` (in the stores' event loop)."""
        got: StandbySnapshot | None = None
        async with AsyncExitStack() as stack:
            required = await self._arequired_now(prefix)
            if required is not None:
                try:
                    async with AsyncExitStack() as opening:
                        got = await self._aopen(opening, required)
                        if got is not None:
                            await stack.enter_async_context(opening.pop_all())
                except Exception as exc:
                    self._failed(exc)
                    got = None
            yield got
