"""Seeded differential: thousands of near-tie stores, every path, the literal reference.

Each seed draws one near-tie store (``tests/core/strategies.py``: 40-200
entries alike enough that ties sit at every bound) and runs every way the
core can answer against ``tests/reference.py``:

1. the stateless functions: ``retrieve``, ``retrieve_pools`` and
   ``explain_pools`` (every Decision field and every Ledger field);
2. a ``PreparedStore`` built from a prefix of the store, given the rest by
   ``add()``, then changed by ``upsert()`` and ``delete()``, queried three
   times at different times: plain, with ``extra=`` entries and an
   ``include=`` filter, and with ``where=`` -- on an unpartitioned store and
   on one partitioned by ``user_id`` (where the walk reads one tenant only);
   after the writes, every prepared list must be the one a fresh build makes.

The seeds are fixed: the same stores every run, and a failure names its seed
(``run_seed(seed)`` replays it). ``POOLSPLIT_SEEDED_STORES`` sets how many
stores run (default 2,000), e.g. fewer for a mutation run.
"""

from __future__ import annotations

import copy
import os
import random

import pytest

from poolsplit_core.poolsplit import explain_pools, retrieve, retrieve_pools
from poolsplit_core.prepared import PreparedStore
from tests.core import strategies as s
from tests.core.test_living_store import check_index_invariants, supersede
from tests.reference import ref_explain_pools

# Every test of this module runs once per engine of PreparedStore (tests/core/conftest.py).
pytestmark = pytest.mark.usefixtures("each_engine")

