"""PoolSplitStore on InMemoryStore, SqliteStore and a real PostgreSQL.

Every test runs on the three backends (``bare_store`` in conftest.py). The
store API answers through the wrapper as through the bare store; pool-split
reads give the literal reference's answer over exactly the entries the bare
store holds; corrections written by another store object load on the next
query; other writes within the documented intervals; bad input is refused
with nothing written.
"""

from __future__ import annotations

import asyncio
import random
from datetime import datetime, timedelta, timezone

import pytest
from langgraph.store.base import GetOp, ListNamespacesOp, MatchCondition, PutOp, SearchOp

from poolsplit_core import CORRECTIONS_HEADING, render_pools
from poolsplit_core.poolsplit import Pool
from poolsplit_integrations._entries import item_to_entry
from poolsplit_integrations.langgraph import PoolSplitStore, PoolSplitStoreRetriever, item_entry
from tests.reference import ref_retrieve_pools

NOW = datetime(2026, 3, 1, tzinfo=timezone.utc)
WORDS = "rotate database deploy release notes memory budget pool the and db ok v2".split()
TYPES = ("note", "task", "skill", "fact")
NS = ("memories", "ana")


class Clock:
    """A monotonic clock the test moves by hand, so intervals are exact."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def make_value(rng: random.Random) -> dict:
    value: dict = {"content": " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 6)))}
    if rng.random() < 0.9:
        value["type"] = rng.choice(TYPES)
    if rng.random() < 0.08:
        value["scope"] = "always"
    if rng.random() < 0.7:
        value["base_priority"] = rng.choice((5, 8, 3))
    if rng.random() < 0.8:
        value["created"] = (NOW - timedelta(days=rng.choice((0, 3, 45, 200)))).isoformat()
    if rng.random() < 0.4:
        value["tags"] = rng.sample(("db", "ops"), rng.randint(1, 2))
    if rng.random() < 0.3:
        value["project"] = rng.choice(("atlas", "zeus"))
    if rng.random() < 0.6:
        value["token_count"] = rng.randint(1, 12)
    if rng.random() < 0.05:
        value["status"] = "retired"
    return value


def make_pools(rng: random.Random) -> list[Pool]:
    return [Pool(f"p{k}", rng.randint(3, 40), rng.randint(1, 6),
                 None if rng.random() < 0.3 else tuple(rng.sample(TYPES, rng.randint(1, 3))))
            for k in range(rng.randint(1, 3))]


def make_context(rng: random.Random) -> dict:
    return {"message": " ".join(rng.choice(WORDS) for _ in range(rng.randint(0, 4))),
            "project": rng.choice((None, "atlas", "zeus")),
            "tags": rng.sample(("db", "ops"), rng.randint(0, 2))}


def all_items(bare, prefix):
    out, offset = [], 0
    while True:
        page = bare.search(prefix, limit=500, offset=offset)
        out += page
        if len(page) < 500:
            return out
        offset += 500


def entry_facts(entries):
    """Entries compared by what the core reads of them, independent of order."""
    return sorted((repr(e["id"]), sorted((k, repr(v)) for k, v in e.items())) for e in entries)


def keys(got):
    return {name: [item.key for item in items] for name, items in got.items()}


def ref_with_always_pool(entries, pools, context, *, now):
    """The reference's answer with the core's ``always_pool=True``, which the store passes.

    The pool ``"always"`` is filled last: every type, no room for contextual entries (so
    only the corrections no earlier pool took), and present only when it loads one; it is
    listed first.
    """
    got = ref_retrieve_pools(entries, [*pools, Pool("always", 0, 0)], context, now=now)
    always = got.pop("always")
    return {"always": always, **got} if always else got


# --------------------------------------------------------------------------
# The store API passes through
# --------------------------------------------------------------------------


def fill(store, rng, n=30):
    for i in range(n):
        store.put(NS if i % 3 else ("memories", "bo"), f"k{i}", {**make_value(rng), "n": i})
    store.put(("memories", "ana", "deep"), "d1", {"content": "deep", "type": "note", "n": -1})


def test_every_store_call_answers_as_the_bare_store(bare_store):
    wrapped = PoolSplitStore(bare_store)
    fill(wrapped, random.Random(1))
    assert wrapped.supports_ttl == bare_store.supports_ttl
    assert wrapped.ttl_config == bare_store.ttl_config
    assert wrapped.get(NS, "k1") == bare_store.get(NS, "k1")
    assert wrapped.get(NS, "missing") is None
    for kwargs in ({}, {"limit": 5}, {"limit": 4, "offset": 3}, {"query": "deploy", "limit": 5},
                   {"filter": {"type": "task"}}, {"filter": {"scope": "always"}},
                   {"filter": {"base_priority": {"$ne": 5}}, "limit": 50},
                   {"filter": {"n": {"$gte": 6}}, "limit": 50}):
        got = wrapped.search(("memories",), **kwargs)
        assert got == bare_store.search(("memories",), **kwargs), kwargs
    assert wrapped.search(("memories",), limit=100)  # the calls above compared something
    for kwargs in ({}, {"prefix": ("memories",)}, {"suffix": ("deep",)}, {"max_depth": 2},
                   {"limit": 1, "offset": 1}):
        assert wrapped.list_namespaces(**kwargs) == bare_store.list_namespaces(**kwargs)
    ops = [GetOp(NS, "k1"), SearchOp(("memories",), {"type": "note"}, 5, 0),
           ListNamespacesOp((MatchCondition("prefix", ("memories",)),), None, 10, 0)]
    assert wrapped.batch(ops) == bare_store.batch(ops)


def test_async_calls_answer_as_the_bare_store(bare_store):
    wrapped = PoolSplitStore(bare_store)
    fill(wrapped, random.Random(2), n=12)

    async def refused(call):
        try:
            await call
        except NotImplementedError as exc:
            return str(exc)
        return None

    # SqliteStore has no async twins: the wrapper refuses exactly as it does.
    bare_refusal = asyncio.run(refused(bare_store.aget(NS, "k1")))
    if bare_refusal is not None:
        assert asyncio.run(refused(wrapped.aget(NS, "k1"))) == bare_refusal
        assert asyncio.run(refused(wrapped.aput(NS, "a", {"content": "x"}))) == bare_refusal
        assert bare_store.get(NS, "a") is None
        return

    async def run():
        assert await wrapped.aget(NS, "k1") == await bare_store.aget(NS, "k1")
        assert (await wrapped.asearch(("memories",), limit=3, offset=2)
                == await bare_store.asearch(("memories",), limit=3, offset=2))
        assert (await wrapped.alist_namespaces(prefix=("memories",))
                == await bare_store.alist_namespaces(prefix=("memories",)))
        wrapped.retrieve_pools(NS, [Pool("all", 500, 50)], now=NOW)  # the index exists now
        await wrapped.aput(NS, "async-1", {"content": "written async", "type": "note"})
        await wrapped.adelete(NS, "k1")
        await wrapped.abatch([PutOp(NS, "async-2", {"content": "batched async"}),
                              PutOp(NS, "k2", None)])

    asyncio.run(run())
    assert bare_store.get(NS, "async-1").value["content"] == "written async"
    assert bare_store.get(NS, "k1") is None
    index = {e["id"] for e in wrapped.entries(NS)}
    assert {"async-1", "async-2"} <= index and not {"k1", "k2"} & index


def test_ttl_is_the_bare_store_s(bare_store):
    wrapped = PoolSplitStore(bare_store)
    if bare_store.supports_ttl:
        wrapped.put(NS, "short", {"content": "short-lived"}, ttl=5)
        assert bare_store.get(NS, "short") is not None
    else:
        with pytest.raises(NotImplementedError):
            wrapped.put(NS, "short", {"content": "short-lived"}, ttl=5)
        assert bare_store.get(NS, "short") is None


# --------------------------------------------------------------------------
# Pool-split reads: the reference's answer over exactly the store's items
# --------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(3))
def test_pool_split_reads_match_the_reference_over_the_store_s_items(bare_store, seed):
    rng = random.Random(seed)
    wrapped = PoolSplitStore(bare_store)
    for i in range(120):
        wrapped.put(NS, f"m{i}", make_value(rng))
    wrapped.put(("memories", "bo"), "m1", {"content": "another user", "type": "note"})
    wrapped.put((*NS, "deep"), "m1", {"content": "deeper namespace", "type": "note"})
    next_key = 120
    for step in range(25):
        pools, context = make_pools(rng), make_context(rng)
        got = wrapped.retrieve_pools(NS, pools, context, now=NOW)
        entries = wrapped.entries(NS)
        expected = ref_with_always_pool(entries, pools, context, now=NOW)
        assert keys(got) == {name: [e["id"] if isinstance(e["id"], str) else e["id"][-1]
                                    for e in picked] for name, picked in expected.items()}
        assert list(got) == list(expected)  # the always pool first: corrections lead
        # ... and those entries are exactly the store's items, mapped.
        bare = [item_to_entry(i.namespace, i.key, i.value, created_at=i.created_at,
                              read_from=NS) for i in all_items(bare_store, NS)]
        assert entry_facts(entries) == entry_facts(bare)
        assert len(entries) == 121
        # Writes through the wrapper: update, delete, add (the index follows).
        victim = rng.choice([e["id"] for e in entries if isinstance(e["id"], str)])
        if step % 3 == 0:
            wrapped.put(NS, victim, make_value(rng))
        elif step % 3 == 1:
            wrapped.batch([PutOp(NS, victim, None),
                           PutOp(NS, f"m{next_key}", make_value(rng))])
            next_key += 1
        else:
            wrapped.delete(NS, victim)
            wrapped.put(NS, f"m{next_key}", make_value(rng))
            next_key += 1


def test_a_result_renders_every_correction_first_as_the_text_the_core_scored(bare_store):
    wrapped = PoolSplitStore(bare_store)
    wrapped.put(NS, "t1", {"content": "deploy the api", "type": "task"})
    wrapped.put(NS, "fix", {"content": "Deploy with just.", "type": "task", "scope": "always"})
    wrapped.put(NS, "rule", {"content": "Ask first.", "type": "lesson", "scope": "always"})
    wrapped.put(NS, "f1", {"kind": "fact", "content": {"staging db": "pg-2"}})
    pools = [Pool("tasks", 100, 5, ("task",)), Pool("facts", 100, 5, ("fact",))]
    text = (f"## {CORRECTIONS_HEADING}\n- Ask first.\n- Deploy with just.\n\n"
            "## tasks\n- deploy the api\n\n## facts\n- staging db: pg-2")
    got = wrapped.retrieve_pools(NS, pools, {"message": "deploy"}, now=NOW)
    assert list(got) == ["always", "tasks", "facts"]  # "rule": a type no pool takes
    assert render_pools(got, entry=item_entry) == text
    assert got["facts"][0].value == {"kind": "fact", "content": {"staging db": "pg-2"}}
    why = wrapped.explain_pools(NS, pools, {"message": "deploy"}, now=NOW)
    assert list(why.ledgers) == ["always", "tasks", "facts"]
    assert render_pools(why.loaded(), ledgers=why.ledgers) == text  # nothing left out
    got = asyncio.run(wrapped.aretrieve_pools(NS, pools, {"message": "deploy"}, now=NOW))
    assert render_pools(got, entry=item_entry) == text


def test_a_deeper_namespace_s_equal_key_is_its_own_entry(bare_store):
    wrapped = PoolSplitStore(bare_store)
    wrapped.put(NS, "same", {"content": "top", "type": "note"})
    wrapped.put((*NS, "deep"), "same", {"content": "below", "type": "note"})
    ids = sorted(map(repr, (e["id"] for e in wrapped.entries(("memories",)))))
    assert ids == sorted(map(repr, [("ana", "same"), ("ana", "deep", "same")]))
    got = wrapped.retrieve_pools(NS, [Pool("all", 100, 5)], {"message": "below"}, now=NOW)
    assert [(i.namespace, i.key) for i in got["all"]] == [((*NS, "deep"), "same"), (NS, "same")]


# --------------------------------------------------------------------------
# Freshness: corrections never stale, other writers within the intervals
# --------------------------------------------------------------------------


def test_a_correction_another_writer_adds_loads_on_the_very_next_query(bare_store):
    clock = Clock()
    mine = PoolSplitStore(bare_store, refresh_interval=30, reconcile_interval=300, clock=clock)
    other = PoolSplitStore(bare_store)  # another process's store object, same backend
    for i in range(20):
        mine.put(NS, f"n{i}", {"content": f"deploy note {i}", "type": "note"})
    pools = [Pool("notes", max_tokens=20, max_entries=2)]
    before = mine.retrieve_pools(NS, pools, {"message": "deploy"}, now=NOW)
    assert not any(i.value.get("scope") == "always" for i in before["notes"])

    other.put(NS, "fix", {"content": "Deploy with just, not make.", "scope": "always"})
    after = mine.retrieve_pools(NS, pools, {"message": "deploy"}, now=NOW)  # no clock move
    assert after["notes"][0].key == "fix"
    assert mine.explain_pools(NS, pools, now=NOW).always_read_live == 1

    other.delete(NS, "fix")  # withdrawn: gone on the next query too
    gone = mine.retrieve_pools(NS, pools, {"message": "deploy"}, now=NOW)
    assert "fix" not in [i.key for i in gone["notes"]]
    other.put(NS, "n3", {"content": "Deploy on Tuesdays.", "scope": "always"})  # promoted
    promoted = mine.retrieve_pools(NS, pools, {"message": "deploy"}, now=NOW)
    assert [i.key for i in promoted["notes"]].count("n3") == 1
    assert promoted["notes"][0].key == "n3"


def test_other_writers_items_arrive_within_refresh_and_deletes_within_reconcile(indexed_store):
    bare_store = indexed_store
    clock = Clock()
    mine = PoolSplitStore(bare_store, refresh_interval=5, reconcile_interval=60, clock=clock)
    other = PoolSplitStore(bare_store)
    mine.put(NS, "old", {"content": "budget review", "type": "task"})
    pools = [Pool("all", max_tokens=100, max_entries=10)]
    assert keys(mine.retrieve_pools(NS, pools, now=NOW)) == {"all": ["old"]}

    other.put(NS, "new", {"content": "release notes", "type": "task"})
    other.put(NS, "old", {"content": "budget review moved", "type": "task"})
    explained = mine.explain_pools(NS, pools, now=NOW)
    assert explained.staleness == 0.0  # nothing polled since the cold read at this clock

    clock.advance(5)  # the documented bound for new and changed items
    got = mine.retrieve_pools(NS, pools, now=NOW)
    assert sorted(keys(got)["all"]) == ["new", "old"]
    assert {i.key: i.value["content"] for i in got["all"]}["old"] == "budget review moved"
    assert mine.explain_pools(NS, pools, now=NOW).staleness == 0.0

    other.delete(NS, "new")
    clock.advance(60)  # the documented bound for deletes
    assert keys(mine.retrieve_pools(NS, pools, now=NOW)) == {"all": ["old"]}
    clock.advance(3)
    assert mine.explain_pools(NS, pools, now=NOW).staleness == 3.0


def test_over_postgresql_every_read_is_the_database_now(postgres_ready):
    """Another writer's add, change and delete are in the very next read: no interval."""
    from tests.integrations.conftest import open_store

    bare, close = open_store("postgres", postgres_ready)
    try:
        clock = Clock()
        mine = PoolSplitStore(bare, refresh_interval=1000, reconcile_interval=1000, clock=clock)
        other = PoolSplitStore(bare)
        mine.put(NS, "old", {"content": "budget review", "type": "task"})
        pools = [Pool("all", max_tokens=100, max_entries=10)]
        assert keys(mine.retrieve_pools(NS, pools, now=NOW)) == {"all": ["old"]}
        other.put(NS, "new", {"content": "release notes", "type": "task"})
        other.put(NS, "old", {"content": "budget review moved", "type": "task"})
        got = mine.retrieve_pools(NS, pools, now=NOW)  # the clock never moves
        assert sorted(keys(got)["all"]) == ["new", "old"]
        assert {i.key: i.value["content"] for i in got["all"]}["old"] == "budget review moved"
        other.delete(NS, "new")
        assert keys(mine.retrieve_pools(NS, pools, now=NOW)) == {"all": ["old"]}
        explained = mine.explain_pools(NS, pools, now=NOW)
        assert (explained.engine, explained.staleness) == ("snapshot", 0.0)
        assert other.explain_pools(NS, pools, now=NOW).staleness == 0.0  # a real clock too
        assert mine._views == {}  # nothing of the namespace is kept
    finally:
        close()


