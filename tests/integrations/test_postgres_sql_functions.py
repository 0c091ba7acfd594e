"""The SQL functions of ``poolsplit_v1`` against the Python core, bit for bit, on a real PostgreSQL.

Rows are written to LangGraph's own ``store`` table under private prefixes
(``poolsplit_sqlfn.<hex>``, deleted afterwards) and read back the way the
integrations read them (``_postgres.read_namespace``: psycopg's jsonb and
timestamptz loaders, LangGraph's items), then mapped with ``item_to_entry``.
The Python side of every comparison is the core's own functions on that entry;
the SQL side is one query over the same rows. For every row
``poolsplit_v1.regular(value)`` accepts, every reading must be equal (floats by
their bits), and ``checks.entry_problems`` must find nothing.

Seeded (``random.Random``) values mix typical entries with adversarial ones:
Unicode (CJK, U+212A, U+0130, combining marks, full-width forms), every
timestamp shape ``_ISO`` accepts and near misses, leap days, offsets up to
+-23:59 and past, fractions of 1-9 digits, odd ``token_count``,
``base_priority`` (raw JSON number text: ``1e2``, ``2.50``, ``1e400``, huge
integers), duplicate tags, missing fields, JSON null. Hypothesis adds
timestamps drawn from ``_ISO`` itself and arbitrary text for W.
"""

from __future__ import annotations

import json
import random
import re
import threading
import uuid
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from typing import Any

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langgraph.store.postgres import PostgresStore
from psycopg.pq import TransactionStatus
from psycopg.rows import dict_row

from poolsplit_core.checks import entry_problems
from poolsplit_core.poolsplit import (
    _ISO,
    _PLAIN,
    Pool,
    _base_priority,
    _content,
    _cost,
    _default_score,
    _epoch_us,
    _label,
    _Query,
    _sort_text,
    _time_us,
    _word_sets,
    default_is_active,
    default_token_counter,
    explain_pools,
)
from poolsplit_integrations import _pgsql
from poolsplit_integrations._entries import item_to_entry
from poolsplit_integrations._postgres import read_namespace
from tests.time_corpus import CORPUS

LABEL = "poolsplit_sqlfn"
ZONES = ("Asia/Kolkata", "America/St_Johns")
UTC = timezone.utc


# -- connections and private namespaces -------------------------------------------


def _connect(uri: str, zone: str = "UTC", **kwargs: Any) -> psycopg.Connection[Any]:
    return psycopg.connect(uri, autocommit=True, prepare_threshold=0, row_factory=dict_row,
                           options=f"-c TimeZone={zone}", **kwargs)


@pytest.fixture(scope="module")
def uri(postgres_ready: str) -> Iterator[str]:
    with _connect(postgres_ready) as conn:
        _pgsql.setup(conn)
    yield postgres_ready
    with _connect(postgres_ready) as conn:
        conn.execute("DELETE FROM store WHERE prefix LIKE %s", (LABEL + ".%",))


def _namespace() -> tuple[str, str]:
    return (LABEL, uuid.uuid4().hex)


