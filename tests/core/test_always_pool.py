"""``always_pool=True``: every active correction loads, whatever types the pools take.

An always-scope entry whose type no pool accepts loads in one more pool,
``"always"``, filled after the caller's and listed before them: in input
order, outside every budget, counted by ``max_always_tokens``. The caller's
pools are untouched, the key is there only when something loads in it, and
every path (the functions, each query of a PreparedStore, both engines,
partitioned or not) answers the same, in the same order.
"""

from __future__ import annotations

import copy
from collections import Counter
from datetime import datetime, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from poolsplit_core.poolsplit import (
    AlwaysScopeOverflowError,
    Decision,
    Ledger,
    Pool,
    default_is_active,
    explain_pools,
    retrieve_pools,
)
from poolsplit_core.prepared import PreparedStore
from tests.core import strategies as s

NOW = datetime(2026, 3, 1, tzinfo=timezone.utc)
ENGINES = ("python", "numpy")
STORE = [
    {"id": "fix-1", "type": "correction", "scope": "always", "token_count": 4},
    {"id": "t1", "type": "task", "token_count": 3, "content": "deploy"},
    {"id": "fix-2", "scope": "always", "token_count": 5},  # no type: a note
    {"id": "n1", "type": "note", "token_count": 2},
    {"id": "old-fix", "type": "lesson", "scope": "always", "token_count": 50,
     "status": "retired"},
    {"id": "fix-3", "type": "lesson", "scope": "always", "token_count": 6, "user_id": "bo"},
    {"id": "task-fix", "type": "task", "scope": "always", "token_count": 1},
]
TASKS = [Pool("tasks", max_tokens=10, max_entries=2, types=("task",))]


def ids(got):
    return {name: [e["id"] for e in picked] for name, picked in got.items()}


def identities(got):
    return {name: [id(e) for e in picked] for name, picked in got.items()}


def test_an_unpooled_correction_loads_in_the_always_pool_listed_first():
    got = retrieve_pools(STORE, TASKS, now=NOW, always_pool=True)
    assert ids(got) == {"tasks": ["task-fix", "t1"], "always": ["fix-1", "fix-2", "fix-3"]}
    # a prompt rendered in the result's order reads the corrections first
    assert list(got) == ["always", "tasks"]
    # without the option the same call drops the three corrections
    assert ids(retrieve_pools(STORE, TASKS, now=NOW)) == {"tasks": ["task-fix", "t1"]}


def test_a_correction_a_pool_accepts_stays_in_that_pool():
    pools = [Pool("notes", max_tokens=2, max_entries=1, types=("note",)), *TASKS]
    got = retrieve_pools(STORE, pools, now=NOW, always_pool=True)
    assert ids(got) == {"notes": ["fix-2", "n1"], "tasks": ["task-fix", "t1"],
                        "always": ["fix-1", "fix-3"]}
    assert list(got) == ["always", "notes", "tasks"]


def test_the_always_key_is_there_only_when_an_entry_loads_in_it():
    every_type = [Pool("all", max_tokens=10, max_entries=2)]
    assert list(retrieve_pools(STORE, every_type, now=NOW, always_pool=True)) == ["all"]
    no_correction = [e for e in STORE if e.get("scope") != "always"]
    assert list(retrieve_pools(no_correction, TASKS, now=NOW, always_pool=True)) == ["tasks"]
    explained = explain_pools(no_correction, TASKS, now=NOW, always_pool=True)
    assert list(explained.ledgers) == ["tasks"]


def test_an_empty_pool_list_with_the_option_returns_only_the_corrections():
    got = retrieve_pools(STORE, [], now=NOW, always_pool=True)
    assert ids(got) == {"always": ["fix-1", "fix-2", "fix-3", "task-fix"]}
    assert retrieve_pools(STORE[1:2], [], now=NOW, always_pool=True) == {}
    assert retrieve_pools(STORE, [], now=NOW) == {}  # without it: as before


def test_an_inactive_correction_does_not_load_in_the_always_pool():
    got = retrieve_pools(STORE, [], now=NOW, always_pool=True)
    assert "old-fix" not in ids(got)["always"]


def test_explain_reports_the_always_pool_and_its_ledger():
    got = explain_pools(STORE, TASKS, now=NOW, always_pool=True)
    by_id = {d.entry["id"]: d for d in got.decisions}
    assert by_id["fix-1"] == Decision(STORE[0], 0, "always", "always", cost=4, rank=0)
    assert by_id["fix-2"] == Decision(STORE[2], 2, "always", "always", cost=5, rank=1)
    assert by_id["fix-3"] == Decision(STORE[5], 5, "always", "always", cost=6, rank=2)
    assert by_id["n1"].outcome == "no_pool"  # a contextual entry of no pool's type: as before
    assert by_id["old-fix"].outcome == "inactive"
    assert got.ledgers["always"] == Ledger("always", max_tokens=0, max_entries=0, tokens_used=0,
                                           selected=0, always=3, always_tokens=15,
                                           skipped_tokens=0, skipped_entries=0)
    assert list(got.ledgers) == ["always", "tasks"]
    assert list(got.loaded()) == ["always", "tasks"]
    assert {k: [d.entry["id"] for d in v] for k, v in got.loaded().items()} == ids(
        retrieve_pools(STORE, TASKS, now=NOW, always_pool=True))
    without = explain_pools(STORE, TASKS, now=NOW)
    assert [d.outcome for d in without.decisions if d.entry["id"].startswith("fix")] == [
        "no_pool"] * 3
    assert without.ledgers["tasks"] == got.ledgers["tasks"]


