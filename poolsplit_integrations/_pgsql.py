"""Install the core's per-row readings as SQL functions, in the schema :data:`SCHEMA`.

``sql/poolsplit_v1.sql`` (package data) defines, in the schema
``poolsplit_v1``, IMMUTABLE functions that compute from one row of
LangGraph's ``store`` table exactly what the core computes for the entry the
row becomes (type, activity, scope, cost, base priority, created, words, the
default score), and ``poolsplit_v1.regular(value)``, true for the rows they
are exact on. :func:`setup` installs them once per database; :func:`installed`
says whether it has been.

The functions of a version never change once installed (an expression index
over a replaced function keeps its old values): a changed reading is a new
schema, ``poolsplit_v2``, with its own file and :data:`VERSION`.
"""

from __future__ import annotations

from collections.abc import Generator
from importlib import resources
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

if TYPE_CHECKING:
    import psycopg

__all__ = ["BEGIN", "COMMIT", "LOCK_SQL", "RECORD_SQL", "SCHEMA", "VERSION", "Step", "arun",
           "installed", "run", "setup", "setup_steps", "sql_text"]

_T = TypeVar("_T")

#: The schema the functions live in.
SCHEMA = "poolsplit_v1"
#: The version recorded in ``poolsplit_v1.installed`` once the file is installed.
VERSION = 1
#: The transaction-level advisory lock every install takes (b"poolsplt" as an int8).
_LOCK = int.from_bytes(b"poolsplt", "big")
_MIN_SERVER = 140000  # SQL-standard function bodies (RETURN / BEGIN ATOMIC)
#: The statement that takes the install's lock (in each transaction of an install).
LOCK_SQL = f"SELECT pg_catalog.pg_advisory_xact_lock({_LOCK})"
#: The statement that records :data:`VERSION`, after the file, in the file's transaction.
RECORD_SQL = (f"INSERT INTO {SCHEMA}.installed (version, installed_at)"
              f" VALUES ({VERSION}, pg_catalog.now()) ON CONFLICT (version) DO NOTHING")


def sql_text() -> str:
    """The SQL file that defines the functions (read from the package's data)."""
    return (resources.files("poolsplit_integrations") / "sql" / f"{SCHEMA}.sql").read_text(
        encoding="utf-8")


def setup(conn: psycopg.Connection[Any]) -> bool:
    """Install the functions in ``conn``'s database, once; True when this call installed them.

    Idempotent and safe to run from many connections at once: the install runs
    in one transaction under a transaction-level advisory lock, and only when
    ``poolsplit_v1.installed`` does not hold :data:`VERSION` yet (a second
    caller waits for the first, then finds it installed). ``conn`` may be in
    autocommit mode or not; without autocommit and with a transaction already
    open, the install is part of that transaction (a savepoint), committed when
    the caller commits it. Session settings are left as they were.

    Raises:
        RuntimeError: PostgreSQL older than 14, or a database whose encoding is not
            UTF8 (the functions read text as code points).
    """
    return run(conn, setup_steps(conn.info.server_version))


class Step(NamedTuple):
    """One statement of an install, for :func:`run` / :func:`arun` to execute.

    ``params`` None: sent as is (the simple protocol: it may hold several
    statements). ``one``: the statement's answer is the first column of its
    one row, else its row count.
    """

    sql: str
    params: tuple[Any, ...] | None = ()
    one: bool = True


#: Markers a step generator yields around the steps of one transaction.
BEGIN, COMMIT = "BEGIN", "COMMIT"

Steps = Generator["Step | str", Any, _T]


