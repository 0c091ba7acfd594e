"""Every engine keeps the contract of ``poolsplit.Engine``, checked on the engine itself.

The differential tests compare what the one fill (``fill_pools``) loads; these
check what an engine hands it, against ``tests/reference.py``:

- ``always_scope()`` lists every active always-scope entry once, under its
  own type, each list ascending;
- ``candidates(pool, taken, room)`` with all the room in the world yields
  every active contextual entry of the pool's types whose object is not in
  ``taken`` (and that the query's filter keeps), once each, with the
  reference's score and cost, in the spec's order ``(-score, created, id,
  position)``;
- with a pool's real room, pulled as the fill pulls, it leaves out only
  candidates that cost more than the tokens left at their turn, and yields
  the rest in the same order: so the fill loads what the reference loads;
- it is lazy: a stream the fill stops pulling early has not scored every
  entry (the python walks), and nothing is read until the first pull.

The engines: the stateless one (lazy, and ``every=True`` as explain_pools
runs it), and each prepared engine of the suite (``tests/core/conftest.py``),
over stored entries and a query's extras, with and without a filter.
"""

from __future__ import annotations

import random
from datetime import datetime, timezone

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from poolsplit_core import poolsplit as core
from tests.core import strategies as s
from tests.core.conftest import ENGINES
from tests.reference import (
    call_scorer,
    cost,
    ref_default_is_active,
    ref_default_scorer,
    ref_default_token_counter,
    sort_text,
)

HUGE = 10**12


def stateless(every):
    def make(entries, context, now, include, pool):
        assert include is None  # the stateless path filters before it runs
        return core._Call(entries, context, core.default_scorer, core.default_token_counter,
                          core.default_is_active, now, every=every)
    return make


def prepared(engine, stored_share, written=False):
    """An engine over ``entries``: a share stored, the rest the query's extras.

    ``written``: the store is built from older versions of every third stored
    entry and half of it, queried once for ``pool`` (as a living store is, so
    its caches hold what the writes then change), then brought to ``entries``
    by writes: each replaced version leaves a dead row or list item behind.
    """
    def make(entries, context, now, include, pool):
        index = engine.index(core.default_token_counter, core.default_is_active, None)
        stored = entries[:int(len(entries) * stored_share)]  # the rest: the query's extras
        if not written:
            index.build(list(stored))
        else:
            half = len(stored) // 2
            index.build([{**entry, "base_priority": 9, "content": "an older version"}
                         if n % 3 == 0 else entry for n, entry in enumerate(stored[:half])])
            before = index.query(list(index.entries), context, now, None, None,
                                 core._options_of(core.default_scorer))
            list(before.candidates(pool, frozenset(), core.Room(pool)))
            for n in range(0, half, 3):
                index.replace(n, stored[n])
            for entry in stored[half:]:
                index.insert(entry)
        return index.query(list(entries), context, now, include, None,
                           core._options_of(core.default_scorer))
    return make


MAKERS = {
    "stateless": stateless(False),
    "stateless-every": stateless(True),
    **{name: prepared(engine, 1.0) for name, engine in ENGINES.items()},
    **{f"{name}+extras": prepared(engine, 0.6) for name, engine in ENGINES.items()},
    **{f"{name}+writes": prepared(engine, 0.8, written=True) for name, engine in ENGINES.items()},
}
FILTERED = [name for name in MAKERS if not name.startswith("stateless")]


def reference_candidates(entries, pool, context, now, taken=frozenset(), include=None):
    """(key, position, score, cost) of each candidate, in the spec's order."""
    rows = []
    for i, entry in enumerate(entries):
        if (not ref_default_is_active(entry) or entry.get("scope") == "always"
                or not pool.accepts(entry.get("type", "note")) or id(entry) in taken
                or (include is not None and not include(entry))):
            continue
        score = call_scorer(ref_default_scorer, entry, context, now)
        key = (-score, sort_text(entry.get("created")), sort_text(entry.get("id")), i)
        rows.append((key, i, score, cost(entry, ref_default_token_counter)))
    rows.sort()
    return [(i, score, c) for _, i, score, c in rows]


def big(pool):
    return s.quiet_pool(pool.name, HUGE, HUGE, pool.types)