class Raw:
    """A JSON number written as this exact text (``1e2``, ``2.50``, a huge integer)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return f"Raw({self.text!r})"


def _dumps(value: Any) -> str:
    if isinstance(value, Raw):
        return value.text
    if isinstance(value, dict):
        return "{" + ",".join(f"{json.dumps(k)}:{_dumps(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ",".join(map(_dumps, value)) + "]"
    return json.dumps(value)


def _insert(conn: psycopg.Connection[Any], namespace: tuple[str, ...],
            rows: list[tuple[Any, datetime | None]]) -> list[str]:
    """Write ``(value, created_at)`` rows under ``namespace``; their keys, in order."""
    prefix = ".".join(namespace)
    keys = [f"k{i:05d}" for i in range(len(rows))]
    with conn.cursor() as cur:
        cur.executemany(
            "INSERT INTO store (prefix, key, value, created_at, updated_at)"
            " VALUES (%s, %s, %s::jsonb, %s, %s)",
            [(prefix, key, _dumps(value), created, created)
             for key, (value, created) in zip(keys, rows)])
    return keys


def _entries(conn: psycopg.Connection[Any], namespace: tuple[str, ...]
             ) -> list[tuple[str, dict[str, Any]]]:
    """(key, entry) of each row, read as the integrations read a PostgreSQL store."""
    items = read_namespace(PostgresStore(conn), namespace)
    return [(item.key, item_to_entry(item.namespace, item.key, item.value,
                                     created_at=item.created_at, read_from=namespace))
            for item in items]


# -- random values ----------------------------------------------------------------

WORDS = ("rotate", "database", "credentials", "deploy", "kernel", "postgres", "istanbul",
         "migration", "cache", "latency", "python", "x86", "v2", "abc", "ok", "go", "db",
         "the", "and", "with", "from", "only", "release", "2026", "k8s", "tokyo")
ODD = ("\u212aernel", "\u0130stanbul", "KELVIN", "\uff26\uff55\uff4c\uff4c",
       "\uff21\uff22\uff23\uff11\uff12\uff13", "数据库迁移", "東京",
       "nai\u0308ve", "n\u0303o", "ΣΊΣΥΦΟΣ", "straße", "😀", "é", "\u00a0", "\u3000", "\u2028",
       "ǅ", "ﬁle", "Ⅻ", "①", "\u200b", "İi", "K\u212a", "a\u0130b", "x\u212ay")
SEPARATORS = (" ", " ", " ", "-", "_", ".", ", ", "\n", "/", "\t", "'", "\u3000")
SPACES = ("\t", "\n", "\x0b", "\x0c", "\r", "\x1c", "\x1f", " ", "\x85", "\xa0", "\u1680",
          "\u2000", "\u200a", "\u2028", "\u2029", "\u202f", "\u205f", "\u3000")
TAGS = ("db", "ops", "prod", "K", "k", "数据", "", " db", "DB", "\u212a")
PROJECTS = ("atlas", "Atlas", "orion", "數據", "")


def _text(rng: random.Random, size: int = 40) -> str:
    parts = []
    for _ in range(rng.randrange(size)):
        word = rng.choice(ODD) if rng.random() < 0.25 else rng.choice(WORDS)
        shape = rng.random()
        word = word.upper() if shape < 0.15 else word.title() if shape < 0.3 else word
        parts.append(word)
        parts.append(rng.choice(SEPARATORS))
    return "".join(parts)


def _iso(rng: random.Random) -> str:
    """A string in one of the shapes ``_ISO`` reads, often valid, sometimes a near miss."""
    if rng.random() < 0.25:  # isoformat()'s own shape (the core's fromisoformat path)
        moment = datetime(2000, 1, 1, tzinfo=UTC) + timedelta(
            microseconds=rng.randrange(-10**15, 10**15))
        offset = timedelta(minutes=rng.randrange(-1439, 1440))
        written = moment.astimezone(timezone(offset)) if rng.random() < 0.7 else moment.replace(
            tzinfo=None)
        if rng.random() < 0.3:
            written = written.replace(microsecond=0)
        return written.isoformat()
    year = rng.choice((1, 4, 100, 1900, 1970, 2000, 2023, 2024, 2025, 2026, 9999, 0,
                       rng.randrange(1, 10000)))
    month = rng.choice((*range(1, 13), 2, 2, 0, 13))
    day = rng.choice((1, 15, 28, 29, 29, 30, 31, 0, 32, rng.randrange(1, 29)))
    text = f"{year:04d}-{month:02d}-{day:02d}"
    shape = rng.randrange(6)
    if shape:
        text += rng.choice("TTTt ") + f"{rng.choice((0, 9, 12, 23, 23, 24, 25)):02d}"
    if shape >= 2:
        text += f":{rng.choice((0, 30, 59, 59, 60, 99)):02d}"
    if shape >= 3:
        text += f":{rng.choice((0, 1, 30, 59, 59, 60)):02d}"
    if shape >= 4:
        text += rng.choice(".,.") + "".join(rng.choice("0123456789")
                                            for _ in range(rng.randint(1, 9)))
    text += rng.choice(("", "", "", " ", "\u3000", "\t ", "\xa0"))
    zone = rng.randrange(7)
    hours = rng.choice((0, 1, 5, 14, 23, 23, 24, 99))
    minutes = rng.choice((0, 30, 45, 59, 59, 60, 99))
    sign = rng.choice("+-")
    text += ("", "Z", "z", f"{sign}{hours:02d}", f"{sign}{hours:02d}{minutes:02d}",
             f"{sign}{hours:02d}:{minutes:02d}", f"{sign}{hours:02d}:{minutes:02d}")[zone]
    if rng.random() < 0.3:
        text = "".join(rng.choice(SPACES) for _ in range(rng.randint(1, 2))) + text
    if rng.random() < 0.3:
        text += "".join(rng.choice(SPACES) for _ in range(rng.randint(1, 2)))
    if rng.random() < 0.2:  # a near miss: one character changed, dropped or added
        at = rng.randrange(len(text) + 1)
        what = rng.randrange(3)
        if what == 0 and at < len(text):
            text = text[:at] + rng.choice("0\uff11:+-ZT .x") + text[at + 1:]
        elif what == 1:
            text = text[:at] + text[at + 1:]
        else:
            text = text[:at] + rng.choice("0:+-Z .\u3000") + text[at:]
    return text


NEAR_MISSES = (
    "2026-1-01", "2026-01-1", "26-01-01", "2026-01-01T1", "2026-01-01T10:0", "2026-01-01T10:00:0",
    "2026-01-01T10:00:00.", "2026-01-01T10:00:00+5", "2026-01-01T10:00:00+05:3",
    "2026-01-01T10:00:00+05:30:00", "2026-01-01T24:00:01", "2026-01-01T24:00",
    "2026-01-01T23:60",
    "2026-01-01T23:59:60", "\uff12\uff10\uff12\uff16-01-01", "2026-01-01T10:00:00ZZ",
    "2026-01-01T10.5",
    "20260101", "2026-W01-1", "2026-01-01T10:00:00+24:00", "2026-01-01T10:00:00-23:60",
    "2026-01-01x10:00", "2026-01-01T10:00:00 Z x", "2023-02-29", "1900-02-29", "2026-04-31",
    "0000-01-01", "2026-00-10", "2026-13-01", "2026-01-01T10,5", "2026-01-01T10:00:00.5.5",
    "2026-01-01T10:00:00\u2060Z", "2026-01-01\u200bT10", "", " ", "now", "2026-01-01T",
)
GOOD_TIMES = (
    "2024-02-29", "2000-02-29T12:00:00Z", "2026-01-31T09:00:00Z", "2026-01-31T09:00:00z",
    "2026-01-31t09:00", "2026-01-31 09", "2026-01-31T09:00:00.1+23:59",
    "2026-01-31T09:00:00,123456789-23:59", "0001-01-01T00:00:00+23:59",
    "9999-12-31T23:59:59.999999-23:59", "2026-01-31\u3000\u2028+0530", "2026-01-31T09:00:00 Z",
    " \u3000 2026-01-31T09:00:00.5 \u3000 ", "2026-01-31T09:00:00+05:99", "2026-01-31T09:00-00",
    "1970-01-01T00:00:00.000001Z", "1969-12-31T23:59:59.999999Z",
)


def _timestamp(rng: random.Random) -> str:
    pick = rng.random()
    if pick < 0.08:
        return rng.choice(NEAR_MISSES)
    if pick < 0.16:
        return rng.choice(GOOD_TIMES)
    return _iso(rng)


def _created_at(rng: random.Random) -> datetime | None:
    if rng.random() < 0.05:
        return None
    years = rng.choice((1, 1, 1, 20, 150))  # mostly recent; some from 1876 on (LMT offsets)
    moment = datetime(2026, 6, 1, tzinfo=UTC) - timedelta(
        microseconds=rng.randrange(years * 366 * 86400 * 10**6))
    return moment.replace(microsecond=0) if rng.random() < 0.2 else moment


def _maybe(rng: random.Random, value: dict[str, Any], key: str, choices: tuple[Any, ...],
           p: float = 0.5) -> None:
    if rng.random() < p:
        picked = rng.choice(choices)
        value[key] = picked(rng) if callable(picked) else picked


def _value(rng: random.Random, regular_only: bool = False) -> dict[str, Any]:
    """A store value: typical fields, and (unless ``regular_only``) every odd form of them."""
    value: dict[str, Any] = {}
    if regular_only:
        value["content"] = _text(rng)
        _maybe(rng, value, "type", ("note", "task", "skill", "correction", "数据"))
        _maybe(rng, value, "kind", ("Profile", "", 3), 0.2)
        _maybe(rng, value, "scope", ("always", "contextual", None), 0.3)
        _maybe(rng, value, "status", ("active", "active", "retired"), 0.3)
        _maybe(rng, value, "superseded_by", (None, "", "m-2"), 0.2)
        _maybe(rng, value, "created", (lambda r: rng.choice(GOOD_TIMES),
                                       lambda r: _good_iso(r), None), 0.7)
        _maybe(rng, value, "token_count", (1, 7, 250, Raw("1e2"), 10**17, None), 0.3)
        _maybe(rng, value, "tags", (lambda r: [r.choice(TAGS) for _ in range(r.randrange(5))],
                                    None), 0.6)
        _maybe(rng, value, "project", (*PROJECTS, None), 0.5)
        _maybe(rng, value, "base_priority", (
            lambda r: r.randint(-10, 10), lambda r: r.uniform(-20, 20),
            lambda r: Raw(f"{r.randint(0, 99)}.{r.randint(0, 10**12)}"),
            Raw("2.50"), Raw("1e2"), Raw("1.5E-7"), 10**20, 0, Raw("-0.0"),
            Raw("0.1000000000000000055511151231257827021181583404541015625"),
            Raw("9007199254740993"), Raw("9007199254740993.00000000000000000001"),
            Raw("-1.7976931348623157e299"), Raw("4.9e-300"), Raw("123456789012345678901")), 0.6)
        _maybe(rng, value, "user_id", ("u1", " ana ", "数据"), 0.2)
        return value
    _maybe(rng, value, "content", (_text, _text, _text, _text, None, 3, 2.5, True, [],
                                   {"name": "Ana"}, ["a", "b"], ""), 0.92)
    _maybe(rng, value, "type", ("note", "task", "correction", "", None, 3, ["note"], True), 0.5)
    _maybe(rng, value, "kind", ("Profile", "", None, 4), 0.2)
    _maybe(rng, value, "scope", ("always", "contextual", "Always", None, True, ""), 0.4)
    _maybe(rng, value, "status", ("active", "retired", "", None, 1, "Active"), 0.35)
    _maybe(rng, value, "superseded_by", (None, "", "m-2", 0, False, [], {}, 1, Raw("0.0"),
                                         True), 0.3)
    _maybe(rng, value, "created", (_timestamp, _timestamp, _timestamp, _timestamp, None, 17,
                                   True, ["2026-01-01"]), 0.8)
    _maybe(rng, value, "token_count", (
        1, 7, 0, -3, Raw("2.0"), True, False, Raw("123456789012345678901234567890"),
        Raw("1e2"), "5", None, 10**18 - 1, 10**18, 2**63, Raw("7.5"), Raw("1E+1")), 0.4)
    _maybe(rng, value, "tags", (
        lambda r: [r.choice(TAGS) for _ in range(r.randrange(6))], "db", "db,prod",
        {"db": 1}, [1, "x"], [["db"]], [None], None, [], 5, [True]), 0.5)
    _maybe(rng, value, "project", (*PROJECTS, None, 3, ["atlas"], True, {"a": 1}), 0.4)
    _maybe(rng, value, "base_priority", (
        lambda r: r.randint(-10, 10), lambda r: r.uniform(-1e6, 1e6), Raw("1e2"), Raw("2.50"),
        Raw("1e308"), Raw("1e299"), Raw("-1e299"), Raw("1e300"), Raw("1e309"), Raw("-1e400"),
        Raw("1e-400"), Raw("1e-300"), Raw("9e-301"), 10**400, -(10**20), True, "5", None, [],
        Raw("-0"), Raw("12345678901234567890123456789")), 0.5)
    _maybe(rng, value, "user_id", ("u1", " ", "\u3000", "", 5, None, "\u2028x"), 0.15)
    _maybe(rng, value, "similarity", (0.5, None, "x"), 0.05)
    _maybe(rng, value, "id", ("other", 3), 0.05)
    return value


def _good_iso(rng: random.Random) -> str:
    while True:
        text = _iso(rng)
        if _time_us(text) is not None:
            return text


# -- the Python side ---------------------------------------------------------------


def _python_reading(entry: dict[str, Any]) -> dict[str, Any]:
    entry_type = entry.get("type", "note")
    try:
        base: float | None = _base_priority(entry, "")
    except ValueError:
        base = None
    return {
        "entry_type": entry_type if isinstance(entry_type, str) else None,
        "active": default_is_active(entry),
        "always": entry.get("scope") == "always",
        "cost": _cost(entry, 0, default_token_counter),
        "base": None if base is None else base.hex(),
        "created_us": _time_us(entry.get("created")),
        "created_text": _sort_text(entry, "created"),
        "words": sorted(next(_word_sets([_content(entry)]))),
    }


READINGS_SQL = """
SELECT key, poolsplit_v1.regular(value) AS regular,
       poolsplit_v1.entry_type(value) AS entry_type, poolsplit_v1.active(value) AS active,
       poolsplit_v1.always(value) AS always, poolsplit_v1.cost(value) AS cost,
       poolsplit_v1.base(value) AS base, poolsplit_v1.created_us(value, created_at) AS created_us,
       poolsplit_v1.created_text(value, created_at, %(zone)s) AS created_text,
       poolsplit_v1.created_text(value, created_at) AS created_text_session,
       poolsplit_v1.words(value) AS words
