"""Seeded differential: PoolSplitStore over a real PostgreSQL against the core, with living writes.

Each seed fills one namespace (0-60 items, some in sub-namespaces, Unicode keys,
labels and content, timestamp edge cases, sometimes a near-tie store where
only the sort's tie-breaks decide), then reads it several times with random
pools, contexts, ``now``s and ``max_always_tokens``, writing between reads --
puts, updates (type, scope ``"always"``, status) and deletes -- through the
wrapper AND through a second bare ``PostgresStore`` on its own connection.

Every read is one case. Its expected answer is computed from the database as
it is now, independently of the wrapper: the items under the namespace as the
bare store's ``search`` lists them (checked against the namespace prefix),
sorted by dot-joined namespace then key in code-point order, mapped with
``item_to_entry``, less the items a strict store skips
(:func:`poolsplit_core.checks.entry_problems`), then the core's
``retrieve_pools(..., always_pool=True)``. Compared: the (namespace, key) and
value of every loaded item, per pool, in order; on a subset, the literal
reference (``tests/reference.py``), ``explain_pools`` (every Decision and
Ledger field, the skipped items, the engine) and ``entries()``. A share of the
blocks runs on ``AsyncPostgresStore`` through ``aretrieve_pools`` /
``aexplain_pools``.

The seeds are fixed; a failure names its seed and read. Each block counts its
cases and asserts the count (``BLOCKS * CASES_PER_BLOCK`` >= 5,000 in total).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import random
from datetime import datetime, timedelta, timezone

import pytest
from langgraph.store.base import PutOp

from poolsplit_core.checks import entry_problems
from poolsplit_core.poolsplit import (
    AlwaysScopeOverflowError,
    Pool,
    explain_pools,
    retrieve_pools,
)
from poolsplit_integrations._entries import item_to_entry
from poolsplit_integrations.langgraph import PoolSplitStore
from tests.integrations.conftest import open_store
from tests.reference import ref_retrieve_pools

SYNC_BLOCKS = 8
ASYNC_BLOCKS = 3
CASES_PER_BLOCK = 460  # reads compared per block: 11 * 460 = 5,060 cases
TOTAL_CASES = (SYNC_BLOCKS + ASYNC_BLOCKS) * CASES_PER_BLOCK
# The same reads with the database scoring (PoolSplitStore.setup() installed): two
# blocks in three walk every namespace's pools page by page however small it is (one of
# them a row at a time), the third scores each in the statement that reads it:
# 11 * 460 = 5,060 cases more.
DATABASE_BLOCKS = 11
# ... and awaited over an AsyncPostgresStore (set up by asetup() or by the sync setup()).
ASYNC_DATABASE_BLOCKS = 3
SEED_SPACE = 100_000  # the seeds of block b start at b * SEED_SPACE

NOW = datetime(2026, 3, 1, 12, tzinfo=timezone.utc)
# The database stamps items without a ``created`` with its clock: query times
# around the machine's clock put those before and after ``now``.
WALL = datetime.now(timezone.utc).replace(microsecond=0)

TYPES = ("note", "task", "skill", "correction")
TAGS = ("db", "ops", "ui", "数据")
PROJECTS = ("atlas", "zeus", "Atlas")
USERS = ("ana", "bo")
# Words that overlap across content and messages, and Unicode that case-folds
# or normalises into other words: CJK, combining marks, KELVIN SIGN, U+0130.
VOCAB = ("rotate", "database", "deploy", "release", "notes", "memory", "budget", "pool",
         "the", "and", "DEPLOY!", "v2", "数据库", "部署", "发布", "café", "cafe\u0301",
         "\u212aelvin", "kelvin", "\u0130stanbul", "istanbul", "i\u0307stanbul",
         "straße", "STRASSE", "\uff24\uff25\uff30\uff2c\uff2f\uff39", "naïve")
# Keys: ASCII, Unicode look-alikes (code-point order differs from any locale's),
# a str equal to the str() of a sub-namespace item's tuple id, a dotted key.
KEYS = ("K", "\u212a", "k", "\u0130", "i\u0307", "é", "e\u0301", "数据", "Z", "a b", "a-b",
        "a.b", "('sub', 'k1')", "~", "ß")
# Sub-namespaces (below the root read): "-" sorts before "." so the dot-joined
# order is not the tuple order; Unicode labels.
SUBS = ((), (), (), (), (), ("sub",), ("sub",), ("sub", "deep"), ("a",), ("a", "z"),
        ("a-b",), ("é",), ("\u212a",), ("数据",))
# Timestamps the core reads: offsets, fractions, 'Z'/'z', date only, padding;
# the first three are one instant written three ways (equal scores, different
# sort text), as are the next two.
CREATED = ("2026-02-17T12:00:00Z", "2026-02-17T12:00:00+00:00", "2026-02-17T17:30:00+05:30",
           "2026-01-01T00:00:00.500000-08:00", "2026-01-01T08:00:00.5Z",
           "2026-02-28T23:59:59.999999z", "2025-11-01", "2026-02-17 12:00", " 2026-02-17T12:00Z ",
           "2026-02-17T12:00:00.123456789+14:00", "2026-03-01T12:00:00,25-0130",
           "2026-03-05T00:00:00+0000", "2020-01-01T00:00:00Z", "2999-01-01")
# What only a strict=False store takes (the core reads each leniently); a
# strict store skips an item holding one.
ODD = (("created", "not a date"), ("created", "2026-02-30"), ("created", ""),
       ("created", "\u0662\u0660\u0662\u0666-\u0660\u0663-\u0660\u0661"),
       ("scope", "Always"), ("scope", ""), ("token_count", 5.0), ("token_count", 0),
       ("token_count", "5"), ("token_count", True), ("tags", "db"), ("status", ""),
       ("type", ""), ("superseded_by", 3), ("base_priority", "7"))
SHIFTS = (timedelta(0), timedelta(days=1), timedelta(days=30), timedelta(days=75),
          timedelta(days=-13), timedelta(hours=5))


# --------------------------------------------------------------------------
# Random namespaces, values, pools, contexts, times
# --------------------------------------------------------------------------


@dataclasses.dataclass
class Plan:
    """One seed's namespace: how its values are drawn and how it is read."""

    rng: random.Random
    root: tuple[str, ...]
    strict: bool
    odd: float  # the chance a value holds an ODD field
    tenant: bool  # values carry a user_id; reads name a user
    near: dict | None  # the shared fields of a near-tie store
    serial: int = 0
    #: What this seed wrote, by (namespace, key): only to pick what to update or
    #: delete (the expected answers are read from the database, never from here).
    written: dict = dataclasses.field(default_factory=dict)

    def key(self) -> str:
        self.serial += 1
        if self.rng.random() < 0.25:
            return self.rng.choice(KEYS)
        return f"k{self.serial}"

    def namespace(self) -> tuple[str, ...]:
        if self.rng.random() < 0.04:  # a sibling: never read under root
            return (*self.root[:-1], self.root[-1].replace("_", "X").replace("%", "Y"), "sub")
        return (*self.root, *self.rng.choice(SUBS))

    def value(self, clean: bool = False) -> dict:
        rng = self.rng
        if self.near is not None and rng.random() < 0.8:
            value = dict(self.near)
            value["content"] = " ".join(rng.choice(VOCAB[:4]) for _ in range(rng.randint(0, 2)))
            if rng.random() < 0.5:
                value["created"] = rng.choice(CREATED[:3])
            if rng.random() < 0.1:
                value["scope"] = "always"
        else:
            value = self.fresh()
        if self.tenant and rng.random() < 0.9:
            value["user_id"] = rng.choice(USERS)
        if not clean and rng.random() < self.odd:
            field, odd = rng.choice(ODD)
            value[field] = odd
        return value

    def fresh(self) -> dict:
        rng = self.rng
        value: dict = {}
        roll = rng.random()
        if roll < 0.8:
            value["content"] = " ".join(rng.choice(VOCAB) for _ in range(rng.randint(0, 6)))
        elif roll < 0.9:  # langmem's kind shape: the content is a mapping
            value["kind"] = rng.choice(("Profile", "task"))
            value["content"] = {"name": rng.choice(VOCAB),
                                "langs": rng.sample(VOCAB, rng.randint(0, 2))}
        else:  # no content: the readable text of the whole value
            value["note"] = rng.choice(VOCAB)
        if rng.random() < 0.85:
            value["type"] = rng.choice(TYPES)
        if rng.random() < 0.12:
            value["scope"] = "always"
        elif rng.random() < 0.05:
            value["scope"] = "contextual"
        if rng.random() < 0.85:
            value["base_priority"] = rng.choice((3, 5, 8, 5, 0, -2, 2.5))
        roll = rng.random()
        if roll < 0.7:
            value["created"] = rng.choice(CREATED)
        elif roll < 0.75:
            value["created"] = None  # the database's created_at
        # else: no created at all (the database's created_at)
        if rng.random() < 0.4:
            value["tags"] = rng.sample(TAGS, rng.randint(1, 2))
        if rng.random() < 0.4:
            value["project"] = rng.choice(PROJECTS)
        if rng.random() < 0.75:
            value["token_count"] = rng.randint(1, 14)
        if rng.random() < 0.06:
            value["status"] = "retired"
        elif rng.random() < 0.05:
            value["status"] = "active"
        if rng.random() < 0.03:
            value["superseded_by"] = "later"
        return value

    def changed(self, old: dict) -> dict:
        """An update of ``old``: a new type, scope, status, content or time."""
        rng = self.rng
        value = dict(old)
        for _ in range(rng.randint(1, 3)):
            what = rng.randrange(7)
            if what == 0:
                value["type"] = rng.choice(TYPES)
            elif what == 1:
                if value.get("scope") == "always":
                    del value["scope"]
                else:
                    value["scope"] = "always"
            elif what == 2:
                value["status"] = rng.choice(("retired", "active"))
            elif what == 3:
                value["content"] = " ".join(rng.choice(VOCAB) for _ in range(rng.randint(0, 6)))
            elif what == 4:
                value.pop("created", None)  # now the row's created_at, kept by the update
            elif what == 5:
                value["created"] = rng.choice(CREATED)
            else:
                value["token_count"] = rng.randint(1, 14)
        return value