@pytest.mark.parametrize("engine", ENGINES)
def test_a_filtered_out_correction_does_not_load_in_the_always_pool(engine):
    prepared = PreparedStore(STORE, engine=engine, partition_key="user_id")
    only_bo = prepared.retrieve_pools(TASKS, now=NOW, where={"user_id": "bo"}, always_pool=True)
    assert ids(only_bo) == {"tasks": [], "always": ["fix-3"]}
    not_fix_1 = PreparedStore(STORE, engine=engine).decide(
        TASKS, now=NOW, include=lambda e: e["id"] != "fix-1", always_pool=True)
    assert {k: [d.entry["id"] for d in v] for k, v in not_fix_1.items()} == {
        "tasks": ["task-fix", "t1"], "always": ["fix-2", "fix-3"]}


def every_entry_point(store, pools, engine, **options):
    """Each public way to run a query with ``options``; each returns the loaded ids per pool."""
    prepared = PreparedStore(store, engine=engine)

    def decided(got):
        return {k: [d.entry["id"] for d in v] for k, v in got.items()}

    return {
        "retrieve_pools": lambda: ids(retrieve_pools(store, pools, now=NOW, **options)),
        "explain_pools": lambda: decided(explain_pools(store, pools, now=NOW,
                                                       **options).loaded()),
        "prepared.retrieve_pools": lambda: ids(prepared.retrieve_pools(pools, now=NOW,
                                                                       **options)),
        "prepared.decide": lambda: decided(prepared.decide(pools, now=NOW, **options)),
        "prepared.explain_pools": lambda: decided(prepared.explain_pools(
            pools, now=NOW, **options).loaded()),
    }


PATHS = list(every_entry_point(STORE, TASKS, "python"))


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("path", PATHS)
def test_the_ceiling_counts_the_always_pool_on_every_path(path, engine):
    # the pooled tier costs 1; the unpooled corrections 4 + 5 + 6 more
    run = every_entry_point(STORE, TASKS, engine, max_always_tokens=15, always_pool=True)[path]
    with pytest.raises(AlwaysScopeOverflowError) as caught:
        run()
    assert caught.value.total == 16
    assert [e["id"] for e in caught.value.entries] == ["task-fix", "fix-1", "fix-2", "fix-3"]
    assert every_entry_point(STORE, TASKS, engine, max_always_tokens=16,
                             always_pool=True)[path]()["always"] == ["fix-1", "fix-2", "fix-3"]
    # without the option only the pooled correction counts
    assert every_entry_point(STORE, TASKS, engine, max_always_tokens=1)[path]() == {
        "tasks": ["task-fix", "t1"]}


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("path", PATHS)
def test_the_always_pool_is_listed_first_on_every_path(path, engine):
    pools = [Pool("notes", max_tokens=2, max_entries=1, types=("note",)), *TASKS]
    got = every_entry_point(STORE, pools, engine, always_pool=True)[path]()
    assert list(got.items()) == [("always", ["fix-1", "fix-3"]), ("notes", ["fix-2", "n1"]),
                                 ("tasks", ["task-fix", "t1"])]
    # a caller's own pool named "always" (without the option) keeps its place
    own = [*TASKS, Pool("always", max_tokens=10, max_entries=2)]
    assert list(every_entry_point(STORE, own, engine)[path]()) == ["tasks", "always"]


def test_the_ceiling_counts_the_always_pool():
    with pytest.raises(AlwaysScopeOverflowError) as caught:
        retrieve_pools(STORE, TASKS, now=NOW, max_always_tokens=15, always_pool=True)
    assert caught.value.total == 16


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("path", PATHS)
def test_a_pool_named_always_clashes_with_the_option_on_every_path(path, engine):
    pools = [*TASKS, Pool("always", max_tokens=10, max_entries=2)]
    run = every_entry_point(STORE, pools, engine, always_pool=True)[path]
    with pytest.raises(ValueError, match=(
            "a pool is named 'always', the name always_pool=True gives to the always-scope"
            " entries no pool's types accept: rename that pool, or pass always_pool=False")):
        run()
    # without the option it is an ordinary pool
    assert every_entry_point(STORE, pools, engine)[path]() == {
        "tasks": ["task-fix", "t1"], "always": ["fix-1", "fix-2", "fix-3", "n1"]}


@pytest.mark.parametrize("value", [1, "yes", None])
def test_the_option_must_be_a_bool(value):
    with pytest.raises(TypeError, match=f"always_pool must be a bool, got {value!r}"):
        retrieve_pools(STORE, TASKS, always_pool=value)
    with pytest.raises(TypeError, match="always_pool must be a bool"):
        PreparedStore(STORE).decide(TASKS, always_pool=value)


