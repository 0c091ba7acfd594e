"""The coverage report and the budget planner, held to what retrieve_pools really loads.

A type's ranking is taken here from the literal reference (tests/reference.py):
its top ``m`` contextual entries for a query, in the spec's order. What loaded
is what ``retrieve_pools`` returns. Neither goes through plan.py's own code.
"""

from __future__ import annotations

import json
import random
from datetime import datetime, timezone

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from poolsplit_core.demo import DEMO_NOW, DEMO_QUERIES, SPLIT_POOLS, TOTAL_TOKENS, load_sample_store
from poolsplit_core.plan import (
    Rate,
    best_entry_coverage,
    coverage,
    format_plan,
    load_pools,
    plan_pools,
    pools_from_json,
    pools_to_json,
    sample_queries,
    save_pools,
)
from poolsplit_core.poolsplit import Pool, default_is_active, retrieve_pools
from tests.core.strategies import TYPES, contexts, nows, stores
from tests.reference import ref_retrieve

NOW = datetime(2026, 11, 1, tzinfo=timezone.utc)
HUGE = 10**9


def top_entries(store, kind, query, depth, now):
    """The type's best ``depth`` contextual entries for the query, by the reference."""
    picked = ref_retrieve(store, Pool("rank", HUGE, depth, (kind,)), query, now=now)
    return [e for e in picked if e.get("scope") != "always"]


def contextual_types(store):
    return sorted({e.get("type", "note") for e in store
                   if default_is_active(e) and e.get("scope") != "always"})


def loaded_hits(store, pools, queries, kind, depth, now):
    """On how many queries the type's top ``depth`` entries all loaded under ``pools``."""
    hits = 0
    for query in queries:
        got = retrieve_pools(store, pools, query, now=now)
        loaded = {id(e) for picked in got.values() for e in picked}
        hits += all(id(e) in loaded for e in top_entries(store, kind, query, depth, now))
    return hits


def seeded_store(seed, size=160):
    """Near-ties on purpose: few words, few priorities, costs from a small range."""
    rng = random.Random(seed)
    words = "deploy rotate database release notes budget memory cache index queue".split()
    store = []
    for i in range(size):
        kind = rng.choice(("task", "note", "skill", "growth", "fact"))
        entry = {
            "id": f"e{i}", "type": kind,
            "content": " ".join(rng.choices(words, k=rng.randrange(1, 30))),
            "base_priority": rng.choice((3, 5, 5, 7)),
            "created": f"2026-{rng.randrange(1, 11):02d}-{rng.randrange(1, 28):02d}",
            "tags": rng.sample(("db", "ops", "ui"), rng.randrange(0, 3)),
            "project": rng.choice((None, "atlas", "zeus")),
        }
        if rng.random() < 0.05:
            entry = {"id": f"fix{i}", "type": "correction", "scope": "always",
                     "content": "Never skip the review."}
        store.append(entry)
    return store


def seeded_queries(seed, count):
    rng = random.Random(seed)
    words = "deploy rotate database release notes budget memory cache index queue".split()
    return [{"message": " ".join(rng.sample(words, rng.randrange(1, 5))),
             "project": rng.choice((None, "atlas", "zeus")),
             "tags": rng.sample(("db", "ops", "ui"), rng.randrange(0, 2))}
            for _ in range(count)]


# --------------------------------------------------------------------------
# Predicted coverage is what retrieve_pools gives
# --------------------------------------------------------------------------


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(stores(max_size=40), st.lists(contexts, min_size=1, max_size=5), nows,
       st.integers(1, 400), st.integers(1, 3))