FROM store WHERE prefix = %(prefix)s
"""


def _sql_readings(conn: psycopg.Connection[Any], namespace: tuple[str, ...], zone: str
                  ) -> dict[str, dict[str, Any]]:
    rows = conn.execute(READINGS_SQL, {"zone": zone, "prefix": ".".join(namespace)}).fetchall()
    out = {}
    for row in rows:
        row["base"] = None if row["base"] is None else row["base"].hex()
        out[row.pop("key")] = row
    return out


# -- install ------------------------------------------------------------------------


def _functions(conn: psycopg.Connection[Any]) -> list[tuple[str, str, str, str]]:
    return [(r["sig"], r["provolatile"], r["proparallel"], str(r["xmin"])) for r in conn.execute(
        "SELECT oid::regprocedure::text AS sig, provolatile, proparallel, xmin FROM pg_proc"
        " WHERE pronamespace = 'poolsplit_v1'::regnamespace ORDER BY 1").fetchall()]


def test_setup_is_idempotent_and_safe_concurrently(uri: str) -> None:
    with _connect(uri) as admin:
        for _ in range(3):
            admin.execute("DROP SCHEMA IF EXISTS poolsplit_v1 CASCADE")
            assert not _pgsql.installed(admin)
            barrier = threading.Barrier(3)
            results: list[bool] = []
            errors: list[BaseException] = []

            def install(autocommit: bool, barrier: threading.Barrier = barrier,
                        results: list[bool] = results,
                        errors: list[BaseException] = errors) -> None:
                try:
                    with psycopg.connect(uri, autocommit=autocommit) as conn:
                        barrier.wait()
                        results.append(_pgsql.setup(conn))
                        # committed, nothing left open, settings as they were
                        assert conn.info.transaction_status == TransactionStatus.IDLE
                        assert conn.execute("SHOW search_path").fetchone() == ('"$user", public',)
                        assert _pgsql.installed(conn)
                except BaseException as exc:  # reported below
                    errors.append(exc)

            threads = [threading.Thread(target=install, args=(autocommit,))
                       for autocommit in (True, False, True)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            assert errors == []
            assert sorted(results) == [False, False, True]  # one installed, two found it
            assert _pgsql.installed(admin)
        rows = admin.execute("SELECT version, installed_at FROM poolsplit_v1.installed").fetchall()
        assert [row["version"] for row in rows] == [_pgsql.VERSION]
        before = _functions(admin)
        assert _pgsql.setup(admin) is False
        assert _functions(admin) == before  # not even replaced: same row versions


def test_setup_inside_an_open_transaction_commits_with_it(uri: str) -> None:
    with _connect(uri) as admin, psycopg.connect(uri) as conn:
        admin.execute("DROP SCHEMA IF EXISTS poolsplit_v1 CASCADE")
        conn.execute("SET search_path = public")
        assert conn.info.transaction_status == TransactionStatus.INTRANS
        assert _pgsql.setup(conn) is True
        assert conn.execute("SHOW search_path").fetchone() == ("public",)
        assert _pgsql.installed(conn) and not _pgsql.installed(admin)
        conn.rollback()
        assert not _pgsql.installed(conn) and not _pgsql.installed(admin)
        assert _pgsql.setup(conn) is True
        conn.commit()
        assert _pgsql.installed(admin)


EXPECTED = {
    "regular(jsonb)", "entry_type(jsonb)", "active(jsonb)", "always(jsonb)", "cost(jsonb)",
    "base(jsonb)", "created_us(jsonb,timestamp with time zone)",
    "created_text(jsonb,timestamp with time zone,text)", "words(jsonb)",
    "created_text(jsonb,timestamp with time zone)", "time_us(text)", "text_words(text)",
    "score(jsonb,timestamp with time zone,bigint,text[],double precision[],text[],text)",
}


def test_functions_are_immutable_inlined_and_index_safe(uri: str) -> None:
    with _connect(uri) as conn:
        _pgsql.setup(conn)
        functions = {sig.removeprefix("poolsplit_v1."): (volatility, parallel)
                     for sig, volatility, parallel, _ in _functions(conn)}
        assert EXPECTED <= set(functions)
        assert {sig for sig, (volatility, _) in functions.items() if volatility != "i"} == {
            "created_text(jsonb,timestamp with time zone)"}
        assert {parallel for _, parallel in functions.values()} == {"s"}
        # The planner inlines the one-expression readers (no function call left).
        plan = "\n".join(row["QUERY PLAN"] for row in conn.execute(
            "EXPLAIN (VERBOSE) SELECT poolsplit_v1.regular(value), poolsplit_v1.entry_type(value),"
            " poolsplit_v1.active(value), poolsplit_v1.always(value), poolsplit_v1.cost(value),"
            " poolsplit_v1.base(value), poolsplit_v1.created_us(value, created_at),"
            " poolsplit_v1.score(value, created_at, 0, '{a}', '{1.0,2.5}', '{db}', 'p')"
            " FROM store").fetchall())
        for name in ("regular", "entry_type", "active", "always", "cost", "base", "created_us",
                     "score", "recency", "project_factor", "time_us"):
            assert f"poolsplit_v1.{name}(" not in plan, (name, plan)
        # Index builds, REINDEX and ANALYZE run with search_path = pg_catalog (PG 17+);
        # with an empty search_path here too, every reference must be qualified.
        table = f"{LABEL}_{uuid.uuid4().hex[:8]}"
        conn.execute(f"CREATE TABLE public.{table} AS SELECT * FROM public.store LIMIT 0")
        try:
            conn.execute(f"INSERT INTO public.{table} (prefix, key, value, created_at)"
                         " VALUES ('p', 'a', %s::jsonb, now()), ('p', 'b', '{\"x\": 1}', now())",
                         (json.dumps({"content": "Rotate \u212aernel keys", "tags": ["db"],
                                      "created": "2026-01-01 +0530"}),))
            conn.execute("SET search_path = ''")
            conn.execute(
                f"CREATE INDEX ON public.{table} (poolsplit_v1.regular(value),"
                " poolsplit_v1.entry_type(value), poolsplit_v1.cost(value),"
                " poolsplit_v1.base(value), poolsplit_v1.created_us(value, created_at),"
                " poolsplit_v1.created_text(value, created_at, 'Asia/Kolkata'),"
                " poolsplit_v1.score(value, created_at, 0, '{}', '{1.0}', '{db}', NULL))")
            conn.execute(f"CREATE INDEX ON public.{table} USING gin (poolsplit_v1.words(value))")
            conn.execute(f"REINDEX TABLE public.{table}")
            conn.execute(f"ANALYZE public.{table}")
            got = conn.execute(f"SELECT key FROM public.{table} WHERE"
                               " poolsplit_v1.words(value) @> '{kernel}'").fetchall()
            assert [row["key"] for row in got] == ["a"]
        finally:
            conn.execute("RESET search_path")
            conn.execute(f"DROP TABLE public.{table}")


# -- each reading against Python --------------------------------------------------


@pytest.mark.parametrize("zone", ZONES)
def test_each_function_equals_the_python_reading(uri: str, zone: str) -> None:
    rng = random.Random(f"sqlfn-{zone}")
    namespace = _namespace()
    with _connect(uri, zone) as conn:
        assert str(conn.info.timezone) == zone  # what psycopg reads created_at in
        rows = [(_value(rng), _created_at(rng)) for _ in range(1800)]
        rows += [(_value(rng, regular_only=True), _created_at(rng)) for _ in range(1200)]
        _insert(conn, namespace, rows)
        sql = _sql_readings(conn, namespace, zone)
        entries = _entries(conn, namespace)
    assert len(entries) == len(sql) == 3000
    regular = differing = problem_rows = 0
    fields: dict[str, set[Any]] = {"entry_type": set(), "cost": set(), "created_text": set()}
    for key, entry in entries:
        got = sql[key]
        expected = _python_reading(entry)
        problems = entry_problems(entry, "")
        same = all(got[name] == value for name, value in expected.items())
        same = same and got["created_text_session"] == expected["created_text"]
        if problems:
            problem_rows += 1
            assert got["regular"] is False, (entry, problems)
        if not same:
            differing += 1
            assert got["regular"] is False, (entry, expected, got)
        if got["regular"]:
            regular += 1
            assert same and not problems
            for name in fields:
                fields[name].add(expected[name])
    # Enough of each kind for the assertions above to mean something.
    assert regular >= 1000 and problem_rows >= 800 and differing >= 100, (
        regular, problem_rows, differing)
    assert {"note", "task", "Profile", "correction"} <= fields["entry_type"]
    assert len(fields["cost"]) > 30 and len(fields["created_text"]) > 500


def test_typical_and_odd_values(uri: str) -> None:
    """Hand-picked rows: what a strict store keeps is regular; each odd form is not."""
    typical = [
        {"content": "Use pg-2."},
        {"kind": "Profile", "content": "name: Ana", "type": None},
        {"content": "x", "type": "correction", "scope": "always", "tags": ["db", "db"],
         "created": "2026-01-31T09:00:00Z", "token_count": 12, "base_priority": 7.5,
         "project": "atlas", "status": "retired", "superseded_by": None, "user_id": "ana"},
        {"content": "", "created": None, "tags": None, "project": None, "scope": None,
         "token_count": None, "superseded_by": "m-2", "base_priority": Raw("1e2")},
    ]
    odd = [
        {}, {"content": None}, {"content": 3}, {"content": ["a"]}, {"content": {"a": "b"}},
        {"content": "x", "type": None}, {"content": "x", "type": ""}, {"content": "x", "type": 3},
        {"content": "x", "scope": "Always"}, {"content": "x", "scope": True},
        {"content": "x", "status": ""}, {"content": "x", "status": None},
        {"content": "x", "created": "yesterday"}, {"content": "x", "created": 5},
        {"content": "x", "created": "2026-01-01T24:00:00"},
        {"content": "x", "token_count": 0}, {"content": "x", "token_count": -3},
        {"content": "x", "token_count": Raw("2.0")}, {"content": "x", "token_count": True},
        {"content": "x", "token_count": "5"}, {"content": "x", "token_count": 10**18},
        {"content": "x", "tags": "db"}, {"content": "x", "tags": {"db": 1}},
        {"content": "x", "tags": [1]}, {"content": "x", "tags": [["db"]]},
        {"content": "x", "superseded_by": 0}, {"content": "x", "superseded_by": False},
        {"content": "x", "base_priority": None}, {"content": "x", "base_priority": True},
        {"content": "x", "base_priority": "5"}, {"content": "x", "base_priority": Raw("1e400")},
        {"content": "x", "base_priority": Raw("1e-400")}, {"content": "x", "user_id": " "},
        {"content": "x", "user_id": "\u3000"}, {"content": "x", "project": 3},
    ]
    namespace = _namespace()
    when = datetime(2026, 1, 1, tzinfo=UTC)
    with _connect(uri) as conn:
        keys = _insert(conn, namespace, [(value, when) for value in typical + odd])
        sql = _sql_readings(conn, namespace, "UTC")
    assert [sql[key]["regular"] for key in keys] == [True] * len(typical) + [False] * len(odd)
    assert [sql[key]["entry_type"] for key in keys[:2]] == ["note", "Profile"]


# -- W(text) and the time parser on their own -------------------------------------


def test_word_text_folds_exactly_the_characters_python_lowers_into_ascii(uri: str) -> None:
    alnum = set("abcdefghijklmnopqrstuvwxyz0123456789")
    into_ascii = {code for code in range(128, 0x110000)
                  if alnum.intersection(chr(code).lower())}
    assert into_ascii == {0x130, 0x212A}
    assert "\u0130".lower() == "i\u0307" and "\u212a".lower() == "k"
    with _connect(uri) as conn:
        row = conn.execute(
            "SELECT array_agg(i ORDER BY i) AS codes FROM generate_series(128, 1114111) AS i"
            " WHERE (i < 55296 OR i > 57343)"
            " AND poolsplit_v1.word_text(chr(i)) COLLATE \"C\" ~ '[a-z0-9]'").fetchall()
        assert [r["codes"] for r in row] == [sorted(into_ascii)]
        for text in ("\u212aernel", "abc\u0130def", "\u0130\u0130\u0130", "x\u212a\u212ay"):
            got = conn.execute("SELECT poolsplit_v1.text_words(%s) AS w", (text,)).fetchall()
            assert [r["w"] for r in got] == [sorted(next(_word_sets([text])))]


@pytest.fixture(scope="module")
def conn(uri: str) -> Iterator[psycopg.Connection[Any]]:
    with _connect(uri) as connection:
        yield connection


_TEXT = st.text(st.characters(exclude_categories=["Cs"], exclude_characters="\x00"),
                max_size=80)
_SOME = st.sampled_from([*"Kk\u212a\u0130iI0\xe9\u6570 -_.\u3000", " the ", "abc", "ABC", "x9z"])


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(texts=st.lists(st.one_of(_TEXT, st.lists(_SOME, max_size=12).map("".join)),
                      min_size=1, max_size=40))
def test_words_equal_python_on_any_text(conn: psycopg.Connection[Any], texts: list[str]) -> None:
    got = conn.execute("SELECT poolsplit_v1.text_words(t) AS w FROM unnest(%s::text[])"
                       " WITH ORDINALITY AS u(t, n) ORDER BY n", (texts,)).fetchall()
    assert [row["w"] for row in got] == [sorted(words) for words in _word_sets(texts)]


_TIMES = st.one_of(st.from_regex(_ISO, fullmatch=True), _TEXT,
                   st.builds(_iso, st.randoms(use_true_random=False)))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(texts=st.lists(_TIMES, min_size=1, max_size=40))
def test_time_us_equals_python_on_any_text(conn: psycopg.Connection[Any],
                                           texts: list[str]) -> None:
    got = conn.execute("SELECT poolsplit_v1.time_us(t) AS us FROM unnest(%s::text[])"
                       " WITH ORDINALITY AS u(t, n) ORDER BY n", (texts,)).fetchall()
    assert [_same_time(text, row["us"]) for text, row in zip(texts, got)] == [True] * len(texts)


def _same_time(text: str, sql: int | None) -> bool:
    """``time_us`` equals ``_time_us``; but a Python whose fromisoformat reads T24:00:00
    (which ``_ISO`` refuses) may read more than SQL (regular() is then only stricter)."""
    python = _time_us(text)
    return sql == python or (sql is None and re.search("[Tt]24:00:00", text) is not None)


def test_time_us_on_the_listed_shapes(conn: psycopg.Connection[Any]) -> None:
    texts = list(NEAR_MISSES + GOOD_TIMES)
    rng = random.Random("times")
    texts += [_iso(rng) for _ in range(3000)]
    got = conn.execute("SELECT poolsplit_v1.time_us(t) AS us FROM unnest(%s::text[])"
                       " WITH ORDINALITY AS u(t, n) ORDER BY n", (texts,)).fetchall()
    expected = [_time_us(text) for text in texts]
    assert [_same_time(text, row["us"]) for text, row in zip(texts, got)] == [True] * len(texts)
    assert all(expected[len(NEAR_MISSES) + i] is not None for i in range(len(GOOD_TIMES)))
    assert all(us is None for us in expected[:len(NEAR_MISSES)])
    assert sum(us is None for us in expected) >= 600
    assert sum(us is not None for us in expected) >= 1000


def test_the_time_corpus_reads_in_the_database_as_in_the_core(conn: psycopg.Connection[Any]
                                                               ) -> None:
    """``tests/time_corpus.py``: the SQL reads exactly ISO 8601's extended format, as the core.

    A time in another ISO 8601 form (basic format, a week or an ordinal date, an
    offset with seconds) is no time here either: such a row is not regular (it is
    read in Python, where a strict store skips it and a lenient one counts 0 days).
    """
    texts = [text for text, _, _ in CORPUS]
    got = conn.execute(
        "SELECT poolsplit_v1.time_us(t) AS us,"
        " poolsplit_v1.created_us(pg_catalog.jsonb_build_object('created', t), NULL) AS created,"
        " poolsplit_v1.regular(pg_catalog.jsonb_build_object('content', 'x', 'created', t))"
        " AS regular FROM unnest(%s::text[]) WITH ORDINALITY AS u(t, n) ORDER BY n",
        (texts,)).fetchall()
    for (text, instant, _), row in zip(CORPUS, got):
        want = None if instant is None else _epoch_us(instant)
        assert row["us"] == row["created"] == want == _time_us(text), text
        assert row["regular"] is (instant is not None), text
        assert row["regular"] is not bool(entry_problems({"content": "x", "created": text}, ""))


# -- the score ------------------------------------------------------------------------


def _context(rng: random.Random) -> dict[str, Any]:
    context: dict[str, Any] = {}
    if rng.random() < 0.85:
        context["message"] = rng.choice((
            None, "", "the and with", _text(rng, 12), _text(rng, 12), _text(rng, 30),
            " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 6)))))
    if rng.random() < 0.7:
        context["tags"] = rng.choice((
            None, [], "db", [rng.choice(TAGS) for _ in range(rng.randint(1, 4))],
            tuple(rng.choice(TAGS) for _ in range(rng.randint(1, 3)))))
    if rng.random() < 0.7:
        context["project"] = rng.choice((*PROJECTS, None, 3, "nowhere"))
    return context


def _now(rng: random.Random) -> datetime:
    return datetime(2026, 6, 1, tzinfo=UTC) + timedelta(
        microseconds=rng.randrange(-400 * 86400 * 10**6, 200 * 86400 * 10**6))


SCORE_SQL = """
SELECT key, poolsplit_v1.score(value, created_at, %(now_us)s, %(words)s::text[],
                               %(factors)s::float8[], %(tags)s::text[], %(project)s::text) AS score
