"""Pool-split candidates from inside PostgreSQL: the database scores, the core fills.

Once :func:`setup_entries` has run on a database (``PoolSplitStore.setup()``
runs it), each row of LangGraph's ``store`` table has its readings kept beside
it in ``poolsplit_v1.entry`` (``sql/poolsplit_v1_entries.sql``: type, activity,
cost, base priority, created, words, tags, project, computed by the functions
of ``sql/poolsplit_v1.sql`` when the row is written). A pool-split read then
runs in one REPEATABLE READ, READ ONLY transaction (one snapshot):

- the rows the readings cannot answer for -- corrections, items in deeper
  namespaces, rows whose value the SQL functions do not read exactly, rows
  whose readings are missing or older than the row -- are read whole, as the
  store's ``search`` returns them, and go through the core's stateless engine;
- every other row is scored by the database (the default score, the core's
  float operations in the core's order) and reaches the fill a page at a
  time, best first (one statement per page and pool): rows the fill never
  pulls never leave the server.

:class:`DatabaseEngine` merges the two streams in the spec's order and is a
``poolsplit_core.poolsplit.Engine``; the fill is the core's ``fill_pools``.
Over an ``AsyncPostgresStore`` the same engine runs in a worker thread and
reads each page through the store's event loop (:class:`LoopPages`): the
transaction is the async connection's, and the loop is never blocked.
The answer is the core's over the namespace's items in (namespace, key)
code-point order (``tests/integrations/test_postgres_differential.py``).
"""

from __future__ import annotations

import asyncio
import heapq
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from contextlib import asynccontextmanager, contextmanager, nullcontext
from datetime import datetime
from importlib import resources
from typing import Any

from poolsplit_integrations._extras import require

require("langgraph.store.postgres", "postgres", "psycopg", "psycopg_pool")

from langgraph.checkpoint.postgres import _ainternal as _pg_ainternal  # noqa: E402
from langgraph.checkpoint.postgres import _internal as _pg_internal  # noqa: E402
from langgraph.store.base import SearchItem  # noqa: E402
from langgraph.store.postgres import base as _lg  # noqa: E402
from psycopg.rows import dict_row  # noqa: E402
from psycopg_pool import AsyncConnectionPool, ConnectionPool  # noqa: E402

from poolsplit_core import poolsplit as core  # noqa: E402
from poolsplit_core.prepared import _decisions  # noqa: E402
from poolsplit_integrations import _pgsql  # noqa: E402
from poolsplit_integrations._entries import item_to_entry  # noqa: E402
from poolsplit_integrations._postgres import _items  # noqa: E402

__all__ = ["DatabaseEngine", "LoopPages", "aentries_kept", "aheld", "aread_if_small",
           "aread_only", "aread_rows", "asetup_entries", "asnapshot", "backfill_sql",
           "entries_kept", "entries_sql", "held", "read_if_small", "read_only", "read_rows",
           "setup_entries", "snapshot"]

#: Below this many rows to score, reading the namespace whole and scoring it in
#: Python costs less than a statement per pool.
SCORED_FROM = 1000

_FILE = "poolsplit_v1_entries.sql"
#: Rows of a pool's first page (each next page is four times the last).
PAGE = 64


def setup_entries(conn: Any, table: str = "store") -> int:
    """Install ``poolsplit_v1`` and keep readings of ``table``'s rows (idempotent).

    The functions (:func:`poolsplit_integrations._pgsql.setup`), then the
    readings table and the triggers on ``table`` (LangGraph's ``store``, as
    the connection's ``search_path`` finds it), then the readings of the rows
    already there, in a transaction of their own (writers are not blocked: a
    row written meanwhile keeps its trigger's readings). Returns how many rows
    that last step gave readings to (0 when every row had them).
    """
    return _pgsql.run(conn, _entries_steps(conn.info.server_version, table))


async def asetup_entries(conn: Any, table: str = "store") -> int:
    """The async twin of :func:`setup_entries` (an ``AsyncConnection``, in its event loop)."""
    return await _pgsql.arun(conn, _entries_steps(conn.info.server_version, table))


