"""Pool-split candidates from inside PostgreSQL: the database scores, the core fills.

Once :func:`setup_entries` has run on a database (``PoolSplitStore.setup()``
runs it), each row of LangGraph's ``store`` table has its readings kept beside
it in ``poolsplit_v1.entry`` (``sql/poolsplit_v1_entries.sql``: type, activity,
cost, base priority, created, words, tags, project, computed by the functions
of ``sql/poolsplit_v1.sql`` when the row is written), and setup has recorded
them whole (:func:`repair_sql`, :func:`kept_sql`). A pool-split read then runs
in one snapshot (one statement for a small namespace, :func:`read_if_small`;
else one REPEATABLE READ, READ ONLY transaction):

- the rows the readings cannot answer for -- corrections, items in deeper
  namespaces, rows whose value the SQL functions do not read exactly -- are
  read whole, as the store's ``search`` returns them, and go through the
  core's stateless engine;
- every other row is scored by the database (the default score, the core's
  float operations in the core's order). Each pool walks its rows by (type,
  base priority, tagged) group, newest first, a page at a time, and hands a
  row on once no unread row can beat it (:class:`_Group`): rows no pool
  needs are never read, and a later pool takes up a group where an earlier
  one stopped. The store rows of the rows handed on are read after the fill,
  in one statement (when the call filters by value or the store leaves out
  expired rows: as they are handed on), and checked against their readings
  (:class:`StaleReadings` otherwise).

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
import hashlib
import heapq
import math
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from contextlib import asynccontextmanager, contextmanager, nullcontext
from datetime import datetime
from importlib import resources
from typing import Any, NamedTuple, cast

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
from poolsplit_integrations._postgres import StaleReadings, _items  # noqa: E402

__all__ = ["DatabaseEngine", "LoopPages", "SmallRead", "aentries_kept", "aheld", "aread_if_small",
           "aread_only", "aread_rows", "asetup_entries", "asnapshot", "backfill_sql",
           "done_sql", "entries_kept", "entries_sql", "held", "install_digest", "kept_sql",
           "read_if_small", "read_only", "read_rows", "repair_sql", "score_params",
           "setup_done", "setup_entries", "snapshot"]

#: Below this many rows to score, reading the namespace whole and scoring it in
#: Python costs less than a statement per pool.
SCORED_FROM = 1000

_FILE = "poolsplit_v1_entries.sql"
#: Rows of a group's first page for a pool (at least twice the entries the pool has room
#: for, at most PAGE_MOST), and the fewest store rows read at once for the rows it hands on.
PAGE = 16
PAGE_MOST = 256


def setup_entries(conn: Any, table: str = "store", *, recheck: bool = False) -> int:
    """Install ``poolsplit_v1`` and keep readings of ``table``'s rows (idempotent).

    When setup has finished for ``table`` with this release's SQL (recorded in
    ``poolsplit_v1.setup_done``; the table still kept and its trigger enabled),
    it does nothing more: a few statements whatever the table's size
    (:func:`setup_done`). Otherwise, or with ``recheck``: the functions
    (:func:`poolsplit_integrations._pgsql.setup`), then the readings table and
    the triggers on ``table`` (LangGraph's ``store``, as the connection's
    ``search_path`` finds it), then the readings of the rows already there, in
    a transaction of their own (writers are not blocked: a row written
    meanwhile keeps its trigger's readings), then, in another, every reading
    made its row's and the table recorded as kept and set up. That re-checks
    every row: ``recheck=True`` (``poolsplit-postgres recheck``) asks for it
    after writes that bypassed the triggers. Returns how many readings those
    last two steps wrote or removed (0 when every row had its own, or nothing
    was re-checked).
    """
    return _pgsql.run(conn, _entries_steps(conn.info.server_version, table, recheck))


async def asetup_entries(conn: Any, table: str = "store", *, recheck: bool = False) -> int:
    """The async twin of :func:`setup_entries` (an ``AsyncConnection``, in its event loop)."""
    return await _pgsql.arun(conn, _entries_steps(conn.info.server_version, table, recheck))


def setup_done(conn: Any, table: str = "store") -> bool:
    """Whether setup has finished for ``table`` with this release's SQL (nothing left to do).

    Recorded in ``poolsplit_v1.setup_done`` with :func:`install_digest`, the
    table still kept (:func:`entries_kept`) and its trigger enabled.
    """
    return _pgsql.run(conn, _done_steps(table))


def install_digest() -> str:
    """The digest of the SQL setup installs (both files): another release's differs."""
    text = _pgsql.sql_text() + "\0" + _entries_text()
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _done_steps(table: str) -> _pgsql.Steps[bool]:
    """:func:`setup_done` in one read-only transaction of two statements."""
    yield _pgsql.BEGIN
    done = False
    if (yield _pgsql.Step(f"SELECT pg_catalog.to_regclass('{_DONE}') IS NOT NULL")):
        done = bool((yield _pgsql.Step(_DONE_SQL, (table, install_digest(), _pgsql.VERSION))))
    yield _pgsql.COMMIT
    return done


_DONE = "poolsplit_v1.setup_done"
_DONE_SQL = (
    f"SELECT EXISTS (SELECT 1 FROM {_DONE} AS d"
    " JOIN poolsplit_v1.kept AS k ON k.store_table = d.store_table"
    " JOIN pg_catalog.pg_trigger AS t ON t.tgrelid = d.store_table"
    " WHERE d.store_table = pg_catalog.to_regclass(%s) AND d.digest = %s"
    " AND t.tgname = 'poolsplit_v1_entry' AND t.tgenabled <> 'D')"
    " AND EXISTS (SELECT 1 FROM poolsplit_v1.installed WHERE version = %s)")


def _entries_steps(server_version: int, table: str, recheck: bool = False
                   ) -> _pgsql.Steps[int]:
    """The statements of :func:`setup_entries`, for the sync and the async driver alike."""
    Step, BEGIN, COMMIT = _pgsql.Step, _pgsql.BEGIN, _pgsql.COMMIT
    if not recheck and (yield from _done_steps(table)):
        return 0
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
    yield BEGIN
    for statement in repair_sql(qualified):
        filled += yield Step(statement, None, one=False)
    yield Step(kept_sql(qualified), None, one=False)
    yield Step(done_sql(qualified), None, one=False)
    yield COMMIT
    return max(int(filled), 0)


def _entries_text() -> str:
    return (resources.files("poolsplit_integrations") / "sql" / _FILE).read_text("utf-8")


def entries_sql(qualified: str) -> str:
    """``sql/poolsplit_v1_entries.sql`` for the store table ``qualified`` (quoted, as SQL)."""
    return _entries_text().replace("@STORE@", qualified)


def backfill_sql(qualified: str) -> str:
    """The statement that fills in the readings of the rows ``qualified`` already holds.

    A row that has its readings (its trigger wrote them) keeps them.
    """
    return ("INSERT INTO poolsplit_v1.entry"
            f" SELECT {_READ_ROW.format(row='t')}"
            f" FROM {qualified} AS t, LATERAL poolsplit_v1.readings(t.value, t.created_at) AS r"
            " ON CONFLICT (prefix, key) DO NOTHING")


def repair_sql(qualified: str) -> list[str]:
    """The statements that make every reading its row's, run after :func:`backfill_sql`.

    In one transaction, each without blocking writers: a reading whose row is
    gone is removed; one older than its row, or from an install before
    ``carries_user``, is read again; a row with none gets one. A reading a
    trigger rewrote meanwhile is left as the trigger wrote it (each statement
    touches a reading only while it is what the statement read). Each
    statement's answer is its row count.
    """
    columns = ("regular", "active", "always", "etype", "cost", "base", "created_us",
               "created_text", "words", "tags", "project")
    assign = ", ".join(f"{c} = r.{c}" for c in columns)
    return [
        "WITH gone AS (SELECT e.prefix, e.key, e.updated_at FROM poolsplit_v1.entry AS e"
        f" WHERE NOT EXISTS (SELECT 1 FROM {qualified} AS t"
        " WHERE t.prefix = e.prefix AND t.key = e.key))"
        " DELETE FROM poolsplit_v1.entry AS e USING gone"
        " WHERE e.prefix = gone.prefix AND e.key = gone.key"
        " AND e.updated_at IS NOT DISTINCT FROM gone.updated_at",
        "WITH behind AS (SELECT t.prefix, t.key, t.value, t.created_at, t.updated_at,"
        " e.updated_at AS was, e.carries_user AS carried"
        f" FROM {qualified} AS t JOIN poolsplit_v1.entry AS e"
        " ON e.prefix = t.prefix AND e.key = t.key"
        " WHERE e.updated_at IS DISTINCT FROM t.updated_at OR e.carries_user IS NULL)"
        " UPDATE poolsplit_v1.entry AS e SET updated_at = b.updated_at,"
        f" created_at = b.created_at, {assign},"
        " carries_user = poolsplit_v1.carries_user(b.value)"
        " FROM behind AS b, LATERAL poolsplit_v1.readings(b.value, b.created_at) AS r"
        " WHERE e.prefix = b.prefix AND e.key = b.key"
        " AND e.updated_at IS NOT DISTINCT FROM b.was"
        " AND e.carries_user IS NOT DISTINCT FROM b.carried",
        "INSERT INTO poolsplit_v1.entry"
        f" SELECT {_READ_ROW.format(row='t')}"
        f" FROM {qualified} AS t CROSS JOIN LATERAL poolsplit_v1.readings(t.value, t.created_at)"
        " AS r WHERE NOT EXISTS (SELECT 1 FROM poolsplit_v1.entry AS e"
        " WHERE e.prefix = t.prefix AND e.key = t.key)"
        " ON CONFLICT (prefix, key) DO NOTHING",
    ]


# A store row ``{row}`` and its readings ``r``, as a row of poolsplit_v1.entry.
_READ_ROW = ("{row}.prefix, {row}.key, {row}.updated_at, {row}.created_at, r.*,"
             " poolsplit_v1.carries_user({row}.value)")


def kept_sql(qualified: str) -> str:
    """The statement that records ``qualified``'s readings whole, once :func:`repair_sql` ran.

    Reads use the readings only once it is recorded (:func:`entries_kept`).
    """
    from psycopg import sql

    return ("INSERT INTO poolsplit_v1.kept (store_table, repaired_at)"
            f" VALUES ({sql.Literal(qualified).as_string(None)}::pg_catalog.regclass,"
            " pg_catalog.now()) ON CONFLICT (store_table)"
            " DO UPDATE SET repaired_at = EXCLUDED.repaired_at")


def done_sql(qualified: str) -> str:
    """The statement that records setup finished for ``qualified``, after :func:`kept_sql`.

    With :func:`install_digest`: a later setup of this release finds it and
    stops there (:func:`setup_done`).
    """
    from psycopg import sql

    return (f"INSERT INTO {_DONE} (store_table, digest, done_at)"
            f" VALUES ({sql.Literal(qualified).as_string(None)}::pg_catalog.regclass,"
            f" {sql.Literal(install_digest()).as_string(None)}, pg_catalog.now())"
            " ON CONFLICT (store_table)"
            " DO UPDATE SET digest = EXCLUDED.digest, done_at = EXCLUDED.done_at")


def entries_kept(conn: Any, table: str = "store") -> bool:
    """Whether ``table``'s readings are whole and kept (:func:`setup_entries` has run).

    Its trigger is there and enabled, and setup recorded the readings whole
    (filled and repaired) in ``poolsplit_v1.kept``.
    """
    return _pgsql.run(conn, _kept_steps(table))


async def aentries_kept(conn: Any, table: str = "store") -> bool:
    """The async twin of :func:`entries_kept`."""
    return await _pgsql.arun(conn, _kept_steps(table))


def _kept_steps(table: str) -> _pgsql.Steps[bool]:
    if not (yield _pgsql.Step("SELECT pg_catalog.to_regclass('poolsplit_v1.kept') IS NOT NULL")):
        return False
    return bool((yield _pgsql.Step(_KEPT_SQL, (table,))))


_KEPT_SQL = (
    "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_trigger AS t"
    " JOIN poolsplit_v1.kept AS k ON k.store_table = t.tgrelid"
    " WHERE t.tgname = 'poolsplit_v1_entry' AND t.tgenabled <> 'D'"
    " AND t.tgrelid = pg_catalog.to_regclass(%s))")


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
    """A REPEATABLE READ, READ ONLY transaction on ``conn`` (its first statement: the snapshot).

    Its statements run on generic plans (:data:`_GENERIC`).
    """
    with conn.transaction():
        conn.execute(_READ_ONLY, prepare=False)
        yield conn


#: Plan this transaction's (or pipeline's) statements once per connection: each of the
#: reads' statements takes about a millisecond to plan for its parameters, longer than
#: it runs, and none needs its parameters' values to find a good plan.
_GENERIC = "SET LOCAL plan_cache_mode = force_generic_plan"
# (two statements without parameters: one round trip)
_READ_ONLY = f"SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY; {_GENERIC}"


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
        await conn.execute(_READ_ONLY, prepare=False)
        yield conn


def read_rows(conn: Any, store: Any, prefix: Sequence[str]) -> tuple[list[SearchItem], bool]:
    """The rows the readings do not answer for, as the store's items; whether any carries a user.

    In (namespace, key) code-point order: every always-scope row and every row
    whose value the functions do not read exactly (found through the
    ``entry_whole`` index), and every row in a deeper namespace. The flag:
    some row under ``prefix`` holds a ``user_id`` that is not null. One
    statement: the rest of the namespace is not read.
    """
    cursor = conn.cursor(binary=True, row_factory=dict_row)
    rows = cursor.execute(*_rows_statement(store, prefix)).fetchall()
    return _rows_read(store, rows)


async def aread_rows(conn: Any, store: Any, prefix: Sequence[str]
                     ) -> tuple[list[SearchItem], bool]:
    """The async twin of :func:`read_rows` (an ``AsyncConnection``)."""
    cursor = conn.cursor(binary=True, row_factory=dict_row)
    await cursor.execute(*_rows_statement(store, prefix))
    return _rows_read(store, await cursor.fetchall())


def _rows_statement(store: Any, prefix: Sequence[str]) -> tuple[str, dict[str, Any]]:
    """:func:`read_rows`'s statement: the flag's row, joined to the rows read whole."""
    return (f"WITH {_FLAG} SELECT whole.*, NULL AS score, flag.users FROM flag LEFT JOIN"
            f" ({_WHOLE.format(expiry=_expiry(store), extra='')}) AS whole ON true"
            ' ORDER BY whole.prefix COLLATE "C", whole.key COLLATE "C"',
            _namespace_params(prefix))


def _namespace_params(prefix: Sequence[str]) -> dict[str, Any]:
    """The parameters :data:`_FLAG` and :data:`_WHOLE` read for ``prefix``.

    A deeper namespace's prefix starts with own + "." (in byte order: up to
    own + "/"), a range the store's text_pattern_ops index serves in a
    generic plan too (a LIKE with a parameter does not).
    """
    own = ".".join(prefix)
    return {"prefix": own, "below": own + ".", "after": own + "/"}


# Whether some row under the prefix carries a user: one of the namespace's (entry_users)
# or one in a deeper namespace.
_FLAG = """flag AS (SELECT EXISTS (SELECT 1 FROM poolsplit_v1.entry AS e
                             WHERE e.prefix = %(prefix)s AND e.carries_user IS NOT FALSE)
                  OR EXISTS (SELECT 1 FROM store WHERE store.prefix ~>=~ %(below)s
                             AND store.prefix ~<~ %(after)s
                             AND poolsplit_v1.carries_user(store.value)) AS users)"""

# The rows read whole: the namespace's corrections and odd rows (entry_whole; each store
# row looked up by key) and every row in a deeper namespace; {extra}: more columns.
_WHOLE = """
    SELECT store.prefix, store.key, store.value, store.created_at, store.updated_at{extra}
    FROM poolsplit_v1.entry AS e CROSS JOIN LATERAL (
      SELECT * FROM store WHERE store.prefix = e.prefix AND store.key = e.key LIMIT 1) AS store
    WHERE e.prefix = %(prefix)s AND (NOT e.regular OR e.always) {expiry}
    UNION ALL
    SELECT store.prefix, store.key, store.value, store.created_at, store.updated_at{extra}
    FROM store WHERE store.prefix ~>=~ %(below)s AND store.prefix ~<~ %(after)s {expiry}"""


def _rows_read(store: Any, rows: list[Any]) -> tuple[list[SearchItem], bool]:
    """:func:`read_rows`'s answer from its rows (the flag's row is there even for no item)."""
    return _items(store, [row for row in rows if row["key"] is not None]), bool(rows[0]["users"])


class SmallRead(NamedTuple):
    """A namespace with fewer than :data:`SCORED_FROM` rows to score, read and scored at once."""

    items: list[SearchItem]  # the rows read whole, as read_rows reads them
    carries: bool  # some row under the prefix carries a user_id
    scored: list[Any]  # every other row: its score and sort text, its value not yet parsed


def read_if_small(store: Any, prefix: Sequence[str], conn: Any = None,
                  scoring: tuple[Mapping[str, Any] | None, datetime | None] = (None, None)
                  ) -> SmallRead | None:
    """A namespace whose rows to score are fewer than :data:`SCORED_FROM`, else None.

    One statement (one snapshot, one round trip) counts the rows the database
    would score and, only when they are few: reads whole the rows
    :func:`read_rows` reads whole, flags the users, and scores every other row
    for ``scoring`` (the call's context and ``now``), its value sent as text
    and parsed only if a pool hands it on. Read on ``conn`` (in its
    transaction) when given, else on a cursor of ``store``.
    """
    if conn is not None:
        cursor = conn.cursor(binary=True, row_factory=dict_row)
        return _small_read(store, prefix, cursor.execute(
            *_small_statement(store, prefix, scoring)).fetchall())
    with store._cursor(pipeline=True) as cursor:  # (one implicit transaction: SET LOCAL holds)
        cursor.execute(_GENERIC)
        cursor.execute(*_small_statement(store, prefix, scoring))
        rows = cursor.fetchall()
    return _small_read(store, prefix, rows)


async def aread_if_small(store: Any, prefix: Sequence[str], conn: Any = None,
                         scoring: tuple[Mapping[str, Any] | None, datetime | None] = (None, None)
                         ) -> SmallRead | None:
    """The async twin of :func:`read_if_small` (an ``AsyncPostgresStore``, in its loop)."""
    if conn is not None:
        cursor = conn.cursor(binary=True, row_factory=dict_row)
        await cursor.execute(*_small_statement(store, prefix, scoring))
        return _small_read(store, prefix, await cursor.fetchall())
    async with store._cursor(pipeline=True) as cursor:
        await cursor.execute(_GENERIC)
        await cursor.execute(*_small_statement(store, prefix, scoring))
        rows = await cursor.fetchall()
    return _small_read(store, prefix, rows)


def _small_statement(store: Any, prefix: Sequence[str],
                     scoring: tuple[Mapping[str, Any] | None, datetime | None]
                     ) -> tuple[str, dict[str, Any]]:
    call = core._Call([], scoring[0], core.default_scorer, core.default_token_counter,
                      core.default_is_active, scoring[1])
    expiry = _expiry(store)
    whole = _WHOLE.format(expiry=expiry, extra=(
        ", false AS scored, NULL::bytea AS text, NULL::float8 AS score,"
        " NULL::text AS created_text, NULL::text AS etype, NULL::int8 AS cost,"
        " NULL::timestamptz AS read_at"))
    statement = _SMALL.format(flag=_FLAG, whole=whole, expiry=expiry, score=_SCORE)
    return statement, {**_namespace_params(prefix), "most": SCORED_FROM, **score_params(call)}


# (counted up to SCORED_FROM along entry_walk; the rest runs only below it)
_SMALL = """
WITH counted AS (SELECT pg_catalog.count(*) AS n FROM (
       SELECT 1 FROM poolsplit_v1.entry WHERE prefix = %(prefix)s AND regular AND active
       AND NOT always ORDER BY prefix, etype, base LIMIT %(most)s) AS c),
     {flag}
SELECT counted.n, flag.users, r.* FROM counted CROSS JOIN flag LEFT JOIN LATERAL (
  SELECT * FROM ({whole}
    UNION ALL
    SELECT store.prefix, e.key, NULL, store.created_at, store.updated_at, true,
           pg_catalog.convert_to(store.value::text, 'UTF8'), {score}, e.created_text,
           e.etype, e.cost, e.updated_at
    FROM poolsplit_v1.entry AS e JOIN store ON store.key = e.key
    WHERE e.prefix = %(prefix)s AND store.prefix = %(prefix)s
      AND e.regular AND e.active AND NOT e.always {expiry}
  ) AS u WHERE counted.n < %(most)s OFFSET 0) AS r ON true
ORDER BY r.scored, r.prefix COLLATE "C", r.key COLLATE "C"
"""


def _small_read(store: Any, prefix: Sequence[str], rows: list[Any]) -> SmallRead | None:
    first = rows[0]  # (the count's row is there even for no item)
    if first["n"] >= SCORED_FROM:
        return None
    whole, scored = [], []
    for row in rows:
        if row["scored"]:
            if row["updated_at"] != row["read_at"]:
                raise _stale(row["key"], ".".join(prefix))
            row["value"] = row["text"]  # (parsed by the store's loader if a pool takes it)
            row["created_text"] = _sort_created(row)
            scored.append(row)
        elif row["key"] is not None:
            whole.append(row)
    return SmallRead(_items(store, whole), bool(first["users"]), scored)


def _expiry(store: Any) -> str:
    """:func:`_live` as a further condition of a WHERE (none when nothing is left out)."""
    return f"AND {_live(store)}" if store._omit_expired else ""


def _live(store: Any) -> str:
    """Whether a ``store`` row is one the store's reads return (not expired), as SQL."""
    return ("(store.expires_at IS NULL OR store.expires_at > NOW())"
            if store._omit_expired else "true")


# A row's score: the core's default score with the core's float operations in the core's
# order (the message words, their factors and the context's tags are the core's query's:
# :func:`score_params`). (Its created as sort text: :func:`_sort_created`.)
_SCORE = f"""e.base * poolsplit_v1.recency(e.created_us, %(now_us)s)
      * CASE WHEN pg_catalog.cardinality(e.tags) = 0
               OR pg_catalog.cardinality(%(tags)s::text[]) = 0 THEN 1.0::float8
             WHEN NOT e.tags && %(tags)s::text[]
             THEN 1.0::float8 + ({core._TAG_WEIGHT!r}::float8 * 0::float8)
                  / pg_catalog.cardinality(e.tags)::float8
             ELSE 1.0::float8 + ({core._TAG_WEIGHT!r}::float8 * pg_catalog.cardinality(ARRAY(
                    SELECT pg_catalog.unnest(e.tags)
                    INTERSECT SELECT pg_catalog.unnest(%(tags)s::text[])))::float8)
                  / pg_catalog.cardinality(e.tags)::float8 END
      * CASE WHEN e.project IS NULL THEN {core._PROJECT_NONE!r}::float8
             WHEN e.project = %(project)s THEN {core._PROJECT_MATCH!r}::float8
             ELSE {core._PROJECT_OTHER!r}::float8 END
      * (%(factors)s::float8[])[1 + CASE
            WHEN NOT e.words && %(words)s::text[] THEN 0
            WHEN %(word_set)s::tsvector IS NOT NULL
            THEN pg_catalog.length(%(word_set)s::tsvector)
                 - pg_catalog.length(pg_catalog.ts_delete(%(word_set)s::tsvector, e.words))
            ELSE pg_catalog.cardinality(ARRAY(
                   SELECT pg_catalog.unnest(e.words)
                   INTERSECT SELECT pg_catalog.unnest(%(words)s::text[]))) END] AS score"""


# The (type, base priority, tagged) groups of a namespace's contextual rows, one index
# probe each (a loose scan of entry_walk), in that order.
_GROUPS = """
WITH RECURSIVE g AS (
  (SELECT e.etype, e.base, pg_catalog.cardinality(e.tags) > 0 AS tagged
   FROM poolsplit_v1.entry AS e
   WHERE e.prefix = %(prefix)s AND e.regular AND e.active AND NOT e.always
   ORDER BY e.etype, e.base, pg_catalog.cardinality(e.tags) > 0 LIMIT 1)
  UNION ALL
  SELECT n.etype, n.base, n.tagged FROM g CROSS JOIN LATERAL (
    SELECT e.etype, e.base, pg_catalog.cardinality(e.tags) > 0 AS tagged
    FROM poolsplit_v1.entry AS e
    WHERE e.prefix = %(prefix)s AND e.regular AND e.active AND NOT e.always
      AND (e.etype, e.base, pg_catalog.cardinality(e.tags) > 0) > (g.etype, g.base, g.tagged)
    ORDER BY e.etype, e.base, pg_catalog.cardinality(e.tags) > 0 LIMIT 1) AS n)
SELECT etype, base, tagged FROM g
"""

# The next rows of some groups, each group newest first after its cursor (entry_walk's
# order), scored. (A row's store row is read only once a pool hands it on: _VALUES.)
_PAGE = f"""
SELECT g.n AS grp, r.key, r.cost, r.walk, r.score, r.created_text, r.created_at,
       r.updated_at AS read_at
FROM ROWS FROM (pg_catalog.unnest(%(etypes)s::text[]), pg_catalog.unnest(%(bases)s::float8[]),
               pg_catalog.unnest(%(tagged)s::bool[]), pg_catalog.unnest(%(after)s::int8[]),
               pg_catalog.unnest(%(after_keys)s::text[]), pg_catalog.unnest(%(until)s::int8[]),
               pg_catalog.unnest(%(limits)s::int4[]))
     WITH ORDINALITY AS g(etype, base, tagged, after, after_key, until, lim, n)
CROSS JOIN LATERAL (
  SELECT e.key, e.cost, e.updated_at, -coalesce(e.created_us, 9223372036854775807) AS walk,
         {_SCORE}, e.created_text, e.created_at
  FROM poolsplit_v1.entry AS e
  WHERE e.prefix = %(prefix)s AND e.regular AND e.active AND NOT e.always
    AND e.etype = g.etype AND e.base = g.base AND (pg_catalog.cardinality(e.tags) > 0) = g.tagged
    AND (-coalesce(e.created_us, 9223372036854775807), e.key) > (g.after, g.after_key)
    AND -coalesce(e.created_us, 9223372036854775807) <= g.until
    AND e.cost <= %(tokens)s
  ORDER BY -coalesce(e.created_us, 9223372036854775807), e.key
  LIMIT g.lim) AS r
"""

# The store rows of some keys of the namespace: the rows a pool hands on, read as items
# (and checked against their readings).
_VALUES = """
SELECT store.prefix, store.key, store.value, store.created_at, store.updated_at, {live} AS live
FROM store WHERE store.prefix = %(prefix)s AND store.key = ANY (%(keys)s::text[])
"""

#: A group's cursor before its first row (every row's walk key is above it), and the
#: cut that reads a group to its end. A row's walk key is -created_us (undated: -_END).
_BEFORE, _END = -(1 << 63), (1 << 63) - 1


class _Group:
    """One (type, base, tagged) group of a pool's rows, read newest first a page at a time.

    ``bound``: no unread row of the group scores above it -- the group's base,
    the recency of the newest unread row at most, every context factor at
    its ceiling (the tag factor's is 1 for a group without tags), multiplied
    in the core's order (IEEE rounding is monotone, so the product of the
    ceilings bounds the product of the factors). ``rows``: every row the
    group's pages gave, for each pool of the call that draws from it.
    """

    __slots__ = ("after", "after_key", "base", "bound", "ceilings", "done", "etype", "limit",
                 "rows", "tagged")

    def __init__(self, etype: str, base: float, tagged: bool,
                 ceilings: tuple[float, float, float], limit: int) -> None:
        self.etype, self.base, self.tagged, self.limit = etype, base, tagged, limit
        self.ceilings = ceilings  # (tags, project, message)
        self.after, self.after_key, self.done = _BEFORE, "", False  # the last row read
        self.rows: list[Any] = []
        # a base that is not positive gives scores of at most 0 whatever the recency
        self.bound = core._score(base, 1.0, *ceilings) if base > 0 else 0.0

    def cut(self, target: float | None, now_us: int) -> tuple[int, int]:
        """``(until, limit)`` of this group's next page: its next ``limit`` rows, up to ``until``.

        Each page is four times the last. With a target (the score the rows the
        pool holds must beat), the page also stops at the rows too old for
        their recency to reach it (the recency solved for, a second of margin;
        the bound of what is left is then computed from what was read): a page
        that finds better rows raises the target, and the next cut comes sooner.
        """
        limit, self.limit = self.limit, self.limit * 4
        if target is not None and self.base > 0:
            least = target / core._score(self.base, 1.0, *self.ceilings)  # recency to get under
            if least > core._RECENCY_FLOOR:
                age_days = (1.0 - least) * core._DECAY_DAYS / core._RECENCY_DROP
                until = -int(now_us - age_days * core._DAY_SECONDS * 1e6 - 1e6)
                if until > self.after:  # (else the cursor is past it: page on)
                    return until, limit
        return _END, limit

    def read(self, rows: list[Any], until: int, limit: int, now_us: int) -> None:
        """Move past ``rows``, the page this group read (up to ``until``, ``limit`` rows)."""
        self.rows.extend(rows)
        if rows:
            self.after, self.after_key = rows[-1]["walk"], rows[-1]["key"]
        if len(rows) < limit:  # every row up to the cut is read
            if until == _END:
                self.done = True
                return
            seen = until
        else:
            seen = self.after
        if self.base > 0:  # (unread rows are no newer than `seen`: -seen is a created_us)
            self.bound = core._score(self.base, core._recency(-seen, now_us), *self.ceilings)


class DatabaseEngine:
    """The core's ``Engine`` over one read: the rows read whole, then the database's pages.

    ``items``/``entries``: the rows :func:`read_rows` gave that the call keeps
    (problem-free, passing its filters), in (namespace, key) order: they take
    positions ``0 .. len - 1`` and the core's stateless engine serves them (the
    always tier among them). Rows the database scores take the next positions
    as they arrive; ``keep`` (the call's tenant filter) is applied to them.
    With no ``keep`` and a store that does not leave out expired rows, their
    store rows are read after the fill (:meth:`resolve`), all at once.

    ``fetch(statement, params)``: the rows of one page, read on ``conn`` in the
    call's snapshot (default: a cursor of ``conn``, a sync connection; over an
    ``AsyncConnection``, a :class:`LoopPages`, the fill running in a thread).
    """

    def __init__(self, conn: Any, store: Any, prefix: Sequence[str],
                 items: Sequence[SearchItem], entries: Sequence[Mapping[str, Any]],
                 context: Mapping[str, Any] | None, now: datetime | None,
                 keep: Callable[[Mapping[str, Any]], bool] | None,
                 fetch: Fetch | None = None, scored: list[Any] | None = None) -> None:
        self.conn, self.store, self.prefix = conn, store, tuple(prefix)
        self.fetch: Fetch = fetch if fetch is not None else _cursor_pages(conn)
        # a small namespace's rows, every one scored (no pages to read), in the spec's order
        self.scored = None if scored is None else sorted(scored, key=_rank)
        self.own = ".".join(prefix)
        self.items: list[Any] = list(items)
        self._entries: list[Mapping[str, Any]] = list(entries)
        self.call = core._Call(self._entries, context, core.default_scorer,
                               core.default_token_counter, core.default_is_active, now)
        self.fixed = len(self._entries)
        self.keep = keep
        self.costs: dict[int, int] = {}
        self.by_key: dict[str, int] = {}  # a row the database scored: its position
        self.statement, self.values = _PAGE, _VALUES.format(live=_live(store))
        self.groups: list[tuple[str, float, bool]] | None = None  # read when first needed
        # Each group as far as the call's pools read it, with its rows read: a pool that
        # draws from a group an earlier pool read goes on from there. Pages leave out the
        # rows costing more than ``tokens``, the most any pool of the call holds (set by
        # decide(); None: no row is left out), so what one pool read serves every pool.
        self.walked: dict[tuple[str, float, bool], _Group] = {}
        self.tokens: int | None = None
        # Without a filter to apply to values and without expiry, the fill needs no
        # candidate's store row: each is read after it, all in one statement (resolve).
        self.deferred = keep is None and not store._omit_expired
        self.pending: dict[int, Any] = {}  # position -> a row handed on, its store row unread

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
        """The pool's rows the database scores, best first, read a page of each group at a time.

        A row is handed on once its score is above every group's bound (no
        unread row can come before it); else the groups whose bound is not
        below the best row held read their next page. A group ends when a
        page comes back short. Pages leave out the rows costing more than any
        pool of the call holds (they could never load). A group an earlier
        pool read is taken up where it stopped, with the rows it read that
        no pool loaded.
        """
        if self.scored is not None:
            yield from self._ranked(pool, taken, room)
            return
        query = self.call.query
        ceilings = (core._tag_share(1, 1) if query.tags else 1.0,
                    max(core._PROJECT_MATCH, core._PROJECT_NONE) if isinstance(query.project, str)
                    else core._PROJECT_NONE,
                    max(query.message_factors))
        params = {"prefix": self.own, **score_params(self.call)}
        if self.groups is None:
            self.groups = [(row["etype"], row["base"], row["tagged"])
                           for row in self.fetch(_GROUPS, {"prefix": self.own})]
        first = min(max(PAGE, 2 * room.entries), PAGE_MOST)
        untagged = (1.0, *ceilings[1:])  # (an untagged row's tag factor is 1)
        tokens = _END if self.tokens is None else self.tokens
        held: list[tuple[float, str, str, Any]] = []  # (-score, created, key, row)
        groups = []
        for etype, base, tagged in self.groups:
            if not pool.accepts(etype):
                continue
            group = self.walked.get((etype, base, tagged))
            if group is None:
                group = self.walked[etype, base, tagged] = _Group(
                    etype, base, tagged, ceilings if tagged else untagged, first)
            groups.append(group)
            for row in group.rows:  # what earlier pools read of it, still to be had
                if not self._taken(row["key"], taken):
                    heapq.heappush(held, (*_rank(row), row))
        while True:
            bound = max((g.bound for g in groups if not g.done), default=None)
            while held and (bound is None or -held[0][0] > bound):
                if not self.deferred and "value" not in held[0][3]:
                    # the store rows of the next rows to hand on, read at once
                    want = max(PAGE, 2 * room.entries)
                    self._read_values([h[3] for h in heapq.nsmallest(want, held)
                                       if bound is None or -h[0] > bound])
                row = heapq.heappop(held)[3]
                if not row.get("live", True):
                    continue  # it expired: the store's reads leave it out
                i = self._position(row)
                if i is None or id(self._entries[i]) in taken:
                    continue
                yield _candidate(row, i)
            if bound is None:
                return
            # the score the rows held must beat for the pool to fill: its k-th best
            slots = max(room.entries, 1)
            target = -heapq.nsmallest(slots, held)[-1][0] if len(held) >= slots else None
            least = target if target is not None else (-held[0][0] if held else -math.inf)
            reading = [g for g in groups if not g.done and g.bound >= least]
            cuts = [g.cut(target, self.call.now_us) for g in reading]
            params.update(
                etypes=[g.etype for g in reading], bases=[g.base for g in reading],
                tagged=[g.tagged for g in reading],
                after=[g.after for g in reading], after_keys=[g.after_key for g in reading],
                until=[c[0] for c in cuts], limits=[c[1] for c in cuts], tokens=tokens)
            pages: list[list[Any]] = [[] for _ in reading]
            for row in self.fetch(self.statement, params):
                row["created_text"] = _sort_created(row)
                pages[row["grp"] - 1].append(row)
                if not self._taken(row["key"], taken):  # (an earlier pool loaded it)
                    heapq.heappush(held, (*_rank(row), row))
            for group, page, (until, limit) in zip(reading, pages, cuts):
                group.read(page, until, limit, self.call.now_us)

    def _ranked(self, pool: core.Pool, taken: AbstractSet[int], room: core.Room
                ) -> Iterator[tuple[Any, ...]]:
        """A small namespace's scored rows of the pool, in order (read by :func:`read_if_small`)."""
        tokens = room.tokens
        for row in cast(list[Any], self.scored):
            if not pool.accepts(row["etype"]) or row["cost"] > tokens:
                continue
            i = self._position(row)
            if i is None or id(self._entries[i]) in taken:
                continue
            yield _candidate(row, i)

    def _taken(self, key: str, taken: AbstractSet[int]) -> bool:
        """Whether the row of ``key`` is an entry an earlier pool of the call loaded."""
        i = self.by_key.get(key)
        return i is not None and id(self._entries[i]) in taken

    def resolve(self) -> None:
        """The store rows of the rows handed on without them (``deferred``), read at once."""
        if not self.pending:
            return
        self._read_values(list(self.pending.values()))
        for i, row in self.pending.items():
            self.items[i], self._entries[i] = self._item(row)
        self.pending.clear()

    def _read_values(self, rows: list[Any]) -> None:
        """Give ``rows`` (rows the database scored) their store rows, read in one statement."""
        wanted = {row["key"]: row for row in rows if "value" not in row}
        for stored in self.fetch(self.values, {"prefix": self.own, "keys": list(wanted)}):
            row = wanted[stored["key"]]
            if stored["updated_at"] != row["read_at"]:
                break
            row.update(stored)
        for key, row in wanted.items():
            if "value" not in row:  # its row is gone, or newer than its reading
                raise _stale(key, self.own)

    def _position(self, row: Any) -> int | None:
        """The position of a row the database scored (None: the call's filter drops it)."""
        key = row["key"]
        i = self.by_key.get(key)
        if i is not None:
            return i
        i = len(self._entries)
        if "value" in row:
            item, entry = self._item(row)
            if self.keep is not None and not self.keep(entry):
                return None
        else:  # (deferred: the fill reads only the entry's identity until resolve())
            item, entry = None, {"id": key}
            self.pending[i] = row
        self._entries.append(entry)
        self.items.append(item)
        self.costs[i] = row["cost"]
        self.by_key[key] = i
        return i

    def _item(self, row: Any) -> tuple[SearchItem, dict[str, Any]]:
        """A scored row, its store row read, as the store's item and the core's entry."""
        item = _lg._row_to_search_item(self.prefix, row, loader=self.store._deserializer)
        return item, item_to_entry(item.namespace, item.key, item.value,
                                   created_at=item.created_at, read_from=self.prefix)


def score_params(call: core._Call) -> dict[str, Any]:
    """What :data:`_SCORE` reads: ``call``'s query and ``now``."""
    query = call.query
    # The message's words as a tsvector, to count a row's shared words in one step;
    # None (counted by set intersection) when one is too long for a lexeme.
    words = query.words
    word_set = (None if not words or any(len(w.encode()) > 2046 for w in words)
                else " ".join(f"'{w}'" for w in sorted(words)))
    return {"now_us": call.now_us, "tags": sorted(query.tags),
            "project": query.project if isinstance(query.project, str) else None,
            "factors": list(query.message_factors), "words": sorted(words),
            "word_set": word_set}


def _sort_created(row: Any) -> str:
    """A scored row's created as the spec's sort text (the core's ``_sort_text``).

    The value's own ``created`` string when it has one, else the row's
    ``created_at`` as the entry holds it: the datetime psycopg read, in the
    connection's time zone, written by ``isoformat()``.
    """
    text = row["created_text"]
    if text is not None:
        return cast(str, text)
    created_at = row["created_at"]
    return "" if created_at is None else cast(str, created_at.isoformat())


def _rank(row: Any) -> tuple[float, str, str]:
    """A scored row's place in the spec's order (its key is its id, unique in the namespace)."""
    return -row["score"], row["created_text"], row["key"]


def _candidate(row: Any, i: int) -> tuple[Any, ...]:
    """A scored row at position ``i`` as :meth:`DatabaseEngine.candidates` merges it."""
    return (*_rank(row), False, i, core.Candidate(i, row["score"], row["cost"]))


def _stale(key: str, own: str) -> StaleReadings:
    return StaleReadings(f"the reading of {key!r} under {own!r} is not its row's;"
                         " run poolsplit-postgres recheck on the database to repair it")


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
    engine.tokens = max((pool.max_tokens for pool in pools), default=None)
    filled = core.fill_pools(engine, core._call_pools(list(pools), always_pool),
                             max_always_tokens)
    engine.resolve()
    # (positions are the Decisions' indices: the engine numbers the rows it read)
    return _decisions(filled, engine.entries.__getitem__, list, engine.cost)


def _one(conn: Any, query: str, params: tuple[Any, ...] = ()) -> Any:
    return _pgsql._one(conn, query, params)