def test_predicted_coverage_equals_what_retrieve_pools_loads(store, queries, now, tokens, depth):
    kinds = contextual_types(store)
    try:
        plan = plan_pools(store, queries, tokens, now=now, depth=depth, holdout=0)
    except ValueError as exc:  # nothing to plan, or the always tier takes it all
        assert "nothing" in str(exc)
        return
    assert sorted(plan.types) == kinds
    for kind in kinds:
        hits = loaded_hits(store, plan.pools, queries, kind, depth, now)
        assert plan.types[kind].predicted == Rate(hits, len(queries)), kind


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(stores(max_size=40), st.lists(contexts, min_size=1, max_size=5), nows,
       st.lists(st.tuples(st.integers(0, 60), st.integers(0, 4)), min_size=len(TYPES),
                max_size=len(TYPES)),
       st.integers(1, 3))
def test_coverage_of_one_type_pools_equals_retrieve_pools(store, queries, now, limits, depth):
    pools = [Pool(kind, tokens, cap, (kind,)) for kind, (tokens, cap) in zip(TYPES, limits)]
    report = coverage(store, pools, queries, now=now, depth=depth)
    for kind in contextual_types(store):
        t = report.types[kind]
        assert t.best.hits == loaded_hits(store, pools, queries, kind, 1, now)
        assert t.depth.hits == loaded_hits(store, pools, queries, kind, depth, now)
        assert t.best.hits + sum(t.missed.values()) == len(queries)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(stores(max_size=40), st.lists(contexts, min_size=1, max_size=4), nows,
       st.lists(st.sampled_from((*SPLIT_POOLS[1:], Pool("any", 30, 3))), min_size=1,
                max_size=3, unique_by=lambda p: p.name), st.integers(1, 3))
def test_the_fast_rates_equal_the_full_report(store, queries, now, pools, depth):
    fast = best_entry_coverage(store, pools, queries, now=now, depth=depth)
    full = coverage(store, pools, queries, now=now, depth=depth)
    assert fast == {kind: (t.depth if depth > 1 else t.best)
                    for kind, t in full.types.items() if t.best is not None}


def test_coverage_of_grouped_pools_equals_retrieve_pools_on_a_seeded_store():
    store, queries = seeded_store(5), seeded_queries(6, 12)
    pools = [Pool("work", 120, 4, ("task", "fact", "correction")),
             Pool("rest", 90, 3, None)]
    report = coverage(store, pools, queries, now=NOW, depth=2)
    for kind in contextual_types(store):
        assert report.types[kind].best.hits == loaded_hits(store, pools, queries, kind, 1, NOW)
        assert report.types[kind].depth.hits == loaded_hits(store, pools, queries, kind, 2, NOW)
    # The grouped pools starve someone here, and the report says why.
    starved = [t for t in report.types.values() if t.best and t.best.hits < len(queries)]
    assert starved
    assert all(sum(t.missed.values()) == len(queries) - t.best.hits for t in starved)


@pytest.mark.parametrize("seed", range(4))
def test_seeded_plans_predict_exactly_and_stay_within_budget(seed):
    store, queries = seeded_store(seed), seeded_queries(seed + 100, 16)
    rng = random.Random(seed)
    tokens, depth = rng.randrange(60, 900), rng.randrange(1, 4)
    plan = plan_pools(store, queries, tokens, now=NOW, depth=depth, holdout=0)
    for kind in plan.types:
        hits = loaded_hits(store, plan.pools, queries, kind, depth, NOW)
        assert plan.types[kind].predicted.hits == hits
    assert plan.always_tokens + sum(p.max_tokens for p in plan.pools) <= tokens