def _entries_steps(server_version: int, table: str) -> _pgsql.Steps[int]:
    """The statements of :func:`setup_entries`, for the sync and the async driver alike."""
    Step, BEGIN, COMMIT = _pgsql.Step, _pgsql.BEGIN, _pgsql.COMMIT
    yield from _pgsql.setup_steps(server_version)
    yield BEGIN
    qualified = yield Step(
        "SELECT pg_catalog.quote_ident(n.nspname) || '.' || pg_catalog.quote_ident("
        "c.relname) FROM pg_catalog.pg_class AS c JOIN pg_catalog.pg_namespace AS n"
        " ON n.oid = c.relnamespace WHERE c.oid = pg_catalog.to_regclass(%s)", (table,))
    if qualified is None:
        raise RuntimeError(f"no table {table!r} in this database: run the store's setup()"
                           " first (LangGraph's migrations create it)")
    yield Step(_pgsql.LOCK_SQL)
    kept = yield Step("SELECT pg_catalog.current_setting('search_path')")
    yield Step(entries_sql(qualified), None, one=False)
    yield Step(_pgsql._RESTORE_PATH_SQL, (kept,))
    yield COMMIT
    yield BEGIN
    filled = yield Step(backfill_sql(qualified), None, one=False)
    yield COMMIT
    return max(int(filled), 0)


def entries_sql(qualified: str) -> str:
    """``sql/poolsplit_v1_entries.sql`` for the store table ``qualified`` (quoted, as SQL)."""
    text = (resources.files("poolsplit_integrations") / "sql" / _FILE).read_text("utf-8")
    return text.replace("@STORE@", qualified)


def backfill_sql(qualified: str) -> str:
    """The statement that fills in the readings of the rows ``qualified`` already holds.

    A row that has its readings (its trigger wrote them) keeps them.
    """
    return ("INSERT INTO poolsplit_v1.entry"
            " SELECT t.prefix, t.key, t.updated_at, t.created_at, r.*"
            f" FROM {qualified} AS t, LATERAL poolsplit_v1.readings(t.value, t.created_at) AS r"
            " ON CONFLICT (prefix, key) DO NOTHING")


def entries_kept(conn: Any, table: str = "store") -> bool:
    """Whether ``table``'s rows have their readings kept (:func:`setup_entries` has run)."""
    return bool(_one(conn, _KEPT_SQL, (table,)))


async def aentries_kept(conn: Any, table: str = "store") -> bool:
    """The async twin of :func:`entries_kept`."""
    cursor = conn.cursor(row_factory=_pgsql._first)
    await cursor.execute(_KEPT_SQL, (table,), prepare=False)
    return bool(await cursor.fetchone())


_KEPT_SQL = (
    "SELECT pg_catalog.to_regclass('poolsplit_v1.entry') IS NOT NULL AND EXISTS ("
    " SELECT 1 FROM pg_catalog.pg_trigger"
    " WHERE tgname = 'poolsplit_v1_entry' AND tgrelid = pg_catalog.to_regclass(%s))")


@contextmanager
def snapshot(store: Any) -> Iterator[Any]:
    """A connection of ``store`` (a PostgresStore) in a REPEATABLE READ, READ ONLY transaction."""
    with held(store) as conn, read_only(conn):
        yield conn


@contextmanager
def held(store: Any) -> Iterator[Any]:
    """A connection of ``store`` (a PostgresStore), the store's lock held when it has no pool."""
    pooled = isinstance(store.conn, ConnectionPool)
    with _pg_internal.get_connection(store.conn) as conn:
        with nullcontext() if pooled else store.lock:
            yield conn


@contextmanager
def read_only(conn: Any) -> Iterator[Any]:
    """A REPEATABLE READ, READ ONLY transaction on ``conn`` (its first statement: the snapshot)."""
    with conn.transaction():
        conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        yield conn


@asynccontextmanager
async def asnapshot(store: Any) -> AsyncIterator[Any]:
    """The async twin of :func:`snapshot` (an ``AsyncPostgresStore``, in its event loop)."""
    async with aheld(store) as conn, aread_only(conn):
        yield conn


