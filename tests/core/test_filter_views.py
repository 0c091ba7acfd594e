"""Filter views: a ``where`` on any key, never declared, walks only the matching entries.

A PreparedStore queried with ``where=`` on a key that is not its partition
key (any key, when it has none) groups its entries by that key on first use
and indexes a value's entries when that value is first asked for. These
tests hold it to the stateless answer, Decision by Decision, through random
writes that move entries between values; prove that the view is what is
walked (only the asked-for tenant is indexed, the stateless path is never
called); and run queries of many tenants beside a writer in threads.
"""

from __future__ import annotations

import random
import sys
import threading
from types import SimpleNamespace

import pytest

from poolsplit_core import poolsplit as core
from poolsplit_core import prepared
from poolsplit_core.poolsplit import Pool, explain_pools
from poolsplit_core.prepared import _DELETED, _ODD, PreparedStore
from tests.core import strategies as s
from tests.core.test_living_store import check_index_invariants

# Every test of this module runs once per engine of PreparedStore (tests/core/conftest.py).
pytestmark = pytest.mark.usefixtures("each_engine")

TEAMS = ("red", "blue", "green")
LANGS = ("en", "zh", "fr", "de", "ja", "ko")  # the last four rare: groups that empty and appear
SEEDS = 48


def matches(where, entry):
    return all(key in entry and entry[key] == value for key, value in where.items())


def rows(decided):
    """Decisions per pool as comparable rows: every field, the entry by identity."""
    return {name: [(id(d.entry), d.index, d.outcome, d.pool, d.score, d.cost, d.tokens_left,
                    d.rank) for d in picked] for name, picked in decided.items()}


def expected(everything, pools, context, now, where, include=None):
    """The stateless ``explain_pools(...).loaded()`` over the matching entries, as rows.

    A row's index is the entry's position in ``everything`` (stored entries, then extras).
    """
    kept = [i for i, e in enumerate(everything)
            if matches(where, e) and (include is None or include(e))]
    loaded = explain_pools([everything[i] for i in kept], pools, context, now=now).loaded()
    return {name: [(id(d.entry), kept[d.index], d.outcome, d.pool, d.score, d.cost,
                    d.tokens_left, d.rank) for d in picked] for name, picked in loaded.items()}


def filtered_entry(rng, n, shape):
    """A near-tie entry with a ``team`` (most) and a ``lang`` (half).

    ``shape.heavy``: most teams are "red" (a value more than half the entries
    hold); ``shape.odd``: some teams and users are unhashable (a set equals a
    frozenset filter; a list equals nothing here).
    """
    entry = s.near_tie_entry(rng, n)
    if rng.random() < 0.85:
        entry["team"] = "red" if shape.heavy and rng.random() < 0.8 else rng.choice(TEAMS)
    if rng.random() < 0.5:
        entry["lang"] = rng.choice(LANGS[:2] if rng.random() < 0.8 else LANGS)
    if shape.odd and rng.random() < 0.08:
        entry["team"] = rng.choice(({"red"}, ["red"], {"blue"}))
    if shape.odd and rng.random() < 0.04:
        entry["user_id"] = ["ana"]
    return entry


def replacement(rng, old, n, shape):
    """A new entry for ``old``'s id: same project (the partition), filter keys often changed."""
    entry = filtered_entry(rng, n, shape)
    entry["id"] = old["id"]
    entry.pop("project", None)
    if "project" in old:
        entry["project"] = old["project"]
    for key in ("user_id", "team", "lang"):
        if rng.random() < 0.4:  # keep the old value (or its absence): an upsert in place
            entry.pop(key, None)
            if key in old:
                entry[key] = old[key]
    return entry


def draw_where(rng):
    user = rng.choice((*s.NEAR_USERS, "nobody"))
    team = rng.choice((*TEAMS, "nobody"))
    return rng.choice((
        {"user_id": user},
        {"user_id": user},
        {"team": team},
        {"lang": rng.choice(LANGS)},  # a key some entries lack
        {"user_id": "nobody"},  # a value no entry holds
        {"user_id": ["ana"]},  # an unhashable value: no view can look it up
        {"team": frozenset({"red"})},  # equal to a set value some entries may hold
        {"user_id": user, "team": team},
        {"lang": rng.choice(LANGS), "user_id": user},
        {"team": ["red"], "user_id": user},  # an unhashable value beside a hashable one
        {"project": rng.choice(s.NEAR_PROJECTS), "user_id": user},  # the partition key too
    ))