def make_plan(seed: int, strict_share: float = 0.6) -> Plan:
    rng = random.Random(seed)
    strict = rng.random() < strict_share
    odd = 0.0 if rng.random() < 0.5 else (0.03 if strict else 0.15)
    near = None
    if rng.random() < 0.3:
        near = {"type": rng.choice(TYPES), "base_priority": rng.choice((3, 5)),
                "created": CREATED[0], "token_count": rng.randint(1, 4)}
    # "_" and "%" in the root: a LIKE without escapes would read the siblings
    return Plan(rng, ("pd", f"s_{seed}%"), strict, odd, rng.random() < 0.12, near)


def make_pools(rng: random.Random) -> list[Pool]:
    names = rng.sample(("alpha", "beta", "gamma", "delta"), rng.randint(1, 4))
    pools = []
    for name in names:
        types = None
        if rng.random() < 0.7:
            types = tuple(rng.sample((*TYPES, "Profile"), rng.randint(1, 3)))
        max_tokens = rng.choice((0, rng.randint(1, 12), rng.randint(5, 40), rng.randint(20, 90)))
        pools.append(Pool(name, max_tokens, rng.randint(0, 5), types))
    return pools


def make_context(rng: random.Random) -> dict | None:
    if rng.random() < 0.05:
        return None
    context: dict = {}
    if rng.random() < 0.85:
        context["message"] = " ".join(rng.choice(VOCAB) for _ in range(rng.randint(0, 6)))
    if rng.random() < 0.5:
        context["project"] = rng.choice((*PROJECTS, None))
    if rng.random() < 0.5:
        context["tags"] = rng.sample(TAGS, rng.randint(0, 3))
    return context