def test_refresh_forces_a_full_read(indexed_store):
    bare_store = indexed_store
    mine = PoolSplitStore(bare_store, refresh_interval=1000, reconcile_interval=1000,
                          clock=Clock())
    other = PoolSplitStore(bare_store)
    other.put(NS, "a", {"content": "alpha"})
    other.put(NS, "b", {"content": "beta"})
    assert {e["id"] for e in mine.entries(NS)} == {"a", "b"}
    other.delete(NS, "a")
    other.put(NS, "c", {"content": "gamma"})
    assert {e["id"] for e in mine.entries(NS)} == {"a", "b"}  # not yet: intervals not due
    mine.refresh()
    assert {e["id"] for e in mine.entries(NS)} == {"b", "c"}


# --------------------------------------------------------------------------
# Bad input: a clear error, nothing written
# --------------------------------------------------------------------------


def test_a_value_that_is_not_a_mapping_is_refused_naming_it_and_nothing_is_written(bare_store):
    wrapped = PoolSplitStore(bare_store)
    wrapped.put(NS, "ok", {"content": "fine"})
    wrapped.entries(NS)
    with pytest.raises(TypeError, match=r"'memories', 'ana'.*'bad'.*mapping.*got str"):
        wrapped.put(NS, "bad", "just text")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"op 1.*'bad2'.*mapping.*got list"):
        wrapped.batch([PutOp(NS, "good", {"content": "good"}), PutOp(NS, "bad2", ["x"])])
    with pytest.raises(TypeError, match=r"'bad3'.*tags"):
        wrapped.put(NS, "bad3", {"content": "x", "tags": [1, 2]})
    for key in ("bad", "good", "bad2", "bad3"):
        assert bare_store.get(NS, key) is None, key
    assert [e["id"] for e in wrapped.entries(NS)] == ["ok"]