@asynccontextmanager
async def aheld(store: Any) -> AsyncIterator[Any]:
    """The async twin of :func:`held`."""
    pooled = isinstance(store.conn, AsyncConnectionPool)
    async with _pg_ainternal.get_connection(store.conn) as conn:
        async with nullcontext() if pooled else store.lock:
            yield conn


@asynccontextmanager
async def aread_only(conn: Any) -> AsyncIterator[Any]:
    """The async twin of :func:`read_only`."""
    async with conn.transaction():
        await conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        yield conn


def read_rows(conn: Any, store: Any, prefix: Sequence[str]) -> tuple[list[SearchItem], bool]:
    """The rows the readings do not answer for, as the store's items; whether any carries a user.

    In (namespace, key) code-point order: every always-scope row, every row in
    a deeper namespace, every row that is not regular or whose readings are
    missing or stale. The flag: some row under ``prefix`` (any row) holds a
    ``user_id`` that is not null.
    """
    (rows_sql, rows_params), (users_sql, users_params) = _rows_statements(store, prefix)
    cursor = conn.cursor(binary=True, row_factory=dict_row)
    cursor.execute(rows_sql, rows_params)
    rows = cursor.fetchall()
    cursor.execute(users_sql, users_params)
    carries = bool(cursor.fetchone()["users"])
    return _items(store, rows), carries


async def aread_rows(conn: Any, store: Any, prefix: Sequence[str]
                     ) -> tuple[list[SearchItem], bool]:
    """The async twin of :func:`read_rows` (an ``AsyncConnection``)."""
    (rows_sql, rows_params), (users_sql, users_params) = _rows_statements(store, prefix)
    cursor = conn.cursor(binary=True, row_factory=dict_row)
    await cursor.execute(rows_sql, rows_params)
    rows = await cursor.fetchall()
    await cursor.execute(users_sql, users_params)
    carries = bool((await cursor.fetchone())["users"])
    return _items(store, rows), carries


_Statement = tuple[str, tuple[Any, ...]]


def _rows_statements(store: Any, prefix: Sequence[str]) -> tuple[_Statement, _Statement]:
    """:func:`read_rows`'s two statements: the rows read whole, whether some row has a user."""
    condition, params = _lg._namespace_prefix_condition(tuple(prefix))
    own = ".".join(prefix)
    expiry = _expiry(store, "store")
    return ((
        "SELECT store.prefix, store.key, store.value, store.created_at, store.updated_at,"
        " NULL AS score FROM store LEFT JOIN poolsplit_v1.entry AS e"
        " ON e.prefix = store.prefix AND e.key = store.key"
        f" WHERE {condition} {expiry} AND (store.prefix <> %s OR e.key IS NULL OR NOT e.regular"
        " OR e.always OR e.updated_at IS DISTINCT FROM store.updated_at)"
        ' ORDER BY store.prefix COLLATE "C", store.key COLLATE "C"',
        (*params, own)), (
        f"SELECT EXISTS (SELECT 1 FROM store WHERE {condition} {expiry}"
        " AND coalesce(store.value -> 'user_id', 'null'::jsonb) <> 'null'::jsonb) AS users",
        tuple(params)))


def read_if_small(store: Any, prefix: Sequence[str], conn: Any = None
                  ) -> list[SearchItem] | None:
    """Every item under ``prefix`` when it has under :data:`SCORED_FROM` rows to score, else None.

    One statement (one snapshot, one round trip): the count of the rows the
    database would score, and the items only when that count is small. Read
    on ``conn`` (in its transaction) when given, else on a cursor of ``store``.
    """
    if conn is not None:
        cur = conn.cursor(binary=True, row_factory=dict_row)
        return _small_items(store, cur.execute(*_small_statement(store, prefix)).fetchall())
    with store._cursor(pipeline=True) as cursor:
        cursor.execute(*_small_statement(store, prefix))
        rows = cursor.fetchall()
    return _small_items(store, rows)