STORES = int(os.environ.get("POOLSPLIT_SEEDED_STORES", "2000"))
BLOCKS = 12
PER_BLOCK = -(-STORES // BLOCKS)


def expected(entries, pools, context, now, keep=None):
    """The reference's loaded entries per pool, as comparable Decision rows.

    With ``keep`` (indices into ``entries``), the reference runs over the
    kept entries only and each row's index is the entry's index in ``entries``.
    """
    keep = list(range(len(entries))) if keep is None else keep
    decisions, ledgers = ref_explain_pools([entries[i] for i in keep], pools, context, now=now)
    loaded = {pool.name: [] for pool in pools}
    for j, (outcome, pool, score, cost, tokens_left, rank) in enumerate(decisions):
        if outcome in ("always", "selected"):
            loaded[pool].append((id(entries[keep[j]]), keep[j], outcome, pool, score, cost,
                                 tokens_left, rank))
    for rows in loaded.values():
        rows.sort(key=lambda row: row[-1])
    return decisions, ledgers, loaded


def rows(decided):
    """Decision objects per pool as rows comparable with ``expected``."""
    return {name: [(id(d.entry), d.index, d.outcome, d.pool, d.score, d.cost, d.tokens_left,
                    d.rank) for d in picked] for name, picked in decided.items()}


def identities(picked):
    return {name: [id(e) for e in got] for name, got in picked.items()}


def check_explanation(explained, entries, decisions, ledgers, keep=None):
    """Every Decision field and every Ledger field equal the reference's."""
    keep = list(range(len(entries))) if keep is None else keep
    assert len(explained.decisions) == len(keep)
    for d, i, want in zip(explained.decisions, keep, decisions):
        assert d.entry is entries[i] and d.index == i
        assert (d.outcome, d.pool, d.score, d.cost, d.tokens_left, d.rank) == want, i
    assert list(explained.ledgers) == list(ledgers)
    for name, ledger in explained.ledgers.items():
        assert {field: getattr(ledger, field) for field in ledgers[name]} == ledgers[name]


def check_stateless(rng, store):
    pools, context, now = s.near_tie_pools(rng), s.near_tie_context(rng), s.near_tie_now(rng)
    decisions, ledgers, loaded = expected(store, pools, context, now)
    want = {name: [row[0] for row in got] for name, got in loaded.items()}
    assert identities(retrieve_pools(store, pools, context, now=now)) == want
    assert [id(e) for e in retrieve(store, pools[0], context, now=now)] == want[pools[0].name]
    check_explanation(explain_pools(store, pools, context, now=now), store, decisions, ledgers)


def write(rng, model, stores, next_id):
    """One upsert (in place, or of a new id) or delete, on the model list and every store."""
    ids = [e["id"] for e in model if "id" in e]
    roll = rng.random()
    if roll < 0.5 and ids:
        target = rng.choice(ids)
        entry = s.near_tie_entry(rng, target)
        entry["id"] = target
        supersede(model, stores, entry)
    elif roll < 0.85 and ids:
        target = rng.choice(ids)
        model[:] = [e for e in model if e.get("id") != target]
        for store in stores:
            store.delete(target)
    else:
        entry = s.near_tie_entry(rng, next_id)
        entry["id"] = f"e{next_id}"
        model.append(entry)
        for store in stores:
            store.upsert(entry)  # an unknown id: added at the end


def check_prepared(rng, store):
    model = list(store)
    split = rng.randint(0, len(model))
    plain, split_by_user = PreparedStore(model[:split]), PreparedStore(
        model[:split], partition_key="user_id")
    for entry in model[split:]:
        plain.add(entry)
        split_by_user.add(entry)
    for n in range(rng.randint(0, 6)):
        write(rng, model, (plain, split_by_user), len(store) + n)
    assert [id(e) for e in plain.entries] == [id(e) for e in model]
    # a stale list can hide behind right answers (a low suffix-minimum cost
    # only prunes less): the lists must be those of a fresh build
    check_index_invariants(plain)
    check_index_invariants(split_by_user)

    # 1) a plain query: decide, retrieve_pools and explain_pools
    pools, context, now = s.near_tie_pools(rng), s.near_tie_context(rng), s.near_tie_now(rng)
    decisions, ledgers, loaded = expected(model, pools, context, now)
    assert rows(plain.decide(pools, context, now=now)) == loaded
    assert identities(plain.retrieve_pools(pools, context, now=now)) == {
        name: [row[0] for row in got] for name, got in loaded.items()}
    check_explanation(plain.explain_pools(pools, context, now=now), model, decisions, ledgers)

    # 2) extra entries for this query only, and an include filter
    extra = [s.near_tie_entry(rng, 10_000 + n) for n in range(rng.choice((0, 1, 3, 8)))]
    everything = model + extra
    dropped = rng.choice((None, "project", "user_id", "type"))
    if dropped is None:
        include, keep = None, None
    else:
        value = rng.choice({"project": s.NEAR_PROJECTS, "user_id": s.NEAR_USERS,
                            "type": s.NEAR_TYPES}[dropped])

        def include(entry):
            return entry.get(dropped) != value

        keep = [i for i, e in enumerate(everything) if include(e)]
    pools, context, now = s.near_tie_pools(rng), s.near_tie_context(rng), s.near_tie_now(rng)
    decisions, ledgers, loaded = expected(everything, pools, context, now, keep)
    assert rows(plain.decide(pools, context, now=now, extra=extra, include=include)) == loaded
    # a partitioned store queried without its key: the stateless path, the same filters
    assert rows(split_by_user.decide(pools, context, now=now, extra=extra,
                                     include=include)) == loaded
    check_explanation(plain.explain_pools(pools, context, now=now, extra=extra, include=include),
                      everything, decisions, ledgers, keep)
    # nothing indexed, every entry this query's extra: the stateless engine answers
    assert rows(PreparedStore().decide(pools, context, now=now, extra=everything,
                                       include=include)) == loaded

    # 3) a tenant's query: where= on the partition key (and sometimes one more key)
    where = {"user_id": rng.choice((*s.NEAR_USERS, "nobody"))}
    if rng.random() < 0.3:
        where["type"] = rng.choice(s.NEAR_TYPES)
    keep = [i for i, e in enumerate(model) if all(k in e and e[k] == v for k, v in where.items())]
    pools, context, now = s.near_tie_pools(rng), s.near_tie_context(rng), s.near_tie_now(rng)
    decisions, ledgers, loaded = expected(model, pools, context, now, keep)
    want = {name: [row[0] for row in got] for name, got in loaded.items()}
    for prepared in (split_by_user, plain):
        assert rows(prepared.decide(pools, context, now=now, where=where)) == loaded
        assert identities(prepared.retrieve_pools(pools, context, now=now, where=where)) == want
    check_explanation(split_by_user.explain_pools(pools, context, now=now, where=where), model,
                      decisions, ledgers, keep)


def run_seed(seed):
    rng = random.Random(seed)
    store = s.near_tie_store(rng)
    before = copy.deepcopy(store)
    check_stateless(rng, store)
    check_prepared(rng, store)
    assert store == before  # nothing was mutated


@pytest.mark.parametrize("block", range(BLOCKS))
def test_every_path_gives_the_reference_answer_on_near_tie_stores(block):
    for seed in range(block * PER_BLOCK, min(STORES, (block + 1) * PER_BLOCK)):
        try:
            run_seed(seed)
        except AssertionError as error:
            raise AssertionError(f"seed {seed}: run_seed({seed}) replays it") from error