def test_a_value_the_store_holds_that_is_not_a_mapping_is_named_when_read():
    with pytest.raises(TypeError, match=r"'ns',\).*'k'.*mapping.*got int"):
        item_to_entry(("ns",), "k", 5)


def test_bad_arguments_are_refused_by_name(bare_store):
    with pytest.raises(TypeError, match="BaseStore"):
        PoolSplitStore({})  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="refresh_interval must be"):
        PoolSplitStore(bare_store, refresh_interval=-1)
    with pytest.raises(ValueError, match="reconcile_interval must be >="):
        PoolSplitStore(bare_store, refresh_interval=10, reconcile_interval=5)
    wrapped = PoolSplitStore(bare_store)
    with pytest.raises(ValueError, match=r"without '\.'"):
        wrapped.retrieve_pools(("memories", "a.b"), [Pool("all", 10, 1)])
    with pytest.raises(TypeError, match="tuple of str"):
        wrapped.retrieve_pools("memories", [Pool("all", 10, 1)])  # type: ignore[arg-type]


STR_REFUSED = (r"namespace must be a tuple of str labels, got the str 'mem/ana', which a"
               r" LangGraph store reads as one label per character: pass \('mem', 'ana'\)"
               r" \(or \('mem/ana',\) for one label\)")


def str_namespace_calls(store):
    """Every call of the store that takes a namespace, each given the str ``"mem/ana"``."""
    ns, pools = "mem/ana", [Pool("all", 10, 1)]
    sync = {
        "put": lambda: store.put(ns, "k", {"content": "x"}),
        "put None": lambda: store.put(ns, "k", None),
        "get": lambda: store.get(ns, "k"),
        "search": lambda: store.search(ns),
        "delete": lambda: store.delete(ns, "k"),
        "list_namespaces prefix": lambda: store.list_namespaces(prefix=ns),
        "list_namespaces suffix": lambda: store.list_namespaces(suffix=ns),
        "batch put": lambda: store.batch([PutOp(NS, "ok", {"content": "x"}),
                                          PutOp(ns, "k", {"content": "x"})]),
        "batch get": lambda: store.batch([GetOp(ns, "k")]),
        "batch search": lambda: store.batch([SearchOp(ns, None, 5, 0)]),
        "batch list": lambda: store.batch(
            [ListNamespacesOp((MatchCondition("prefix", ns),), None, 10, 0)]),
        "retrieve_pools": lambda: store.retrieve_pools(ns, pools),
        "explain_pools": lambda: store.explain_pools(ns, pools),
        "entries": lambda: store.entries(ns),
        "refresh": lambda: store.refresh(ns),
    }
    run = asyncio.run
    awaited = {
        "aput": lambda: run(store.aput(ns, "k", {"content": "x"})),
        "aget": lambda: run(store.aget(ns, "k")),
        "asearch": lambda: run(store.asearch(ns)),
        "adelete": lambda: run(store.adelete(ns, "k")),
        "alist_namespaces": lambda: run(store.alist_namespaces(prefix=ns)),
        "abatch": lambda: run(store.abatch([PutOp(ns, "k", {"content": "x"})])),
        "aretrieve_pools": lambda: run(store.aretrieve_pools(ns, pools)),
        "aexplain_pools": lambda: run(store.aexplain_pools(ns, pools)),
    }
    return {**sync, **awaited}