@pytest.mark.parametrize("seed", range(4))
def test_each_pools_reason_is_what_the_engine_does_with_one_step_more_or_less(seed):
    store, queries = seeded_store(seed), seeded_queries(seed + 200, 16)
    rng = random.Random(seed)
    tokens, depth = rng.randrange(120, 900), rng.randrange(1, 3)
    plan = plan_pools(store, queries, tokens, now=NOW, depth=depth, holdout=0)

    def hits_with(kind, max_tokens):
        pools = [Pool(p.name, max_tokens, p.max_entries, p.types) if p.name == kind else p
                 for p in plan.pools]
        return loaded_hits(store, pools, queries, kind, depth, NOW)

    for kind, t in plan.types.items():
        assert t.entries == sum(1 for e in store if default_is_active(e)
                                and e.get("type", "note") == kind
                                and e.get("scope") != "always")
        dearest = t.max_tokens - t.margin  # the dearest covered query needs exactly this
        assert hits_with(kind, dearest) == t.predicted.hits
        if t.predicted.hits:
            assert hits_with(kind, dearest - 1) < t.predicted.hits
        if t.next_step is None:
            assert t.predicted.hits == len(queries)
        else:
            assert hits_with(kind, t.max_tokens + t.next_step - 1) == t.predicted.hits
            assert hits_with(kind, t.max_tokens + t.next_step) > t.predicted.hits


# --------------------------------------------------------------------------
# Budgets: never exceeded, the target's smallest budget is the smallest
# --------------------------------------------------------------------------


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(stores(max_size=40), st.lists(contexts, min_size=1, max_size=6), st.integers(1, 500),
       st.one_of(st.none(), st.integers(1, 30)), st.integers(1, 3))
def test_plans_never_exceed_the_total_budget(store, queries, tokens, entries, depth):
    try:
        plan = plan_pools(store, queries, tokens, total_entries=entries, depth=depth,
                          now=NOW, holdout=0)
    except ValueError as exc:
        assert any(word in str(exc) for word in ("nothing", "total_entries"))
        return
    assert plan.always_tokens + sum(p.max_tokens for p in plan.pools) <= tokens
    if entries is not None:
        assert sum(p.max_entries for p in plan.pools) <= entries
    assert all(p.max_entries >= depth for p in plan.pools if p.max_tokens)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(stores(max_size=40), st.lists(contexts, min_size=1, max_size=6), st.integers(1, 2000),
       st.one_of(st.none(), st.integers(1, 30)), st.integers(1, 3), st.booleans())
def test_a_plan_spends_its_whole_budget_and_its_curve_repeats_no_budget(store, queries, tokens,
                                                                       entries, depth, merge):
    try:
        plan = plan_pools(store, queries, tokens, total_entries=entries, depth=depth,
                          now=NOW, holdout=0, merge=merge)
    except ValueError as exc:
        assert any(word in str(exc) for word in ("nothing", "total_entries"))
        return
    assert sum(p.max_tokens for p in plan.pools) == tokens - plan.always_tokens
    assert f"{tokens - plan.always_tokens} in {len(plan.pools)} pool" in format_plan(plan)
    totals = [point.total_tokens for point in plan.curve]
    assert totals == sorted(set(totals))


@pytest.mark.parametrize("seed", range(4))
def test_a_budget_beyond_full_coverage_is_headroom_in_every_pool(seed):
    # With far more tokens than every entry needs, each pool keeps tokens beyond what its
    # dearest query needs (tomorrow's longer entry fits), and every query is still covered.
    store, queries = seeded_store(seed, size=60), seeded_queries(seed + 300, 12)
    full = plan_pools(store, queries, 10**5, now=NOW, holdout=0)
    for kind, t in full.types.items():
        assert t.predicted.hits == len(queries) and t.margin > 0
        assert loaded_hits(store, full.pools, queries, kind, 1, NOW) == len(queries)


@pytest.mark.parametrize("seed", range(3))
def test_the_smallest_budget_for_the_target_reaches_it_and_one_token_less_does_not(seed):
    store, queries = seeded_store(seed), seeded_queries(seed, 20)
    always = plan_pools(store, queries, 10**6, now=NOW, holdout=0).always_tokens
    short = plan_pools(store, queries, always + 5, target=0.9, now=NOW, holdout=0)
    assert not short.reached
    assert f"smallest total budget that reaches it is {short.tokens_for_target}" in short.notes[0]
    enough = plan_pools(store, queries, short.tokens_for_target, target=0.9, now=NOW,
                        holdout=0)
    assert enough.reached and enough.lowest >= 0.9
    less = plan_pools(store, queries, short.tokens_for_target - 1, target=0.9, now=NOW,
                      holdout=0)
    assert not less.reached