def check_views(store):
    """Invariant 4 of PreparedStore: the views hold exactly what a fresh grouping holds."""
    assert len(store._views) <= prepared._VIEW_KEYS
    live = [(slot, e) for slot, e in enumerate(store._slots) if e is not _DELETED]
    for key, view in store._views.items():
        want = {}
        for slot, entry in live:
            if key in entry:
                value = entry[key]
                try:
                    hash(value)
                except TypeError:
                    value = _ODD
                want.setdefault(value, []).append(slot)
        assert {v: list(m) for v, m in view.members.items()} == want
        if _ODD in want:
            assert not view.parts
        for value, part in view.parts.items():
            slots = list(part.slots)
            assert slots == sorted(set(slots))
            assert [slot for slot in slots if store._slots[slot] is not _DELETED] == want[value]
            assert len(part.index.entries) == len(slots)
            assert all(part.index.entries[n] is store._slots[slot]
                       for n, slot in enumerate(slots))
            check_index_invariants(SimpleNamespace(_parts={value: part}))


def run_seed(seed, steps=30):
    """Random writes and filtered queries on two stores; returns how many view parts were built."""
    rng = random.Random(seed)
    shape = SimpleNamespace(odd=rng.random() < 0.2, heavy=rng.random() < 0.3)
    model = [filtered_entry(rng, n, shape) for n in range(rng.randint(40, 300))]
    next_n = len(model)
    split = rng.randint(0, len(model))
    stores = (PreparedStore(model[:split]),
              PreparedStore(model[:split], partition_key="project"))
    for entry in model[split:]:
        for store in stores:
            store.add(entry)
    built = 0
    for step in range(steps):
        roll = rng.random()
        ids = [e["id"] for e in model if "id" in e]
        if roll < 0.12:
            entry = filtered_entry(rng, next_n, shape)
            next_n += 1
            model.append(entry)
            for store in stores:
                store.add(entry)
        elif roll < 0.32 and ids:
            target = rng.choice(ids)
            at = next(i for i, e in enumerate(model) if e.get("id") == target)
            model[at] = entry = replacement(rng, model[at], next_n, shape)
            next_n += 1
            for store in stores:
                store.upsert(entry)
        elif roll < 0.42 and ids:
            target = rng.choice(ids)
            model = [e for e in model if e.get("id") != target]
            for store in stores:
                store.delete(target)
        else:
            where = draw_where(rng)
            pools, context, now = (s.near_tie_pools(rng), s.near_tie_context(rng),
                                   s.near_tie_now(rng))
            extra = [filtered_entry(rng, 10_000 + n, shape)
                     for n in range(rng.choice((0, 0, 0, 2)))]
            include = None
            if rng.random() < 0.2:
                dropped = rng.choice(s.NEAR_TYPES)

                def include(entry, dropped=dropped):
                    return entry.get("type") != dropped

            want = expected(model + extra, pools, context, now, where, include)
            for store in stores:
                got = store.decide(pools, context, now=now, extra=extra, where=where,
                                   include=include)
                assert rows(got) == want, (seed, step, where)
                if not extra and include is None:
                    picked = store.retrieve_pools(pools, context, now=now, where=where)
                    assert {k: [id(e) for e in v] for k, v in picked.items()} == {
                        k: [row[0] for row in v] for k, v in want.items()}, (seed, step, where)
        for store in stores:
            assert [id(e) for e in store.entries] == [id(e) for e in model]
            if step % 6 == 5:
                check_views(store)
    for store in stores:
        check_views(store)
        built += sum(len(view.parts) for view in store._views.values())
    return built