@pytest.mark.parametrize("call", list(str_namespace_calls(None)))
def test_a_str_namespace_is_refused_alike_by_every_write_and_read(bare_store, call):
    wrapped = PoolSplitStore(bare_store)
    with pytest.raises(TypeError, match=STR_REFUSED.replace("namespace must", ".*must")):
        str_namespace_calls(wrapped)[call]()
    assert bare_store.list_namespaces() == []  # nothing was written, not even a batch's first op


def test_the_bare_store_would_file_a_str_namespace_where_no_tuple_finds_it(bare_store):
    # why the wrapper refuses: LangGraph's stores read the str as one label per character
    bare_store.put("mem/ana", "k", {"content": "x"})  # type: ignore[arg-type]
    assert bare_store.get(("mem", "ana"), "k") is None
    assert bare_store.get(("mem/ana",), "k") is None
    filed = bare_store.get("mem/ana", "k")  # type: ignore[arg-type]
    assert tuple(filed.namespace) == ("m", "e", "m", "/", "a", "n", "a")


def test_a_str_namespace_is_refused_naming_the_argument_and_the_tuple_to_pass(bare_store):
    wrapped = PoolSplitStore(bare_store)
    with pytest.raises(TypeError, match=STR_REFUSED):
        wrapped.put("mem/ana", "k", {"content": "x"})  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=STR_REFUSED):
        wrapped.retrieve_pools("mem/ana", [Pool("all", 10, 1)])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=STR_REFUSED.replace("namespace", "namespace_prefix", 1)):
        wrapped.search("mem/ana")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"batch\(\) op 1: namespace must be a tuple"):
        wrapped.batch([PutOp(NS, "ok", {"content": "x"}), PutOp("mem/ana", "k", {})])
    with pytest.raises(TypeError, match=r"got the str 'memories', .* pass \('memories',\)$"):
        wrapped.put("memories", "k", {"content": "x"})  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"got the str 'm\.ana', .* pass \('m', 'ana'\)$"):
        wrapped.get("m.ana", "k")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=STR_REFUSED):
        PoolSplitStoreRetriever(store=wrapped, namespace="mem/ana", pools=[Pool("all", 10, 1)])
    # a tuple is what every call takes
    wrapped.put(("mem", "ana"), "k", {"content": "x"})
    assert [i.key for i in wrapped.retrieve_pools(("mem", "ana"), [Pool("all", 10, 1)])["all"]
            ] == ["k"]