def test_max_min_fairness_covers_every_type_before_any_type_fully():
    # a's best entry costs 10 on one query and 20 on the other; b's costs 30 on both.
    # With 45 tokens, cheapest-coverage-first would give a 20 (both queries) and leave
    # b nothing; max-min gives every type its first query: a 10, b 30.
    store = [{"id": "a1", "type": "a", "token_count": 10, "content": "alpha"},
             {"id": "a2", "type": "a", "token_count": 20, "content": "beta"},
             {"id": "b1", "type": "b", "token_count": 30, "content": "gamma"}]
    queries = [{"message": "alpha"}, {"message": "beta"}]
    plan = plan_pools(store, queries, 45, now=NOW, holdout=0)
    assert {k: t.predicted.hits for k, t in plan.types.items()} == {"a": 1, "b": 2}
    # The 5 tokens no step can use are headroom, in proportion to 10 and 30: 1.25 and 3.75.
    assert {k: t.max_tokens for k, t in plan.types.items()} == {"a": 11, "b": 34}
    assert (plan.lowest, plan.mean) == (0.5, 0.75)
    assert not plan.reached and plan.tokens_for_target == 50
    # Budgets that are met exactly are enough: 40 for the fair level, 50 for everything.
    exact = plan_pools(store, queries, 40, now=NOW, holdout=0)
    assert {k: t.max_tokens for k, t in exact.types.items()} == {"a": 10, "b": 30}
    full = plan_pools(store, queries, 50, now=NOW, holdout=0)
    assert {k: t.max_tokens for k, t in full.types.items()} == {"a": 20, "b": 30}
    assert full.reached and full.lowest == 1.0


def test_slack_that_exactly_pays_for_a_step_is_spent_on_it():
    # Fair level: a 10, b 30, c 5 (45 tokens). The 10 left pay exactly for a's second
    # query; c's cheap never-best entries must not get them first as a margin.
    store = [{"id": "a1", "type": "a", "token_count": 10, "content": "alpha"},
             {"id": "a2", "type": "a", "token_count": 20, "content": "beta"},
             {"id": "b1", "type": "b", "token_count": 30, "content": "gamma"},
             {"id": "c1", "type": "c", "token_count": 5, "content": "alpha"},
             {"id": "c2", "type": "c", "token_count": 100, "content": "beta"},
             {"id": "c3", "type": "c", "token_count": 8, "base_priority": 1},
             {"id": "c4", "type": "c", "token_count": 9, "base_priority": 1}]
    queries = [{"message": "alpha"}, {"message": "beta"}]
    plan = plan_pools(store, queries, 55, now=NOW, holdout=0)
    assert {k: t.max_tokens for k, t in plan.types.items()} == {"a": 20, "b": 30, "c": 5}
    assert {k: t.predicted.hits for k, t in plan.types.items()} == {"a": 2, "b": 2, "c": 1}


def test_the_held_out_queries_are_a_deterministic_disjoint_share():
    store, queries = seeded_store(1), seeded_queries(2, 20)
    first = plan_pools(store, queries, 500, now=NOW, holdout=0.25)
    again = plan_pools(store, queries, 500, now=NOW, holdout=0.25)
    assert (first.planning_queries, first.held_out_queries) == (15, 5)
    assert first.to_dict() == again.to_dict()
    held = queries[3::4]  # every fourth query is held out
    for kind, t in first.types.items():
        assert t.held_out == Rate(loaded_hits(store, first.pools, held, kind, 1, NOW), 5)