def check_engine(make, entries, pool, context, now, taken, include):
    engine = make(entries, context, now, include, pool)
    assert list(engine.entries) == entries

    # always_scope: every active always-scope entry, once, under its type, ascending
    by_type, usable = engine.always_scope()
    listed = []
    for entry_type, members in by_type:
        members = list(members)
        assert members == sorted(members)
        for i in members:
            assert entries[i].get("type", "note") == entry_type
        listed += members
    if usable is not None:
        listed = [i for i in listed if usable(i)]
    want_always = [i for i, e in enumerate(entries) if ref_default_is_active(e)
                   and e.get("scope") == "always" and (include is None or include(e))]
    assert sorted(listed) == want_always

    # every candidate, in order, with the reference's score and cost
    want = reference_candidates(entries, pool, context, now, taken, include)
    got = [tuple(c) for c in engine.candidates(big(pool), taken, core.Room(big(pool)))]
    assert got == want

    # the pool's real room, pulled as the fill pulls it
    engine = make(entries, context, now, include, pool)
    room = core.Room(pool)
    stream = engine.candidates(pool, taken, room)
    rest = iter(want)
    while room.entries > 0 and room.tokens > 0:
        candidate = next(stream, None)
        if candidate is None:
            break
        for left_out in rest:  # what the engine skipped must never have fitted
            if left_out == tuple(candidate):
                break
            assert left_out[2] > room.tokens, (left_out, room.tokens)
        else:
            pytest.fail(f"{tuple(candidate)} is not a candidate, or out of order")
        if candidate.cost <= room.tokens:
            room.tokens -= candidate.cost
            room.entries -= 1
    if room.entries > 0 and room.tokens > 0:  # exhausted: nothing left could load
        assert all(left_out[2] > room.tokens for left_out in rest)


def draw_case(rng, store):
    pool = rng.choice(s.near_tie_pools(rng))
    taken = frozenset(id(e) for e in store if rng.random() < 0.2)
    return pool, s.near_tie_context(rng), s.near_tie_now(rng), taken


@pytest.mark.parametrize("name", list(MAKERS))
@pytest.mark.parametrize("seed", range(40))
def test_each_engine_keeps_the_contract_on_near_tie_stores(name, seed):
    rng = random.Random(seed)
    store = s.near_tie_store(rng)
    pool, context, now, taken = draw_case(rng, store)
    include = None
    if name in FILTERED and rng.random() < 0.5:
        project = rng.choice(s.NEAR_PROJECTS)

        def include(entry):
            return entry.get("project") != project

    check_engine(MAKERS[name], store, pool, context, now, taken, include)


@pytest.mark.parametrize("name", list(MAKERS))
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(store=s.stores(max_size=16), pool=s.pools, context=s.contexts, now=s.nows,
       data=st.data())
def test_each_engine_keeps_the_contract_on_any_store(name, store, pool, context, now, data):
    taken = frozenset(id(e) for e in store if data.draw(st.booleans()))
    try:
        core._check_entries(store)
        reference_candidates(store, big(pool), context, now)
    except (TypeError, ValueError):
        return  # an entry the default scorer refuses: the refusal is tested elsewhere
    check_engine(MAKERS[name], store, pool, context, now, taken, None)


@pytest.mark.parametrize("name", ["stateless", "python", "python-split"])
def test_a_stream_the_fill_stops_early_has_not_scored_every_entry(name):
    rng = random.Random(7)
    words = [f"word{n}" for n in range(40)] + ["rotate", "database", "credentials"]
    store = [{"id": f"e{n}", "type": rng.choice(("task", "note")),
              "base_priority": rng.randint(1, 9),
              "created": f"2026-0{rng.randint(1, 9)}-1{rng.randint(0, 9)}T00:00:00Z",
              "content": " ".join(rng.sample(words, 2))} for n in range(400)]
    pool = core.Pool("one", max_tokens=HUGE, max_entries=1)
    context = {"message": "rotate the database credentials"}
    now = datetime(2026, 10, 1, tzinfo=timezone.utc)
    engine = MAKERS[name](store, context, now, None, pool)
    stream = engine.candidates(pool, frozenset(), core.Room(pool))
    assert not engine.scores  # nothing is read before the first pull
    first = next(stream)
    assert first[0] == reference_candidates(store, pool, context, engine.now)[0][0]
    assert 0 < len(engine.scores) < len(store) // 4