# --------------------------------------------------------------------------
# Property: two writers in any order; what a query may and must see
# --------------------------------------------------------------------------

from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

KEYS = [f"k{i}" for i in range(8)]
VALUES = st.fixed_dictionaries(
    {"content": st.sampled_from(["deploy the api", "release notes", "budget db", "ok"]),
     "type": st.sampled_from(["note", "task", "correction"])},
    optional={"scope": st.just("always"), "base_priority": st.sampled_from([3, 5, 8])})
STEPS = st.lists(st.one_of(
    st.tuples(st.sampled_from(["mine_put", "other_put"]), st.sampled_from(KEYS), VALUES),
    st.tuples(st.sampled_from(["mine_delete", "other_delete"]), st.sampled_from(KEYS)),
    st.tuples(st.just("advance"), st.sampled_from([1, 5, 60])),
    st.tuples(st.just("query"), st.sampled_from(["deploy", "budget release", ""])),
), min_size=1, max_size=30)


@given(STEPS)
def test_any_interleaving_of_two_writers_keeps_every_documented_promise(steps):
    from langgraph.store.memory import InMemoryStore

    bare, clock = InMemoryStore(), Clock()
    mine = PoolSplitStore(bare, refresh_interval=5, reconcile_interval=60, clock=clock)
    other = PoolSplitStore(bare)
    pools = [Pool("all", max_tokens=12, max_entries=2)]
    since_full_read = None  # seconds since mine last read the namespace in full
    others_since = False  # the other writer wrote since then
    for step in steps:
        kind = step[0]
        if kind in ("mine_put", "other_put"):
            (mine if kind == "mine_put" else other).put(NS, step[1], step[2])
            others_since = others_since or kind == "other_put"
        elif kind in ("mine_delete", "other_delete"):
            if bare.get(NS, step[1]) is not None:
                (mine if kind == "mine_delete" else other).delete(NS, step[1])
                others_since = others_since or kind == "other_delete"
        elif kind == "advance":
            clock.advance(step[1])
            if since_full_read is not None:
                since_full_read += step[1]
        else:
            got = mine.retrieve_pools(NS, pools, {"message": step[1]}, now=NOW)
            entries = mine.entries(NS)
            # The core's answer over exactly the entries this query used.
            assert keys(got) == {name: [e["id"] for e in picked] for name, picked in
                                 ref_retrieve_pools(entries, pools, {"message": step[1]},
                                                    now=NOW).items()}
            # Corrections: exactly the store's, now, whatever the index knows.
            live = {i.key for i in bare.search(NS, limit=100)
                    if i.value.get("scope") == "always"}
            assert {i.key for i in got["all"] if i.value.get("scope") == "always"} == live
            if since_full_read is None or since_full_read >= 60:
                since_full_read = 0  # this query read the namespace in full (cold/reconcile)
                others_since = False
            if not others_since:  # its own writes are in at once; all is in after a full read
                stored = [item_to_entry(i.namespace, i.key, i.value, created_at=i.created_at)
                          for i in bare.search(NS, limit=100)]
                assert entry_facts(entries) == entry_facts(stored)


def test_the_always_tier_ceiling_raises_rather_than_drop_a_correction(bare_store):
    from poolsplit_core.poolsplit import AlwaysScopeOverflowError

    wrapped = PoolSplitStore(bare_store)
    for i in range(3):
        wrapped.put(NS, f"fix{i}", {"content": "x" * 40, "scope": "always", "token_count": 10})
    pools = [Pool("all", 100, 5)]
    assert len(wrapped.retrieve_pools(NS, pools, max_always_tokens=30)["all"]) == 3
    with pytest.raises(AlwaysScopeOverflowError):
        wrapped.retrieve_pools(NS, pools, max_always_tokens=29)
    with pytest.raises(AlwaysScopeOverflowError):
        wrapped.explain_pools(NS, pools, max_always_tokens=29)