@pytest.mark.parametrize("block", range(4))
def test_a_filter_on_any_key_gives_the_stateless_answer_through_writes(block, monkeypatch):
    if block % 2:  # two view keys kept, of the four filtered on: views dropped and made again
        monkeypatch.setattr(prepared, "_VIEW_KEYS", 2)
    built = 0
    for seed in range(block * SEEDS // 4, (block + 1) * SEEDS // 4):
        built += run_seed(seed)
    assert built > 0  # the views served queries (not only the whole index or the stateless path)


# -- the view is what is walked --------------------------------------------------------


def tenant_store(tenants=40, per_tenant=5, seed=1, **kwargs):
    rng = random.Random(seed)
    entries = []
    for n in range(tenants * per_tenant):
        entry = s.near_tie_entry(rng, n)
        entry["id"] = f"e{n}"
        entry["user_id"] = f"u{n % tenants:02d}"
        entry["team"] = f"t{n % 7}"
        entries.append(entry)
    return entries, PreparedStore(entries, **kwargs)


POOLS = [Pool("work", 60, 4, ("task", "skill")), Pool("rest", 40, 3)]
CONTEXT = {"message": "deploy the database release", "tags": ["db"]}


@pytest.mark.parametrize("partition_key", [None, "project"])
def test_an_undeclared_filter_walks_only_its_value_s_part(monkeypatch, partition_key):
    entries, store = tenant_store(partition_key=partition_key)

    def stateless(*args, **kwargs):
        raise AssertionError("the stateless path ran")

    monkeypatch.setattr(PreparedStore, "_stateless", stateless)
    monkeypatch.setattr(core, "explain_pools", stateless)
    made = []
    view_of = PreparedStore._view_of
    monkeypatch.setattr(PreparedStore, "_view_of",
                        lambda self, key: made.append(key) or view_of(self, key))
    for _ in range(3):  # the view and the part are made once
        got = store.decide(POOLS, CONTEXT, now=s.NEAR_NOW, where={"user_id": "u07"})
    assert made == ["user_id"]
    assert list(store._views) == ["user_id"]
    view = store._views["user_id"]
    assert list(view.parts) == ["u07"]  # no other tenant was indexed
    part = view.parts["u07"]
    mine = [e for e in entries if e["user_id"] == "u07"]
    assert [id(e) for e in part.index.entries] == [id(e) for e in mine]
    monkeypatch.undo()
    assert rows(got) == expected(entries, POOLS, CONTEXT, s.NEAR_NOW, {"user_id": "u07"})


def test_a_value_most_entries_hold_walks_the_whole_index_of_an_unpartitioned_store():
    entries, store = tenant_store()
    for entry in entries[:150]:
        store.upsert({**entry, "team": "big"})
    live = store.entries
    where = {"team": "big"}
    got = store.decide(POOLS, CONTEXT, now=s.NEAR_NOW, where=where)
    assert store._views["team"].parts == {}  # no copy of most of the store was indexed
    assert rows(got) == expected(live, POOLS, CONTEXT, s.NEAR_NOW, where)
    store.decide(POOLS, CONTEXT, now=s.NEAR_NOW, where={"team": "t3"})
    assert list(store._views["team"].parts) == ["t3"]


def test_a_store_keeps_the_views_of_four_keys_the_least_recently_used_dropped():
    entries, store = tenant_store()
    for entry in entries:
        store.upsert({**entry, **{f"k{j}": entry["id"][-1] for j in range(6)}})
    for key in ("k0", "k1", "k2", "k3", "k0", "k4"):
        store.decide(POOLS, CONTEXT, now=s.NEAR_NOW, where={key: "3"})
    assert list(store._views) == ["k2", "k3", "k0", "k4"]  # k1 was the least recently used
    # a filter with a viewed key and an unviewed one walks the viewed one's view
    store.decide(POOLS, CONTEXT, now=s.NEAR_NOW, where={"k5": "3", "k2": "3"})
    assert list(store._views) == ["k3", "k0", "k4", "k2"]


def test_writes_keep_a_built_part_current_and_rebuild_drops_every_view():
    entries, store = tenant_store()
    where = {"user_id": "u03"}

    def check():
        got = store.decide(POOLS, CONTEXT, now=s.NEAR_NOW, where=where)
        assert rows(got) == expected(store.entries, POOLS, CONTEXT, s.NEAR_NOW, where)
        check_views(store)

    check()
    part = store._views["user_id"].parts["u03"]
    store.add({"id": "new", "user_id": "u03", "content": "deploy the database", "type": "task"})
    store.upsert({**entries[3], "content": "release the database"})  # in place, same tenant
    store.delete(entries[43]["id"])
    assert store._views["user_id"].parts["u03"] is part  # kept, not rebuilt
    check()
    store.upsert({**entries[83], "user_id": "u04"})  # moved out: u03's part is made again
    assert "u03" not in store._views["user_id"].parts
    check()
    store.upsert({**entries[4], "user_id": "u03"})  # moved in, in the middle of u03's slots
    check()
    store.rebuild()
    assert store._views == {}
    check()


def test_an_unhashable_value_in_the_store_gives_its_key_no_parts_and_the_right_answer():
    entries, store = tenant_store()
    for team in ("t3", "t5"):
        store.decide(POOLS, CONTEXT, now=s.NEAR_NOW, where={"team": team})
    assert list(store._views["team"].parts) == ["t3", "t5"]
    store.upsert({**entries[3], "team": {"t5"}})  # a set: equal to frozenset({"t5"})
    assert store._views["team"].parts == {}  # a view holding an unhashable value has no parts
    store.upsert(entries[3])
    store.upsert({**entries[5], "team": {"t5"}})
    for where in ({"team": frozenset({"t5"})}, {"team": "t5"}, {"team": "t5", "user_id": "u05"}):
        got = store.decide(POOLS, CONTEXT, now=s.NEAR_NOW, where=where)
        assert rows(got) == expected(store.entries, POOLS, CONTEXT, s.NEAR_NOW, where)
        assert store._views["team"].parts == {}
    assert list(store._views["user_id"].parts) == ["u05"]  # the other key served
    store.upsert({**entries[5], "team": "t5"})  # hashable again: the key gets parts again
    store.decide(POOLS, CONTEXT, now=s.NEAR_NOW, where={"team": "t5"})
    assert list(store._views["team"].parts) == ["t5"]
    check_views(store)


# -- threads -------------------------------------------------------------------------


def test_queries_of_many_tenants_beside_a_writer_answer_as_a_sequential_run():
    # Readers query tenants u00-u09 on six keys (more than the four views
    # kept, so views are dropped and made again while they run). The writer
    # touches the very parts they walk, without changing any answer: it
    # upserts equal copies of their entries in place, and adds, moves between
    # tenants, replaces and deletes retired entries (never loaded, and always
    # after every stored entry, so no position moves). Answers are compared
    # by value: the copies are other objects.
    rng = random.Random(7)
    tenants = [f"u{t:02d}" for t in range(10)]
    keys = ("user_id", "k0", "k1", "k2", "k3", "k4")
    entries = []
    for n in range(300):
        entry = s.near_tie_entry(rng, n)
        entry["id"] = f"e{n}"
        entry.update(dict.fromkeys(keys, tenants[n % 10]))
        entries.append(entry)
    store = PreparedStore(entries)
    queries = []
    for tenant in tenants:
        for key in keys:
            where = {key: tenant}
            pools, context = s.near_tie_pools(rng), s.near_tie_context(rng)
            queries.append((where, pools, context, by_value(
                expected(entries, pools, context, s.NEAR_NOW, where), entries)))
    done = threading.Event()
    failures = []
    writes = [0]

    def writer():
        wrng = random.Random(11)
        n = 0
        try:
            while not done.is_set():
                first, second = wrng.sample(tenants, 2)
                retired = {"id": f"x{n}", "status": "retired", "content": "deploy",
                           **dict.fromkeys(keys, first)}
                store.add(retired)
                store.upsert({**retired, **dict.fromkeys(keys, second)})  # moved
                store.upsert({**retired, "content": "release", **dict.fromkeys(keys, second)})
                store.upsert(dict(wrng.choice(entries)))  # an equal copy, in place
                store.delete(f"x{n}")
                n += 1
                writes[0] += 5
        except Exception as error:  # pragma: no cover - reported below
            failures.append(error)

    def reader(mine):
        try:
            for _ in range(6):
                for where, pools, context, want in mine:
                    got = store.decide(pools, context, now=s.NEAR_NOW, where=where)
                    named = {name: [(d.entry["id"], *row[1:]) for d, row in zip(picked, got_rows)]
                             for (name, picked), got_rows in zip(got.items(), rows(got).values())}
                    if named != want:
                        failures.append(AssertionError(f"{where} answered differently"))
        except Exception as error:  # pragma: no cover - reported below
            failures.append(error)

    threads = [threading.Thread(target=reader, args=(queries[k::4],)) for k in range(4)]
    write = threading.Thread(target=writer)
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)  # switch threads often: more interleavings to go wrong
    try:
        write.start()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        done.set()
        write.join()
    finally:
        sys.setswitchinterval(interval)
    assert not failures, failures[:3]
    assert writes[0] > 100
    check_views(store)


def by_value(answer, entries):
    """Rows with the entry named by its id (stored entries have unique ids), not its identity."""
    name = {id(e): e["id"] for e in entries}
    return {pool: [(name.get(row[0], row[0]), *row[1:]) for row in got]
            for pool, got in answer.items()}