def make_now(rng: random.Random) -> datetime:
    base = rng.choice((NOW, NOW, WALL))
    now = base + rng.choice(SHIFTS)
    roll = rng.random()
    if roll < 0.25:
        return now.replace(tzinfo=None)  # naive: UTC
    if roll < 0.4:
        return now.astimezone(timezone(timedelta(hours=rng.choice((-8, 5.5, 14)))))
    return now


# --------------------------------------------------------------------------
# The expected answer, from the database as it is now
# --------------------------------------------------------------------------


def current_items(bare, namespace):
    """The items under ``namespace`` now, by dot-joined namespace then key (code points)."""
    items = bare.search(namespace, limit=10_000)
    assert len(items) < 10_000
    n = len(namespace)
    items = [item for item in items if tuple(item.namespace)[:n] == namespace]
    items.sort(key=lambda item: (".".join(item.namespace), item.key))
    return items


@dataclasses.dataclass
class Expected:
    items: list  # the items that load-or-not (the kept ones), in the core's order
    entries: list  # their entries, same order
    skipped: list  # ids of the items a strict store skips, that the filter keeps
    all_ids: list  # every kept item's id (no filter), for entries()


def expected_read(bare, namespace, strict, filter_=None) -> Expected:
    kept_items, entries, skipped, all_ids = [], [], [], []
    for item in current_items(bare, namespace):
        entry = item_to_entry(item.namespace, item.key, item.value, created_at=item.created_at,
                              read_from=namespace)
        chosen = filter_ is None or all(k in entry and entry[k] == v for k, v in filter_.items())
        if strict and entry_problems(entry, "item"):
            if chosen:
                skipped.append(entry["id"])
            continue
        all_ids.append(entry["id"])
        if chosen:
            kept_items.append(item)
            entries.append(entry)
    return Expected(kept_items, entries, skipped, all_ids)