async def aread_if_small(store: Any, prefix: Sequence[str], conn: Any = None
                         ) -> list[SearchItem] | None:
    """The async twin of :func:`read_if_small` (an ``AsyncPostgresStore``, in its loop)."""
    if conn is not None:
        cur = conn.cursor(binary=True, row_factory=dict_row)
        await cur.execute(*_small_statement(store, prefix))
        return _small_items(store, await cur.fetchall())
    async with store._cursor(pipeline=True) as cursor:
        await cursor.execute(*_small_statement(store, prefix))
        rows = await cursor.fetchall()
    return _small_items(store, rows)


def _small_statement(store: Any, prefix: Sequence[str]) -> _Statement:
    condition, params = _lg._namespace_prefix_condition(tuple(prefix))
    return (
        "WITH scored AS (SELECT pg_catalog.count(*) AS n FROM poolsplit_v1.entry"
        " WHERE prefix = %s AND regular AND active AND NOT always)"
        " SELECT store.prefix, store.key, store.value, store.created_at, store.updated_at,"
        " NULL AS score, scored.n FROM scored LEFT JOIN store ON scored.n < %s"
        f" AND {condition} {_expiry(store, 'store')}"
        ' ORDER BY store.prefix COLLATE "C", store.key COLLATE "C"',
        (".".join(prefix), SCORED_FROM, *params))


def _small_items(store: Any, rows: list[Any]) -> list[SearchItem] | None:
    if rows[0]["n"] >= SCORED_FROM:  # (the count's row is there even for no item)
        return None
    return _items(store, [row for row in rows if row["key"] is not None])


def _expiry(store: Any, table: str) -> str:
    return (f"AND ({table}.expires_at IS NULL OR {table}.expires_at > NOW())"
            if store._omit_expired else "")


# The contextual rows of one pool, scored by the database, best first. The score is
# the core's default score with the core's float operations in the core's order;
# the message words, their factors and the context's tags come from the core's query.
_CANDIDATES = """
SELECT r.key, r.cost, r.score, r.created_text, store.prefix, store.value, store.created_at,
       store.updated_at
FROM (SELECT e.key, e.cost, e.updated_at, s.score, s.created_text
      FROM poolsplit_v1.entry AS e
      CROSS JOIN LATERAL (SELECT
    e.base * poolsplit_v1.recency(e.created_us, %(now_us)s)
      * CASE WHEN pg_catalog.cardinality(e.tags) = 0
               OR pg_catalog.cardinality(%(tags)s::text[]) = 0 THEN 1.0::float8
             WHEN NOT e.tags && %(tags)s::text[] THEN 1.0::float8 + (0.5::float8 * 0::float8)
                  / pg_catalog.cardinality(e.tags)::float8
             ELSE 1.0::float8 + (0.5::float8 * pg_catalog.cardinality(ARRAY(
                    SELECT pg_catalog.unnest(e.tags)
                    INTERSECT SELECT pg_catalog.unnest(%(tags)s::text[])))::float8)
                  / pg_catalog.cardinality(e.tags)::float8 END
      * CASE WHEN e.project IS NULL THEN 1.0::float8
             WHEN e.project = %(project)s THEN 1.5::float8 ELSE 0.5::float8 END
      * (%(factors)s::float8[])[1 + CASE
            WHEN NOT e.words && %(words)s::text[] THEN 0
            WHEN %(word_set)s::tsvector IS NOT NULL
            THEN pg_catalog.length(%(word_set)s::tsvector)
                 - pg_catalog.length(pg_catalog.ts_delete(%(word_set)s::tsvector, e.words))
            ELSE pg_catalog.cardinality(ARRAY(
                   SELECT pg_catalog.unnest(e.words)
                   INTERSECT SELECT pg_catalog.unnest(%(words)s::text[]))) END] AS score,
    coalesce(e.created_text, poolsplit_v1.iso_text(e.created_at, %(zone)s), '')
      AS created_text) AS s
      WHERE e.prefix = %(prefix)s AND e.regular AND e.active AND NOT e.always
        AND (%(types)s::text[] IS NULL OR e.etype = ANY (%(types)s::text[]))
        AND e.cost <= %(tokens)s
      ORDER BY s.score DESC, s.created_text COLLATE "C", e.key COLLATE "C"
      LIMIT %(limit)s OFFSET %(offset)s) AS r
-- (only the page's rows are looked up in the store; a row whose reading is stale
-- comes back without a value -- it is read whole -- so a page keeps its length;
-- the page is ordered again, which costs nothing when the join kept its order)
LEFT JOIN LATERAL (SELECT store.prefix, store.value, store.created_at, store.updated_at
                   FROM store WHERE store.prefix = %(prefix)s AND store.key = r.key
                     AND store.updated_at = r.updated_at {expiry}) AS store ON true
ORDER BY r.score DESC, r.created_text COLLATE "C", r.key COLLATE "C"
"""


