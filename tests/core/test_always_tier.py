"""The always tier: loaded first on every path, capped only by an explicit ceiling.

``max_always_tokens`` is the one limit an always-scope entry answers to, and it
raises -- it never drops a correction. Every entry point takes it: the
functions and each query of a PreparedStore.
"""

from __future__ import annotations

import gc
import random
from datetime import datetime, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from poolsplit_core.poolsplit import (
    AlwaysScopeOverflowError,
    Pool,
    explain_pools,
    retrieve,
    retrieve_pools,
)
from poolsplit_core.prepared import PreparedStore
from tests.core import strategies as s
from tests.reference import ref_retrieve_pools

# Every test of this module runs once per engine of PreparedStore (tests/core/conftest.py).
pytestmark = pytest.mark.usefixtures("each_engine")

NOW = datetime(2026, 3, 1, tzinfo=timezone.utc)
POOLS = [Pool("work", max_tokens=10, max_entries=2, types=("task", "correction")),
         Pool("rest", max_tokens=10, max_entries=2)]
STORE = [
    {"id": "fix-1", "type": "correction", "scope": "always", "token_count": 4},
    {"id": "t1", "type": "task", "token_count": 3, "content": "deploy"},
    {"id": "fix-2", "type": "note", "scope": "always", "token_count": 5},
    {"id": "n1", "type": "note", "token_count": 2},
    {"id": "old-fix", "type": "note", "scope": "always", "token_count": 50, "status": "retired"},
]


def every_entry_point(store, pools, limit):
    """Each public way to run a query, with the ceiling; returns their loaded ids."""
    prepared = PreparedStore(store)

    def names(got):
        return {k: [e["id"] for e in v] for k, v in got.items()}

    return {
        "retrieve_pools": lambda: names(retrieve_pools(store, pools, now=NOW,
                                                      max_always_tokens=limit)),
        "explain_pools": lambda: {k: [d.entry["id"] for d in v] for k, v in explain_pools(
            store, pools, now=NOW, max_always_tokens=limit).loaded().items()},
        "prepared.retrieve_pools": lambda: names(prepared.retrieve_pools(
            pools, now=NOW, max_always_tokens=limit)),
        "prepared.decide": lambda: {k: [d.entry["id"] for d in v] for k, v in prepared.decide(
            pools, now=NOW, max_always_tokens=limit).items()},
        "prepared.explain_pools": lambda: {k: [d.entry["id"] for d in v] for k, v in
                                           prepared.explain_pools(pools, now=NOW,
                                                                  max_always_tokens=limit)
                                           .loaded().items()},
        "prepared.retrieve_pools(custom scorer)": lambda: names(prepared.retrieve_pools(
            pools, now=NOW, scorer=lambda e, c: 1.0, max_always_tokens=limit)),
    }


@pytest.mark.parametrize("path", list(every_entry_point(STORE, POOLS, None)))
def test_a_ceiling_the_always_tier_fits_changes_nothing(path):
    # fix-1 (4) in "work" and fix-2 (5) in "rest": 9 tokens; the retired one is not loaded.
    want = {"work": ["fix-1", "t1"], "rest": ["fix-2", "n1"]}
    assert every_entry_point(STORE, POOLS, 9)[path]() == want
    assert every_entry_point(STORE, POOLS, None)[path]() == want


@pytest.mark.parametrize("path", list(every_entry_point(STORE, POOLS, None)))
def test_an_always_tier_over_the_ceiling_raises_naming_every_loaded_correction(path):
    with pytest.raises(AlwaysScopeOverflowError) as caught:
        every_entry_point(STORE, POOLS, 8)[path]()
    err = caught.value
    assert (err.total, err.limit) == (9, 8)
    assert [e["id"] for e in err.entries] == ["fix-1", "fix-2"]
    assert "9 tokens" in str(err) and "max_always_tokens=8" in str(err)
    assert "fix-1" in str(err) and "fix-2" in str(err)
    assert "old-fix" not in str(err)  # an inactive correction costs nothing


def test_an_overflow_of_one_token_says_token_not_tokens():
    fix = {"id": "fix", "scope": "always", "token_count": 1}
    with pytest.raises(AlwaysScopeOverflowError) as caught:
        retrieve([fix], Pool("all", max_tokens=5, max_entries=5), max_always_tokens=0)
    assert str(caught.value).startswith(
        "always-scope entries cost 1 token, more than max_always_tokens=0: ")


def test_retrieve_takes_the_ceiling_for_its_one_pool():
    pool = Pool("all", max_tokens=5, max_entries=5)
    assert [e["id"] for e in retrieve(STORE, pool, now=NOW, max_always_tokens=9)][:2] == [
        "fix-1", "fix-2"]
    with pytest.raises(AlwaysScopeOverflowError):
        retrieve(STORE, pool, now=NOW, max_always_tokens=8)