def setup_steps(server_version: int) -> Steps[bool]:
    """The statements of :func:`setup`, for the sync and the async driver alike."""
    if server_version < _MIN_SERVER:
        raise RuntimeError(f"{SCHEMA} needs PostgreSQL 14 or later, got server version"
                           f" {server_version}")
    yield BEGIN
    encoding = yield Step("SELECT pg_catalog.current_setting('server_encoding')")
    if encoding != "UTF8":
        raise RuntimeError(f"{SCHEMA} needs a UTF8 database, got encoding {encoding}")
    yield Step(LOCK_SQL)
    if (yield from _recorded_steps()):
        yield COMMIT
        return False
    kept = yield Step("SELECT pg_catalog.current_setting('search_path')")
    yield Step(sql_text(), None, one=False)  # several statements: the simple protocol
    yield Step(RECORD_SQL, None, one=False)
    # The file sets search_path for its own definitions (SET LOCAL): put it back, in
    # case this is a savepoint inside the caller's transaction.
    yield Step(_RESTORE_PATH_SQL, (kept,))
    yield COMMIT
    return True


#: Put the ``search_path`` read before back (the step's parameter), for this transaction.
_RESTORE_PATH_SQL = "SELECT pg_catalog.set_config('search_path', %s, true)"
_RECORDED_SQL = f"SELECT EXISTS (SELECT 1 FROM {SCHEMA}.installed WHERE version = %s)"


def run(conn: psycopg.Connection[Any], steps: Steps[_T]) -> _T:
    """Execute ``steps`` on ``conn`` (each BEGIN .. COMMIT a ``conn.transaction()``)."""
    opened: list[Any] = []
    try:
        got: Any = None
        while True:
            try:
                step = steps.send(got)
            except StopIteration as stop:
                done: _T = stop.value
                break
            got = None
            if step == BEGIN:
                opened.append(conn.transaction())
                opened[-1].__enter__()
            elif step == COMMIT:
                opened.pop().__exit__(None, None, None)
            else:
                assert isinstance(step, Step)
                cursor = conn.cursor(row_factory=_first)
                cursor.execute(step.sql, step.params, prepare=False)
                got = cursor.fetchone() if step.one else cursor.rowcount
    except BaseException as exc:
        while opened:
            opened.pop().__exit__(type(exc), exc, exc.__traceback__)
        raise
    finally:
        steps.close()
    while opened:
        opened.pop().__exit__(None, None, None)
    return done


async def arun(conn: psycopg.AsyncConnection[Any], steps: Steps[_T]) -> _T:
    """The async twin of :func:`run` (an ``AsyncConnection``, in its event loop)."""
    opened: list[Any] = []
    try:
        got: Any = None
        while True:
            try:
                step = steps.send(got)
            except StopIteration as stop:
                done: _T = stop.value
                break
            got = None
            if step == BEGIN:
                opened.append(conn.transaction())
                await opened[-1].__aenter__()
            elif step == COMMIT:
                await opened.pop().__aexit__(None, None, None)
            else:
                assert isinstance(step, Step)
                cursor = conn.cursor(row_factory=_first)
                await cursor.execute(step.sql, step.params, prepare=False)
                got = await cursor.fetchone() if step.one else cursor.rowcount
    except BaseException as exc:
        while opened:
            await opened.pop().__aexit__(type(exc), exc, exc.__traceback__)
        raise
    finally:
        steps.close()
    while opened:
        await opened.pop().__aexit__(None, None, None)
    return done


def installed(conn: psycopg.Connection[Any]) -> bool:
    """Whether :func:`setup` has installed :data:`VERSION` in ``conn``'s database."""
    def steps() -> Steps[bool]:
        yield BEGIN
        recorded = yield from _recorded_steps()
        yield COMMIT
        return recorded

    return run(conn, steps())


def _recorded_steps() -> Steps[bool]:
    """Whether :data:`VERSION` is recorded (the table of versions may not exist yet)."""
    found = yield Step("SELECT pg_catalog.to_regclass(%s) IS NOT NULL", (f"{SCHEMA}.installed",))
    return bool(found) and bool((yield Step(_RECORDED_SQL, (VERSION,))))


def _one(conn: psycopg.Connection[Any], query: str, params: tuple[Any, ...] = ()) -> Any:
    """The first column of the one row ``query`` returns (any row factory)."""
    cursor = conn.cursor(row_factory=_first)
    cursor.execute(query, params, prepare=False)
    return cursor.fetchone()


def _first(cursor: Any) -> Any:
    return lambda values: values[0]