FROM store WHERE prefix = %(prefix)s
"""


def test_score_equals_the_core_bit_for_bit(uri: str) -> None:
    rng = random.Random("sqlfn-score")
    namespaces = [_namespace() for _ in range(40)]
    scored = loaded = 0
    distinct: set[float] = set()
    with _connect(uri, "America/St_Johns") as conn:
        for namespace in namespaces:
            _insert(conn, namespace, [(_value(rng, regular_only=True), _created_at(rng))
                                      for _ in range(rng.randint(40, 120))])
            regular = conn.execute("SELECT bool_and(poolsplit_v1.regular(value)) AS ok FROM store"
                                   " WHERE prefix = %s", (".".join(namespace),)).fetchall()
            assert [row["ok"] for row in regular] == [True]
            keyed = _entries(conn, namespace)
            entries = [entry for _, entry in keyed]
            for _ in range(3):
                context, now = _context(rng), _now(rng)
                query = _Query.from_context(context, None, _PLAIN)
                project = query.project if isinstance(query.project, str) else None
                rows = conn.execute(SCORE_SQL, {
                    "now_us": _epoch_us(now), "words": sorted(query.words),
                    "factors": query.message_factors, "tags": sorted(query.tags),
                    "project": project, "prefix": ".".join(namespace)}).fetchall()
                sql = {row["key"]: row["score"] for row in rows}
                python = [_default_score(entry, query, now, _label(entry, None))
                          for entry in entries]
                for (key, _), score in zip(keyed, python):
                    assert sql[key].hex() == score.hex(), (key, context, now)
                    distinct.add(score)
                scored += len(python)
                explained = explain_pools(entries, [Pool("all", 10**9, 10**9)], context, now=now)
                for decision in explained.decisions:
                    if decision.score is not None:
                        assert sql[keyed[decision.index][0]].hex() == decision.score.hex()
                        loaded += 1
    assert scored >= 9000 and loaded >= 5000 and len(distinct) > 1500, (
        scored, loaded, len(distinct))