def labels_of(got) -> dict:
    """A store answer as ``{pool: [(namespace, key, value), ...]}``."""
    return {name: [(tuple(item.namespace), item.key, item.value) for item in items]
            for name, items in got.items()}


def labels_by_identity(picked, want: Expected) -> dict:
    where = {id(entry): item for entry, item in zip(want.entries, want.items)}
    return {name: [(tuple(where[id(e)].namespace), where[id(e)].key, where[id(e)].value)
                   for e in entries] for name, entries in picked.items()}


def ref_with_always_pool(entries, pools, context, now):
    """The literal reference with the core's ``always_pool=True`` (a last pool of no room)."""
    got = ref_retrieve_pools(entries, [*pools, Pool("always", 0, 0)], context, now=now)
    if not got["always"]:
        del got["always"]
    return got


def decision_rows(decisions, indexed=True):
    """Every Decision field; the index only when it is one (a filtered read's index is the
    item's place among all the items read, the expected one's among the kept ones)."""
    return [(d.entry["id"], d.index if indexed else None, d.outcome, d.pool, d.score, d.cost,
             d.tokens_left, d.rank) for d in decisions]


def ledger_rows(ledgers):
    return {name: dataclasses.asdict(ledger) for name, ledger in ledgers.items()}


class Read(dict):
    """One read's arguments, shown on failure."""


def draw_read(plan: Plan) -> Read:
    rng = plan.rng
    namespace = plan.root if rng.random() < 0.85 else (*plan.root, "sub")
    filter_ = {"user_id": rng.choice((*USERS, "cy"))} if plan.tenant else None
    return Read(namespace=namespace, pools=make_pools(rng), context=make_context(rng),
                now=make_now(rng), cap=rng.randint(0, 30) if rng.random() < 0.2 else None,
                filter=filter_, explain=rng.random() < 0.3, reference=rng.random() < 0.35,
                entries=rng.random() < 0.1)


def check_answer(got, error, read: Read, want: Expected) -> dict | None:
    """Compare one answer (or the error it raised) with the core's; return the core's answer."""
    try:
        core = retrieve_pools(want.entries, read["pools"], read["context"], now=read["now"],
                              always_pool=True, max_always_tokens=read["cap"])
    except AlwaysScopeOverflowError:
        assert isinstance(error, AlwaysScopeOverflowError), (error, got)
        return None
    assert error is None, error
    assert labels_of(got) == labels_by_identity(core, want)
    if read["reference"]:
        ref = ref_with_always_pool(want.entries, read["pools"], read["context"], read["now"])
        assert labels_of(got) == labels_by_identity(ref, want)
    return core


def check_explanation(explained, error, read: Read, want: Expected) -> None:
    try:
        core = explain_pools(want.entries, read["pools"], read["context"], now=read["now"],
                             always_pool=True, max_always_tokens=read["cap"])
    except AlwaysScopeOverflowError:
        assert isinstance(error, AlwaysScopeOverflowError), (error, explained)
        return
    assert error is None, error
    assert explained.engine == "snapshot"
    assert explained.staleness == 0.0
    indexed = read["filter"] is None
    assert decision_rows(explained.decisions, indexed) == decision_rows(core.decisions, indexed)
    assert ledger_rows(explained.ledgers) == ledger_rows(core.ledgers)
    assert sorted(map(repr, {key for key, _ in explained.skipped})) == sorted(
        map(repr, want.skipped))


