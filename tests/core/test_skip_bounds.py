"""The python engine walk's skip structures stay exact under writes.

Every word and tag list of a prepared index carries, once a query has read it,
the lowest cost of each of its suffixes: a stream skips its whole tail when
nothing left can fit. A stale minimum that is too low only skips less, so
right answers alone cannot show it; these tests compare every cached minimum
to one computed afresh, after writes and queries in any order, and hold the
answers to the reference where the skip decides them.
"""

from __future__ import annotations

import random
from datetime import timedelta

import pytest

from poolsplit_core.poolsplit import Pool
from poolsplit_core.prepared import PreparedStore, _positions
from tests.core.test_living_store import (
    NOW,
    USERS,
    answer,
    expected,
    make_context,
    make_entry,
    make_pools,
    supersede,
)


def check_list_minimums(store):
    read = 0
    for part in store._parts.values():
        index = part.index
        for (is_tag, kind, item), low in index.list_low.items():
            members = _positions((index.by_tag if is_tag else index.by_word)[kind][item])
            assert low == index.suffix_min(members), (is_tag, kind, item)
            read += 1
    return read


@pytest.mark.parametrize("block", range(4))
def test_cached_list_minimums_equal_fresh_ones_after_any_writes(block):
    read = 0
    for seed in range(block * 25, block * 25 + 25):
        rng = random.Random(seed)
        model = [make_entry(rng, f"m{k}") for k in range(rng.randint(20, 60))]
        stores = [PreparedStore(model, engine="python"),
                  PreparedStore(model, partition_key="user_id", engine="python")]
        next_id = len(model)
        for _ in range(40):
            op = rng.random()
            ids = [e["id"] for e in model]
            if op < 0.25:
                entry = make_entry(rng, f"m{next_id}")
                next_id += 1
                model.append(entry)
                for store in stores:
                    store.add(entry)
            elif op < 0.5 and ids:
                supersede(model, stores, make_entry(rng, rng.choice(ids)))
            elif op < 0.65 and ids:
                target = rng.choice(ids)
                model = [e for e in model if e["id"] != target]
                for store in stores:
                    store.delete(target)
            else:
                pools, context = make_pools(rng), make_context(rng)
                now = NOW + timedelta(days=rng.choice((0, 30)))
                where = {"user_id": rng.choice(USERS)} if rng.random() < 0.6 else {}
                want = expected(model, [], pools, context, now, where)
                for store in stores:
                    assert answer(store, [], pools, context, now, where) == want, seed
            for store in stores:
                read += check_list_minimums(store)
    assert read > 0  # the queries did read word and tag lists


def test_a_tail_that_cannot_fit_is_skipped_but_one_that_can_is_loaded():
    # Long entries share the message's word; the one short entry, the oldest,
    # is the only one that fits the pool: a skip must not pass over it.
    entries = [{"id": f"long{k}", "type": "note", "content": "deploy " + "x" * 400,
                "created": (NOW - timedelta(days=k)).isoformat()} for k in range(30)]
    entries.append({"id": "short", "type": "note", "content": "deploy now",
                    "created": (NOW - timedelta(days=80)).isoformat()})
    store = PreparedStore(entries, engine="python")
    pools = [Pool("notes", max_tokens=20, max_entries=3)]
    got = store.retrieve_pools(pools, {"message": "deploy"}, now=NOW)
    assert [e["id"] for e in got["notes"]] == ["short"]
    # the short one goes; after the delete nothing fits, and the cached minimum knows it
    store.delete("short")
    assert store.retrieve_pools(pools, {"message": "deploy"}, now=NOW) == {"notes": []}
    store.add({"id": "short2", "type": "note", "content": "deploy it",
               "created": (NOW - timedelta(days=85)).isoformat()})
    got = store.retrieve_pools(pools, {"message": "deploy"}, now=NOW)
    assert [e["id"] for e in got["notes"]] == ["short2"]
    assert check_list_minimums(store) > 0