class DatabaseEngine:
    """The core's ``Engine`` over one read: the rows read whole, then the database's pages.

    ``items``/``entries``: the rows :func:`read_rows` gave that the call keeps
    (problem-free, passing ``keep``), in (namespace, key) order: they take
    positions ``0 .. len - 1`` and the core's stateless engine serves them (the
    always tier among them). Rows the database scores take the next positions
    as they arrive; ``keep`` (the call's tenant filter) is applied to them too.

    ``fetch(statement, params)``: the rows of one page, read on ``conn`` in the
    call's snapshot (default: a cursor of ``conn``, a sync connection; over an
    ``AsyncConnection``, a :class:`LoopPages`, the fill running in a thread).
    """

    def __init__(self, conn: Any, store: Any, prefix: Sequence[str],
                 items: Sequence[SearchItem], entries: Sequence[Mapping[str, Any]],
                 context: Mapping[str, Any] | None, now: datetime | None,
                 keep: Callable[[Mapping[str, Any]], bool] | None,
                 fetch: Fetch | None = None) -> None:
        self.conn, self.store, self.prefix = conn, store, tuple(prefix)
        self.fetch: Fetch = fetch if fetch is not None else _cursor_pages(conn)
        self.own = ".".join(prefix)
        self.items: list[Any] = list(items)
        self._entries: list[Mapping[str, Any]] = list(entries)
        self.call = core._Call(self._entries, context, core.default_scorer,
                               core.default_token_counter, core.default_is_active, now)
        self.fixed = len(self._entries)
        self.keep = keep
        self.costs: dict[int, int] = {}
        self.by_key: dict[str, int] = {}  # a row the database scored: its position
        self.statement = _CANDIDATES.format(expiry=_expiry(store, "store"))
        # The zone psycopg reads timestamps in (a created taken from created_at is
        # that datetime's isoformat): the connection's, or UTC when Python lacks it.
        zone = getattr(conn.info.timezone, "key", None)
        self.zone = zone if isinstance(zone, str) else "UTC"
        # The message's words as a tsvector, to count a row's shared words in one
        # step; None (counted by set intersection) when one is too long for a lexeme.
        words = self.call.query.words
        self.word_set = (None if not words or any(len(w.encode()) > 2046 for w in words)
                         else " ".join(f"'{w}'" for w in sorted(words)))

    @property
    def entries(self) -> Sequence[Mapping[str, Any]]:
        return self._entries

    def cost(self, i: int) -> int:
        return self.call.cost(i) if i < self.fixed else self.costs[i]

    def always_scope(self) -> Any:
        return self.call.always_scope()

    def candidates(self, pool: core.Pool, taken: AbstractSet[int],
                   room: core.Room) -> Iterator[core.Candidate]:
        """The pool's candidates from both sources, merged in the spec's order."""
        merged = heapq.merge(self._read_whole(pool, taken, room),
                             self._scored(pool, taken, room))
        for *_, candidate in merged:
            yield candidate

    def _read_whole(self, pool: core.Pool, taken: AbstractSet[int], room: core.Room
                    ) -> Iterator[tuple[Any, ...]]:
        entries = self._entries
        for candidate in self.call.candidates(pool, taken, room):
            entry = entries[candidate.position]
            deeper = tuple(self.items[candidate.position].namespace) != self.prefix
            yield (-candidate.score, core._sort_text(entry, "created"),
                   core._sort_text(entry, "id"), deeper, candidate.position, candidate)

    def _scored(self, pool: core.Pool, taken: AbstractSet[int], room: core.Room
                ) -> Iterator[tuple[Any, ...]]:
        query = self.call.query
        project = query.project if isinstance(query.project, str) else None
        params = {
            "now_us": self.call.now_us, "tags": sorted(query.tags), "project": project,
            "factors": list(query.message_factors), "words": sorted(query.words),
            "prefix": self.own, "types": None if pool.types is None else list(pool.types),
            "tokens": room.tokens, "zone": self.zone, "word_set": self.word_set,
        }
        offset, limit = 0, PAGE
        while True:  # pages, each read in the call's one snapshot; most pools need one
            params["limit"], params["offset"] = limit, offset
            rows = self.fetch(self.statement, params)
            for row in rows:
                if row["value"] is None:
                    continue  # its reading is stale (the row was read whole), or it expired
                i = self._position(row)
                if i is None or id(self._entries[i]) in taken:
                    continue
                yield (-row["score"], row["created_text"], row["key"], False, i,
                       core.Candidate(i, row["score"], row["cost"]))
            if len(rows) < limit:
                return
            offset, limit = offset + limit, limit * 4

    def _position(self, row: Any) -> int | None:
        """The position of a row the database scored (None: the call's filter drops it)."""
        key = row["key"]
        i = self.by_key.get(key)
        if i is not None:
            return i
        item = _lg._row_to_search_item(self.prefix, row, loader=self.store._deserializer)
        entry = item_to_entry(item.namespace, item.key, item.value, created_at=item.created_at,
                              read_from=self.prefix)
        if self.keep is not None and not self.keep(entry):
            return None
        i = len(self._entries)
        self._entries.append(entry)
        self.items.append(item)
        self.costs[i] = row["cost"]
        self.by_key[key] = i
        return i