# --------------------------------------------------------------------------
# Properties
# --------------------------------------------------------------------------


def unpooled(store, pools, is_active=default_is_active):
    """The active always-scope entries whose type no pool accepts, in input order."""
    return [e for e in store if e.get("scope") == "always" and is_active(e)
            and not any(p.accepts(e.get("type", "note")) for p in pools)]


@given(store=s.stores(), pools=st.lists(s.pools, max_size=4, unique_by=lambda p: p.name),
       context=s.contexts, now=s.nows, fns=s.functions())
def test_every_active_correction_loads_exactly_once_and_the_other_pools_do_not_change(
        store, pools, context, now, fns):
    before = copy.deepcopy(store)
    is_active = fns.get("is_active", default_is_active)
    got = retrieve_pools(store, pools, context, now=now, always_pool=True, **fns)
    plain = retrieve_pools(store, pools, context, now=now, **fns)
    # every active always-scope entry (each listing of a repeated dict) loads exactly once
    loaded = Counter(id(e) for picked in got.values() for e in picked
                     if e.get("scope") == "always")
    assert loaded == Counter(id(e) for e in store if e.get("scope") == "always"
                             and is_active(e))
    # the caller's pools are exactly what they are without the option
    rest = unpooled(store, pools, is_active)
    assert list(got) == (["always"] if rest else []) + list(plain)
    assert identities({k: got[k] for k in plain}) == identities(plain)
    if rest:
        assert [id(e) for e in got["always"]] == [id(e) for e in rest]
    # the account agrees, entry by entry
    explained = explain_pools(store, pools, context, now=now, always_pool=True, **fns)
    assert identities({k: [d.entry for d in v] for k, v in explained.loaded().items()}) == \
        identities(got)
    assert list(explained.ledgers) == list(explained.loaded()) == list(got)
    plain_decisions = explain_pools(store, pools, context, now=now, **fns).decisions
    for d, p in zip(explained.decisions, plain_decisions):
        if d.pool == "always":
            assert p.outcome == "no_pool" and d.outcome == "always"
        else:
            assert d == p
    if rest:
        tier = explained.loaded()["always"]
        assert [d.rank for d in tier] == list(range(len(rest)))
        assert explained.ledgers["always"] == Ledger(
            "always", 0, 0, 0, 0, always=len(rest), always_tokens=sum(d.cost for d in tier),
            skipped_tokens=0, skipped_entries=0)
    assert s.same(before, store)


def matches(where):
    return lambda e: all(k in e and e[k] == v for k, v in where.items())


@pytest.mark.parametrize("engine", ENGINES)
@given(store=s.near_tie_stores, pools=s.near_tie_pool_lists, context=s.near_tie_contexts,
       now=s.near_tie_nows, partitioned=st.booleans(), split=st.integers(0, 200),
       where=st.sampled_from((None, {"user_id": "ana"}, {"user_id": "bo"}, {"user_id": "zed"},
                              {"project": "atlas"})),
       include=st.sampled_from((None, "odd", "no-task")))
def test_a_prepared_store_answers_what_the_functions_answer(
        engine, store, pools, context, now, partitioned, split, where, include):
    pools = pools[:3] if len(pools) > 3 else pools  # room for a type no pool takes, often
    pools = [p for p in pools if p.types is not None] or [
        Pool("tasks", 20, 2, types=("task",))]
    keep = {None: None, "odd": lambda e: len(e.get("content", "")) % 2 == 1,
            "no-task": lambda e: e.get("type") != "task"}[include]
    prepared = PreparedStore(store[:split], engine=engine,
                             partition_key="user_id" if partitioned else None)
    for entry in store[split:]:
        prepared.add(entry)
    kept = [e for e in store if where is None or matches(where)(e)]
    kept_and_included = [e for e in kept if keep is None or keep(e)]

    want = retrieve_pools(kept, pools, context, now=now, always_pool=True)
    got = prepared.retrieve_pools(pools, context, now=now, where=where, always_pool=True)
    assert identities(got) == identities(want)
    assert list(got) == list(want)  # the always pool first, on every path

    want = explain_pools(kept_and_included, pools, context, now=now, always_pool=True)
    decided = prepared.decide(pools, context, now=now, where=where, include=keep,
                              always_pool=True)
    explained = prepared.explain_pools(pools, context, now=now, where=where, include=keep,
                                       always_pool=True)
    assert decided == explained.loaded()
    assert identities({k: [d.entry for d in v] for k, v in decided.items()}) == identities(
        {k: [d.entry for d in v] for k, v in want.loaded().items()})
    assert explained.ledgers == want.ledgers
    assert list(decided) == list(explained.ledgers) == list(want.ledgers)
    assert [(d.outcome, d.pool, d.score, d.cost, d.rank) for d in explained.decisions] == [
        (d.outcome, d.pool, d.score, d.cost, d.rank) for d in want.decisions]