def call(fn, *args, **kwargs):
    try:
        return fn(*args, **kwargs), None
    except AlwaysScopeOverflowError as error:
        return None, error


async def acall(fn, *args, **kwargs):
    try:
        return await fn(*args, **kwargs), None
    except AlwaysScopeOverflowError as error:
        return None, error


# --------------------------------------------------------------------------
# Writes between reads: through the wrapper and through another writer
# --------------------------------------------------------------------------


def draw_write(plan: Plan):
    """One write: ``(writer, namespace, key, value or None)``; None deletes."""
    rng = plan.rng
    writer = rng.choice(("wrapped", "other"))
    roll = rng.random()
    if roll < 0.35 or not plan.written:
        namespace, key, value = plan.namespace(), plan.key(), plan.value()
    else:
        (namespace, key), old = rng.choice(sorted(plan.written.items(), key=repr))
        value = plan.changed(old) if roll < 0.75 else None
    if value is None:
        plan.written.pop((namespace, key), None)
    else:
        plan.written[(namespace, key)] = value
    return writer, namespace, key, value


def refused(value) -> bool:
    """Whether a strict wrapper refuses to write ``value``: a problem, or created in the future."""
    return bool(entry_problems(value, "v", now=datetime.now(timezone.utc)))


def route(plan: Plan, writer: str, value) -> str:
    """A strict wrapper refuses a value with a problem: the other writer writes it."""
    if writer == "wrapped" and plan.strict and value is not None and refused(value):
        return "refused"
    return writer


def populate(plan: Plan, wrapped, other) -> None:
    values = {}
    for _ in range(plan.rng.randint(0, 60)):
        values[(plan.namespace(), plan.key())] = plan.value()
    plan.written.update(values)
    ops = [PutOp(namespace, key, value) for (namespace, key), value in values.items()]
    clean = not any(refused(op.value) for op in ops)
    if ops and clean and plan.rng.random() < 0.5:
        wrapped.batch(ops)
    elif ops:
        other.batch(ops)


def write_sync(plan: Plan, wrapped, other, bare) -> None:
    writer, namespace, key, value = draw_write(plan)
    writer = route(plan, writer, value)
    if writer == "refused":
        before = bare.get(namespace, key)
        with pytest.raises((ValueError, TypeError)):
            wrapped.put(namespace, key, value)
        after = bare.get(namespace, key)
        assert (before and before.value) == (after and after.value)  # nothing written
        writer = "other"
    if writer == "wrapped":
        if value is None and plan.rng.random() < 0.5:
            wrapped.put(namespace, key, None)  # BaseStore: a None value deletes
        elif value is None:
            wrapped.delete(namespace, key)
        else:
            wrapped.put(namespace, key, value)
    elif value is None:
        other.delete(namespace, key)
    else:
        other.put(namespace, key, value)


async def write_async(plan: Plan, wrapped, other, bare) -> None:
    writer, namespace, key, value = draw_write(plan)
    writer = route(plan, writer, value)
    if writer == "refused":
        with pytest.raises((ValueError, TypeError)):
            await wrapped.aput(namespace, key, value)
        writer = "other"
    if writer == "wrapped":
        if value is None:
            await wrapped.adelete(namespace, key)
        else:
            await wrapped.aput(namespace, key, value)
    elif value is None:
        other.delete(namespace, key)
    else:
        other.put(namespace, key, value)


# --------------------------------------------------------------------------
# The runs
# --------------------------------------------------------------------------


def where(seed: int, n: int, read: Read) -> str:
    shown = {k: v for k, v in read.items() if k not in ("explain", "reference", "entries")}
    return f"seed {seed}, read {n}: {shown!r}"