#: Reads one page: ``fetch(statement, params)`` -> its rows (dicts).
Fetch = Callable[[str, Mapping[str, Any]], list[Any]]


def _cursor_pages(conn: Any) -> Fetch:
    """Pages read with a cursor of ``conn`` (a sync connection), in the calling thread."""
    def fetch(statement: str, params: Mapping[str, Any]) -> list[Any]:
        cursor = conn.cursor(binary=True, row_factory=dict_row)
        return list(cursor.execute(statement, params).fetchall())
    return fetch


class LoopPages:
    """Pages read on an ``AsyncConnection`` in its event loop, for a fill run in another thread.

    Each call hands the page's statement to ``loop`` and waits for its rows:
    the loop stays free while the fill runs (``asyncio.to_thread``), and the
    page is read on the call's connection, in its snapshot. Once
    :meth:`close` ran (the call's transaction ended) a page is refused.
    """

    def __init__(self, conn: Any, loop: asyncio.AbstractEventLoop) -> None:
        self.conn, self.loop, self.open = conn, loop, True

    def __call__(self, statement: str, params: Mapping[str, Any]) -> list[Any]:
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is self.loop:  # (waiting here would stop the loop that reads the page)
            raise RuntimeError("a database-scored fill cannot run in its event loop's thread")
        return asyncio.run_coroutine_threadsafe(self._page(statement, dict(params)),
                                                self.loop).result()

    def close(self) -> None:
        self.open = False

    async def _page(self, statement: str, params: dict[str, Any]) -> list[Any]:
        if not self.open:
            raise RuntimeError("this pool-split read has ended: its snapshot is gone")
        cursor = self.conn.cursor(binary=True, row_factory=dict_row)
        await cursor.execute(statement, params)
        return list(await cursor.fetchall())


def decide(engine: DatabaseEngine, pools: list[core.Pool], always_pool: bool,
           max_always_tokens: int | None) -> dict[str, list[core.Decision]]:
    """The core's fill over ``engine``: each pool's loaded Decisions, in load order.

    ``pools`` are checked already; ``always_pool`` as for ``retrieve_pools``.
    """
    filled = core.fill_pools(engine, core._call_pools(list(pools), always_pool),
                             max_always_tokens)
    # (positions are the Decisions' indices: the engine numbers the rows it read)
    return _decisions(filled, engine.entries.__getitem__, list, engine.cost)


def _one(conn: Any, query: str, params: tuple[Any, ...] = ()) -> Any:
    return _pgsql._one(conn, query, params)