def test_the_ceiling_counts_only_the_always_scope_entries_that_load():
    # A pool that takes no note never loads fix-2, so only fix-1's 4 tokens count.
    pools = [Pool("work", max_tokens=10, max_entries=2, types=("task", "correction"))]
    assert retrieve_pools(STORE, pools, now=NOW, max_always_tokens=4)["work"][0]["id"] == "fix-1"
    with pytest.raises(AlwaysScopeOverflowError):
        retrieve_pools(STORE, pools, now=NOW, max_always_tokens=3)


def test_the_ceiling_applies_to_a_prepared_query_after_its_tenant_filter():
    prepared = PreparedStore(STORE)
    only_fix_1 = prepared.decide(POOLS, now=NOW, max_always_tokens=4,
                                 include=lambda e: e["id"] != "fix-2")
    assert [d.entry["id"] for d in only_fix_1["work"]] == ["fix-1", "t1"]
    with pytest.raises(AlwaysScopeOverflowError):
        prepared.decide(POOLS, now=NOW, max_always_tokens=4)


@pytest.mark.parametrize(("value", "error", "message"), [
    (-1, ValueError, "max_always_tokens must be >= 0, got -1"),
    (2.5, TypeError, "max_always_tokens must be an int or None, got 2.5"),
    (True, TypeError, "max_always_tokens must be an int or None, got True"),
    ("10", TypeError, "max_always_tokens must be an int or None, got '10'"),
])
def test_a_bad_ceiling_is_refused_before_any_work(value, error, message):
    calls = []

    def counting(text):
        calls.append(text)
        return 1

    with pytest.raises(error, match=message):
        retrieve_pools(STORE, POOLS, now=NOW, max_always_tokens=value, token_counter=counting)
    assert calls == []  # refused before a single entry was measured
    prepared = PreparedStore(STORE)
    with pytest.raises(error, match=message):
        prepared.retrieve_pools(POOLS, now=NOW, max_always_tokens=value)
    with pytest.raises(error, match=message):
        explain_pools(STORE, POOLS, now=NOW, max_always_tokens=value)


@given(store=s.stores(), pools=s.pool_lists, context=s.contexts, now=s.nows,
       limit=st.integers(0, 40))
def test_the_ceiling_raises_exactly_when_the_loaded_tier_costs_more(store, pools, context, now,
                                                                    limit):
    want = ref_retrieve_pools(store, pools, context, now=now)
    loaded = [e for picked in want.values() for e in picked if e.get("scope") == "always"]
    costs = []
    for e in loaded:
        count = e.get("token_count")
        ok = isinstance(count, int) and not isinstance(count, bool) and count > 0
        content = e.get("content")
        text = "" if content is None else str(content)
        costs.append(count if ok else max(1, len(text) // 4))
    prepared = PreparedStore(store)
    for run in (lambda: retrieve_pools(store, pools, context, now=now, max_always_tokens=limit),
                lambda: prepared.retrieve_pools(pools, context, now=now,
                                                max_always_tokens=limit)):
        if sum(costs) > limit:
            with pytest.raises(AlwaysScopeOverflowError) as caught:
                run()
            assert caught.value.total == sum(costs)
            assert [id(e) for e in caught.value.entries] == [id(e) for e in loaded]
        else:
            got = run()
            assert {k: [id(e) for e in v] for k, v in got.items()} == {
                k: [id(e) for e in v] for k, v in want.items()}


def test_building_a_prepared_store_leaves_the_garbage_collector_alone():
    # A library must not switch off the process's cyclic collector, even for
    # the length of a build: another thread may rely on it meanwhile.
    seen = []

    def counter(text):
        seen.append(gc.isenabled())
        return max(1, len(text) // 4)

    assert gc.isenabled()
    rng = random.Random(7)
    store = [{"id": i, "content": " ".join(rng.choice(("alpha", "beta", "gamma"))
                                           for _ in range(5))} for i in range(300)]
    prepared = PreparedStore(store, token_counter=counter)
    prepared.rebuild()
    assert len(seen) == 600 and all(seen)
    assert gc.isenabled()


def test_a_prepared_store_loads_an_always_scope_entry_whose_type_is_unhashable():
    # The stateless path accepts any type a pool's `in` test can compare; a
    # prepared store must load the same correction, not fail on a dict key.
    store = [{"id": "odd-fix", "type": ["x"], "scope": "always"}, {"id": "b", "type": ["x"]},
             {"id": "fix", "scope": "always"}]
    pools = [Pool("all", max_tokens=10, max_entries=5)]
    want = [e["id"] for e in retrieve_pools(store, pools, now=NOW)["all"]]
    assert want == ["odd-fix", "fix", "b"]
    prepared = PreparedStore(store[:1])
    prepared.add(store[1])
    prepared.add(store[2])
    assert [e["id"] for e in prepared.retrieve_pools(pools, now=NOW)["all"]] == want
    only_notes = [Pool("notes", max_tokens=10, max_entries=5, types=("note",))]
    assert [e["id"] for e in prepared.retrieve_pools(only_notes, now=NOW)["notes"]] == ["fix"]