def test_merge_keeps_only_groupings_under_which_every_type_reaches_the_target():
    store, queries = seeded_store(3), seeded_queries(4, 16)
    plan = plan_pools(store, queries, 2000, now=NOW, holdout=0, merge=True)
    assert plan.reached and plan.merged
    assert any(len(pool.types) > 1 for pool in plan.pools)
    assert "grouped pools" in plan.notes[0]
    for kind in plan.types:
        hits = loaded_hits(store, plan.pools, queries, kind, 1, NOW)
        assert hits >= 0.9 * len(queries), kind
    assert sum(p.max_tokens for p in plan.pools) + plan.always_tokens <= 2000


def test_merge_is_not_tried_when_one_pool_per_type_misses_the_target():
    store, queries = seeded_store(3), seeded_queries(4, 16)
    always = plan_pools(store, queries, 10**6, now=NOW, holdout=0).always_tokens
    plan = plan_pools(store, queries, always + 5, now=NOW, holdout=0, merge=True)
    assert not plan.reached and not plan.merged
    assert all(pool.types is not None and len(pool.types) == 1 for pool in plan.pools)
    assert "no grouping tried" in plan.notes[0]


def test_the_always_tier_is_loaded_by_the_plan_and_set_aside_from_the_budget():
    store = load_sample_store()
    plan = plan_pools(store, DEMO_QUERIES, TOTAL_TOKENS, now=DEMO_NOW)
    fixes = [e for e in store if e.get("scope") == "always"]
    assert plan.always_tokens == sum(len(e["content"]) // 4 for e in fixes)
    got = retrieve_pools(store, plan.pools, DEMO_QUERIES[0], now=DEMO_NOW)
    loaded = {id(e) for picked in got.values() for e in picked}
    assert all(id(e) in loaded for e in fixes)


# --------------------------------------------------------------------------
# The coverage report's accounting
# --------------------------------------------------------------------------


def test_the_report_on_the_shipped_store_matches_the_issue_figures():
    report = coverage(load_sample_store(), SPLIT_POOLS, DEMO_QUERIES, now=DEMO_NOW)
    best = {kind: t.best.hits for kind, t in report.types.items() if t.best is not None}
    loaded_at_all = {kind: t.any.hits for kind, t in report.types.items() if t.any}
    assert set(loaded_at_all.values()) == {32}
    assert best["preference"] == loaded_hits(load_sample_store(), SPLIT_POOLS, DEMO_QUERIES,
                                             "preference", 1, DEMO_NOW) < 32
    assert report.lowest == min(best.values()) / 32
    assert report.types["correction"].best is None and report.types["correction"].always == 10
    assert report.always_tokens_p50 == report.always_tokens_p95 > 0
    for usage in report.pools.values():
        assert usage.tokens_p50 <= usage.tokens_p95 <= usage.max_tokens


def test_a_near_miss_reports_how_many_tokens_were_short():
    store = [{"id": "big", "type": "skill", "token_count": 50, "base_priority": 9},
             {"id": "small", "type": "skill", "token_count": 5}]
    report = coverage(store, [Pool("skills", 40, 2, ("skill",))], [None], now=NOW)
    t = report.types["skill"]
    assert t.best == Rate(0, 1) and t.any == Rate(1, 1)
    assert t.missed == {"over_tokens": 1} and t.tokens_short == 10
    assert t.crowded_tokens == 1


def test_a_type_in_no_pool_is_uncovered_and_says_so():
    store = [{"id": "g", "type": "growth"}, {"id": "t", "type": "task"}]
    report = coverage(store, [Pool("tasks", 40, 2, ("task",))], [None, {}], now=NOW)
    assert report.types["growth"].best == Rate(0, 2)
    assert report.types["growth"].missed == {"no_pool": 2}
    assert report.lowest == 0.0 and report.mean == 0.5


def test_wilson_intervals_are_honest_for_small_samples():
    assert (Rate(0, 0).low, Rate(0, 0).high) == (0.0, 1.0)
    assert Rate(8, 8).high == 1.0 and 0.6 < Rate(8, 8).low < 0.7
    assert Rate(0, 8).low == 0.0 and Rate(0, 8).high < 0.4
    for hits, total in ((3, 10), (26, 32), (1, 2)):
        rate = Rate(hits, total)
        assert 0 <= rate.low < rate.share < rate.high <= 1


def test_reports_and_plans_are_plain_json_data():
    store = load_sample_store()
    report = coverage(store, SPLIT_POOLS, DEMO_QUERIES[:4], now=DEMO_NOW)
    plan = plan_pools(store, DEMO_QUERIES, TOTAL_TOKENS, now=DEMO_NOW)
    for data in (report.to_dict(), plan.to_dict()):
        assert json.loads(json.dumps(data)) == data


# --------------------------------------------------------------------------
# Pools as JSON
# --------------------------------------------------------------------------


def test_a_plan_written_to_json_and_read_back_gives_the_same_pools(tmp_path):
    plan = plan_pools(load_sample_store(), DEMO_QUERIES, TOTAL_TOKENS, now=DEMO_NOW)
    path = tmp_path / "pools.json"
    save_pools(plan.pools, path)
    assert load_pools(path) == list(plan.pools)
    assert pools_from_json(pools_to_json(plan.pools)) == list(plan.pools)
    assert json.loads(path.read_text())[1] == {
        "name": plan.pools[1].name, "max_tokens": plan.pools[1].max_tokens,
        "max_entries": plan.pools[1].max_entries, "types": list(plan.pools[1].types)}


# A pool of no type (types=()) is drawn on purpose: it warns, and takes nothing.
@pytest.mark.filterwarnings("ignore:Pool '.*' takes no type")
@given(st.lists(st.builds(Pool, name=st.text(min_size=1, max_size=8),
                          max_tokens=st.integers(0, 10**6), max_entries=st.integers(0, 99),
                          types=st.one_of(st.none(), st.lists(st.text(max_size=5)).map(tuple))),
                min_size=1, max_size=5, unique_by=lambda p: p.name))
def test_any_pools_survive_the_json_round_trip(pools):
    assert pools_from_json(pools_to_json(pools)) == pools


@pytest.mark.parametrize(("text", "message"), [
    ("{", "invalid JSON at line 1"),
    ("[]", "expected a non-empty JSON list"),
    ('{"name": "a"}', "expected a non-empty JSON list"),
    ('[{"name": "a", "max_tokens": 1}]', "pool 0 lacks max_entries"),
    ('[{"name": "a", "max_tokens": -1, "max_entries": 1}]', "max_tokens must be >= 0, got -1"),
    ('[{"name": "a", "max_tokens": 1, "max_entries": 1, "size": 3}]', "unknown key(s) size"),
    ('[{"name": "a", "max_tokens": 1, "max_entries": 1},'
     ' {"name": "a", "max_tokens": 1, "max_entries": 1}]', "duplicate pool name 'a'"),
])
def test_bad_pools_json_names_the_pool_and_the_problem(text, message):
    with pytest.raises((TypeError, ValueError), match=r"^plan\.json") as info:
        pools_from_json(text, "plan.json")
    assert message in str(info.value)


def test_load_pools_on_a_file_that_is_not_utf8_names_the_file_and_the_byte(tmp_path):
    path = tmp_path / "pools.json"
    path.write_bytes(pools_to_json(SPLIT_POOLS).encode("utf-8") + b"\xff")
    with pytest.raises(ValueError, match="not UTF-8 text") as info:
        load_pools(path)
    assert str(info.value).startswith(f"{path}: ")
    assert not isinstance(info.value, UnicodeDecodeError)  # ours, not the codec's bare error


def test_pools_naming_a_lone_surrogate_are_saved_as_utf8_and_read_back(tmp_path):
    # json.loads turns "\\ud800" in a store into a lone surrogate, which UTF-8 cannot hold.
    pools = [Pool("odd", 100, 2, ("note\ud800",))]
    path = tmp_path / "pools.json"
    save_pools(pools, path)
    path.read_bytes().decode("utf-8")  # a valid UTF-8 file
    assert load_pools(path) == pools


# --------------------------------------------------------------------------
# Bad input
# --------------------------------------------------------------------------

STORE = [{"id": "t", "type": "task", "content": "deploy"},
         {"id": "fix", "type": "correction", "scope": "always", "content": "x" * 400}]


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"total_tokens": 0}, "total_tokens must be an int >= 1, got 0"),
    ({"total_tokens": 50.0}, "total_tokens must be an int >= 1, got 50.0"),
    ({"total_tokens": 50}, "the always tier needs 100 tokens per query (p95)"),
    ({"target": 0}, "target must be a number in (0, 1], got 0"),
    ({"target": 1.5}, "target must be a number in (0, 1], got 1.5"),
    ({"depth": 0}, "depth must be an int >= 1, got 0"),
    ({"holdout": 1}, "holdout must be a number in [0, 1), got 1"),
    ({"total_entries": 0}, "total_entries must be an int >= 1 or None, got 0"),
    ({"queries": []}, "queries must hold at least one query context"),
    ({"queries": ["deploy"]}, "queries[0] must be a mapping (a context) or None, got str"),
    ({"queries": {"message": "deploy"}}, "queries must be a sequence of contexts"),
    ({"store": [{"id": "fix", "scope": "always"}]}, "no active contextual entry"),
    ({"store": [{"id": "t", "base_priority": "high"}]}, "entry id='t': base_priority"),
    ({"store": [{"id": "t", "type": 7}]},
     "entry id='t': types must be str to get a pool, got the type 7"),
])
def test_bad_plan_arguments_get_clear_errors(kwargs, message):
    args = {"store": STORE, "queries": [{"message": "deploy"}], "total_tokens": 500, **kwargs}
    with pytest.raises((TypeError, ValueError)) as info:
        plan_pools(args.pop("store"), args.pop("queries"), args.pop("total_tokens"), **args)
    assert message in str(info.value)