def run_seed_sync(seed: int, stores: dict, other, bare) -> int:
    plan = make_plan(seed)
    wrapped = stores[plan.strict]
    populate(plan, wrapped, other)
    cases = 0
    for n in range(plan.rng.randint(4, 9)):
        if n:
            for _ in range(plan.rng.randint(1, 3)):
                write_sync(plan, wrapped, other, bare)
        read = draw_read(plan)
        want = expected_read(bare, read["namespace"], plan.strict, read["filter"])
        try:
            got, error = call(wrapped.retrieve_pools, read["namespace"], read["pools"],
                              read["context"], filter=read["filter"], now=read["now"],
                              max_always_tokens=read["cap"])
            check_answer(got, error, read, want)
            if read["explain"]:
                explained, error = call(wrapped.explain_pools, read["namespace"], read["pools"],
                                        read["context"], filter=read["filter"], now=read["now"],
                                        max_always_tokens=read["cap"])
                check_explanation(explained, error, read, want)
            if read["entries"]:
                assert [e["id"] for e in wrapped.entries(read["namespace"])] == want.all_ids
        except AssertionError as failure:
            raise AssertionError(where(seed, n, read)) from failure
        cases += 1
    return cases


async def run_seed_async(seed: int, stores: dict, other, bare) -> int:
    plan = make_plan(seed)
    wrapped = stores[plan.strict]
    populate(plan, bare, other)  # the wrapper's sync batch cannot run in its loop
    cases = 0
    for n in range(plan.rng.randint(4, 9)):
        if n:
            for _ in range(plan.rng.randint(1, 3)):
                await write_async(plan, wrapped, other, bare)
        read = draw_read(plan)
        want = expected_read(bare, read["namespace"], plan.strict, read["filter"])
        try:
            got, error = await acall(wrapped.aretrieve_pools, read["namespace"], read["pools"],
                                     read["context"], filter=read["filter"], now=read["now"],
                                     max_always_tokens=read["cap"])
            check_answer(got, error, read, want)
            if read["explain"]:
                explained, error = await acall(
                    wrapped.aexplain_pools, read["namespace"], read["pools"], read["context"],
                    filter=read["filter"], now=read["now"], max_always_tokens=read["cap"])
                check_explanation(explained, error, read, want)
        except AssertionError as failure:
            raise AssertionError(where(seed, n, read)) from failure
        cases += 1
    return cases


def frozen_clock() -> float:
    """The wrappers' monotonic clock, held still: a snapshot's staleness is exactly 0.0."""
    return 1000.0


@pytest.fixture
def bare_and_other(postgres_ready):
    """A bare PostgresStore on a truncated table, and another writer on its own connection.

    Commits do not wait for the disk (``synchronous_commit``: a session setting
    that changes durability only, never what a later statement sees).
    """
    other, close_other = open_store("postgres", postgres_ready)
    bare, close_bare = open_store("postgres", postgres_ready)
    for store in (bare, other):
        store.conn.execute("SET synchronous_commit TO off")
    yield bare, other
    close_bare()
    close_other()


@contextlib.asynccontextmanager
async def async_store(uri: str):
    """An AsyncPostgresStore on a connection of its own (closed after)."""
    import psycopg
    from langgraph.store.postgres import AsyncPostgresStore
    from psycopg.rows import dict_row

    conn = await psycopg.AsyncConnection.connect(
        uri, autocommit=True, prepare_threshold=0, row_factory=dict_row)
    await conn.execute("SET synchronous_commit TO off")
    try:
        yield AsyncPostgresStore(conn)
    finally:
        await conn.close()


def test_the_blocks_add_up_to_the_promised_cases():
    assert TOTAL_CASES >= 5_000
    assert DATABASE_BLOCKS * CASES_PER_BLOCK >= 5_000
    # the seeds of one block never reach the next block's
    assert CASES_PER_BLOCK < SEED_SPACE


@pytest.mark.parametrize("block", range(SYNC_BLOCKS))
def test_postgres_store_answers_as_the_core_through_living_writes(block, bare_and_other):
    bare, other = bare_and_other
    stores = {True: PoolSplitStore(bare, clock=frozen_clock),
              False: PoolSplitStore(bare, strict=False, clock=frozen_clock)}
    cases, seed = 0, block * SEED_SPACE
    while cases < CASES_PER_BLOCK:
        cases += run_seed_sync(seed, stores, other, bare)
        seed += 1
    assert cases >= CASES_PER_BLOCK
    assert stores[True]._views == {} and stores[False]._views == {}  # nothing kept


@pytest.mark.parametrize("block", range(DATABASE_BLOCKS))
def test_the_database_scoring_answers_as_the_core_through_living_writes(block, bare_and_other,
                                                                         monkeypatch):
    from poolsplit_integrations import _pgengine

    bare, other = bare_and_other
    PoolSplitStore(bare).setup()  # the readings table and its triggers (idempotent)
    if block % 3 != 2:  # the database walks every namespace's pools; else (all are small)
        # it scores each namespace in the statement that reads it
        monkeypatch.setattr(_pgengine, "SCORED_FROM", 0)
    if block % 3 == 1:  # each group read a row, then 2, 4, ...: the bounds decide every step
        monkeypatch.setattr(_pgengine, "PAGE", 1)
        monkeypatch.setattr(_pgengine, "PAGE_MOST", 1)
    scored = []
    decide = _pgengine.decide
    monkeypatch.setattr(_pgengine, "decide", lambda *a, **k: scored.append(1) or decide(*a, **k))
    stores = {True: PoolSplitStore(bare, clock=frozen_clock),
              False: PoolSplitStore(bare, strict=False, clock=frozen_clock)}
    cases, seed = 0, (SYNC_BLOCKS + ASYNC_BLOCKS + block) * SEED_SPACE
    while cases < CASES_PER_BLOCK:
        cases += run_seed_sync(seed, stores, other, bare)
        seed += 1
    assert cases >= CASES_PER_BLOCK
    assert len(scored) >= CASES_PER_BLOCK // 2  # most reads went through the database's scores
    assert stores[True]._views == {} and stores[False]._views == {}


@pytest.mark.parametrize("block", range(ASYNC_BLOCKS))
def test_async_postgres_store_answers_as_the_core_through_living_writes(block, bare_and_other,
                                                                        postgres_ready):
    bare, other = bare_and_other

    async def run() -> int:
        async with async_store(postgres_ready) as inner:
            stores = {True: PoolSplitStore(inner, clock=frozen_clock),
                      False: PoolSplitStore(inner, strict=False, clock=frozen_clock)}
            cases, seed = 0, (SYNC_BLOCKS + block) * SEED_SPACE
            while cases < CASES_PER_BLOCK:
                cases += await run_seed_async(seed, stores, other, bare)
                seed += 1
            return cases

    assert asyncio.run(run()) >= CASES_PER_BLOCK


@pytest.mark.parametrize("block", range(ASYNC_DATABASE_BLOCKS))
def test_the_async_database_scoring_answers_as_the_core_through_living_writes(
        block, bare_and_other, postgres_ready, monkeypatch):
    from poolsplit_integrations import _pgengine

    bare, other = bare_and_other
    if block != 1:  # walked (block 1: each namespace scored as it is read)
        monkeypatch.setattr(_pgengine, "SCORED_FROM", 0)
    if block == 0:  # pages of one row, then 2, 4, ... (the sync blocks vary the same way)
        monkeypatch.setattr(_pgengine, "PAGE", 1)
        monkeypatch.setattr(_pgengine, "PAGE_MOST", 1)
    scored = []
    decide = _pgengine.decide
    monkeypatch.setattr(_pgengine, "decide", lambda *a, **k: scored.append(1) or decide(*a, **k))

    async def run() -> int:
        async with async_store(postgres_ready) as inner:
            if block % 2:
                PoolSplitStore(bare).setup()  # the sync way: the same database, set up
            else:
                await PoolSplitStore(inner).asetup()
            stores = {True: PoolSplitStore(inner, clock=frozen_clock),
                      False: PoolSplitStore(inner, strict=False, clock=frozen_clock)}
            cases, seed = 0, (SYNC_BLOCKS + ASYNC_BLOCKS + DATABASE_BLOCKS + block) * SEED_SPACE
            while cases < CASES_PER_BLOCK:
                cases += await run_seed_async(seed, stores, other, bare)
                seed += 1
            assert stores[True]._views == {} and stores[False]._views == {}
            return cases

    assert asyncio.run(run()) >= CASES_PER_BLOCK
    assert len(scored) >= CASES_PER_BLOCK // 2  # most reads went through the database's scores