def test_a_total_entry_cap_below_one_per_type_is_refused_naming_the_types():
    store = [{"type": "a"}, {"type": "b"}, {"type": "c"}]
    with pytest.raises(ValueError, match=r"total_entries=2 cannot give each of the 3 types"
                                         r" \(a, b, c\) its top 1 entry; it needs at least 3"):
        plan_pools(store, [None], 100, total_entries=2)


def test_coverage_refuses_a_pool_that_is_not_a_pool_and_mutates_nothing():
    store = [{"id": "t", "type": "task", "tags": ["db"]}]
    before = json.dumps(store)
    with pytest.raises(TypeError, match=r"pools\[0\] must be a Pool or a mapping .*, got str"):
        coverage(store, ["x"], [None])
    with pytest.raises(ValueError, match=r"pools\[0\] lacks max_tokens, max_entries"):
        coverage(store, [{"name": "x"}], [None])  # a pool as data: the core's one rule
    coverage(store, [Pool("t", 10, 1)], [{"message": "db", "tags": ["db"]}])
    plan_pools(store, [{"message": "db"}], 10)
    assert json.dumps(store) == before


# --------------------------------------------------------------------------
# The default query sample
# --------------------------------------------------------------------------


def test_the_default_sample_asks_about_every_type_and_is_deterministic():
    store = load_sample_store()
    queries = sample_queries(store, 40)
    assert len(queries) == 40 and queries == sample_queries(store, 40)
    kinds = {e["type"] for e in store if e.get("scope") != "always"}
    # Each query is an entry speaking: the first 12 words of one entry of each type in turn.
    firsts = [" ".join(e["content"].split()[:12]) for e in store]
    assert all(q["message"] in firsts for q in queries)
    spoken = {e["type"] for e in store for q in queries[:len(kinds)]
              if " ".join(e["content"].split()[:12]) == q["message"]}
    assert spoken == kinds
    with pytest.raises(ValueError, match="count must be an int >= 1, got 0"):
        sample_queries(store, 0)
