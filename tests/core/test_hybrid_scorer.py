"""The hybrid scorer (make_scorer's relevance, similarity, evergreen and decay options).

With default options it is ``default_scorer`` bit for bit; with any options it
equals the literal reference (``tests/reference.py``'s ``ref_hybrid_scorer``);
and a PreparedStore's walk, the stateless functions and the reference load the
same entry objects in the same order over near-tie stores, extras included.
"""

from __future__ import annotations

import copy
import math
import random
from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from poolsplit_core.poolsplit import (
    ConfiguredScorer,
    Pool,
    default_scorer,
    make_scorer,
    retrieve_pools,
)
from poolsplit_core.prepared import PreparedStore
from tests.core import strategies as s
from tests.reference import ref_hybrid_scorer, ref_retrieve_pools

# Every test of this module runs once per engine of PreparedStore (tests/core/conftest.py).
pytestmark = pytest.mark.usefixtures("each_engine")

similarities = st.one_of(st.none(), st.sampled_from((0.0, 0.25, 0.5, 1.0, 1.7, -0.3, 1)),
                         st.floats(-2, 2))
entries_with_similarity = st.tuples(s.entries, similarities).map(
    lambda pair: pair[0] if pair[1] is None else {**pair[0], "similarity": pair[1]})

options = st.fixed_dictionaries({}, optional={
    "relevance": st.sampled_from(("words", "similarity", "both")),
    "similarity_weight": st.sampled_from((0, 0.5, 1.5, 3)),
    "evergreen": st.lists(st.sampled_from(s.TYPES), max_size=2),
    "decay_days": st.dictionaries(st.sampled_from(s.TYPES), st.sampled_from((1, 7, 30.5, 365)),
                                  max_size=3),
})

# Near ties: few priorities, few instants, shared words and similarities, so
# that many scores are equal or one rounding apart, and the sort key decides.
BASE = datetime(2026, 3, 1, tzinfo=timezone.utc)
near_tie_entries = st.fixed_dictionaries(
    {"content": st.lists(st.sampled_from(("deploy", "database", "rotate", "notes")),
                         max_size=3).map(" ".join)},
    optional={
        "id": st.sampled_from("abcdefgh"),
        "type": st.sampled_from(s.TYPES),
        "scope": st.sampled_from(("always", "contextual", "contextual", "contextual")),
        "base_priority": st.sampled_from((3, 5, 5.0, 7, 0.1 + 0.2, 0.3)),
        "created": st.sampled_from([(BASE - timedelta(days=d)).isoformat() for d in
                                    (0, 1, 3, 30, 89, 200)] + [None]),
        "tags": st.lists(st.sampled_from(s.TAGS), max_size=2),
        "project": st.sampled_from(s.PROJECTS),
        "similarity": st.sampled_from((None, 0.0, 0.5, 0.5000000000000001, 1.0, 2.0)),
        "status": st.sampled_from(("active", "active", "active", "retired")),
    },
)
near_tie_stores = st.lists(near_tie_entries, max_size=40)
near_tie_contexts = st.fixed_dictionaries(
    {}, optional={"message": st.sampled_from(("deploy", "deploy the database", "rotate notes",
                                              "")),
                  "project": st.sampled_from(s.PROJECTS),
                  "tags": st.lists(st.sampled_from(s.TAGS), max_size=2)})
near_tie_nows = st.sampled_from([BASE, BASE + timedelta(days=10), BASE + timedelta(hours=7)])


def ids(entries):
    return [id(e) for e in entries]


@given(entry=entries_with_similarity, context=s.contexts, now=s.nows)
def test_default_options_score_exactly_as_the_default_scorer(entry, context, now):
    explicit = make_scorer(words=None, relevance="words", similarity_weight=1.5, evergreen=(),
                           decay_days={})
    for scorer in (make_scorer(), explicit):
        try:
            want = default_scorer(entry, context, now=now)
        except (TypeError, ValueError) as error:
            with pytest.raises(type(error)):
                scorer(entry, context, now=now)
            continue
        got = scorer(entry, context, now=now)
        assert got == want and math.copysign(1, got) == math.copysign(1, want)


@given(store=s.stores(), pools=s.pool_lists, context=s.contexts, now=s.nows)
def test_default_options_load_exactly_as_the_default_scorer(store, pools, context, now):
    try:
        want = retrieve_pools(store, pools, context, now=now)
    except (TypeError, ValueError):
        return
    got = retrieve_pools(store, pools, context, now=now, scorer=make_scorer())
    assert {k: ids(v) for k, v in got.items()} == {k: ids(v) for k, v in want.items()}
    prepared = PreparedStore(store, scorer=make_scorer())
    got = prepared.retrieve_pools(pools, context, now=now)
    assert {k: ids(v) for k, v in got.items()} == {k: ids(v) for k, v in want.items()}


@given(entry=near_tie_entries, opts=options, context=near_tie_contexts, now=near_tie_nows)
def test_every_option_scores_as_the_literal_formula(entry, opts, context, now):
    got = make_scorer(**opts)(entry, context, now=now)
    assert got == ref_hybrid_scorer(**opts)(entry, context, now=now)


def test_seeded_differential_against_the_reference_and_the_default():
    rng = random.Random(1515)
    types, words = s.TYPES, ("deploy", "database", "rotate", "notes", "the")
    for _ in range(300):
        entry = {"type": rng.choice(types), "base_priority": rng.choice((1, 5, 9, 2.5)),
                 "created": (BASE - timedelta(seconds=rng.randrange(0, 400 * 86400))).isoformat(),
                 "content": " ".join(rng.choices(words, k=rng.randrange(0, 5))),
                 "tags": rng.sample(s.TAGS, rng.randrange(0, 3)),
                 "project": rng.choice((None, *s.PROJECTS))}
        if rng.random() < 0.7:
            entry["similarity"] = rng.uniform(-0.5, 1.5)
        context = {"message": " ".join(rng.choices(words, k=rng.randrange(0, 4))),
                   "project": rng.choice(s.PROJECTS), "tags": rng.sample(s.TAGS, 1)}
        opts = {"relevance": rng.choice(("words", "similarity", "both")),
                "similarity_weight": rng.choice((0.5, 1.5, 2)),
                "evergreen": rng.sample(types, rng.randrange(0, 3)),
                "decay_days": {rng.choice(types): rng.choice((7, 14, 180))}}
        now = BASE + timedelta(days=rng.randrange(0, 30))
        assert make_scorer(**opts)(entry, context, now=now) == ref_hybrid_scorer(**opts)(
            entry, context, now=now)
        assert make_scorer()(entry, context, now=now) == default_scorer(entry, context, now=now)


@given(store=near_tie_stores, extra=st.lists(near_tie_entries, max_size=6), opts=options,
       pools=s.pool_lists, context=near_tie_contexts, now=near_tie_nows,
       split=st.integers(0, 40))
def test_prepared_equals_stateless_equals_reference_for_factory_scorers(
        store, extra, opts, pools, context, now, split):
    before = copy.deepcopy(store + extra)
    scorer = make_scorer(**opts)
    every = store + extra
    want = ref_retrieve_pools(every, pools, context, now=now, scorer=ref_hybrid_scorer(**opts))
    stateless = retrieve_pools(every, pools, context, now=now, scorer=scorer)
    prepared = PreparedStore(store[:split], scorer=scorer)
    for entry in store[split:]:
        prepared.add(entry)
    walked = prepared.decide(pools, context, now=now, extra=extra)
    for name in want:
        assert ids(stateless[name]) == ids(want[name])
        assert ids(d.entry for d in walked[name]) == ids(want[name])
    if not extra:
        got = prepared.retrieve_pools(pools, context, now=now)
        assert {k: ids(v) for k, v in got.items()} == {k: ids(v) for k, v in want.items()}
    # the walk answered (it did not fall back): a store built for another scorer
    # still answers the same through the query's scorer=
    other = PreparedStore(store)
    walked = other.decide(pools, context, now=now, extra=extra, scorer=scorer)
    for name in want:
        assert ids(d.entry for d in walked[name]) == ids(want[name])
    assert s.same(before, store + extra)


def test_the_walk_answers_for_factory_scorers_without_falling_back(monkeypatch):
    store = [{"id": f"m{i}", "type": ("note", "correction")[i % 2], "content": "deploy"}
             for i in range(20)]
    prepared = PreparedStore(store, scorer=make_scorer(relevance="both",
                                                       evergreen=["correction"]))

    def no_fallback(*args, **kwargs):
        raise AssertionError("fell back to the stateless path")

    monkeypatch.setattr(prepared, "_stateless", no_fallback)
    got = prepared.decide([Pool("all", 100, 3)], {"message": "deploy"},
                          extra=[{"id": "hit", "content": "deploy", "similarity": 0.9}])
    assert next(d.entry["id"] for d in got["all"]) == "hit"


def test_similarity_weighs_only_when_relevance_names_it():
    now = BASE
    entry = {"content": "deploy", "similarity": 0.8}
    words = make_scorer()(entry, {"message": "deploy"}, now=now)
    assert words == default_scorer(entry, {"message": "deploy"}, now=now) == 12.5
    assert make_scorer(relevance="similarity")(entry, {"message": "deploy"}, now=now) == (
        5 * (1 + 1.5 * 0.8))
    assert make_scorer(relevance="both", similarity_weight=1)(
        entry, {"message": "deploy"}, now=now) == 12.5 * 1.8
    assert make_scorer(relevance="similarity")({"content": "deploy"}, now=now) == 5.0
    # clamped to [0, 1]: a distance or a raw dot product cannot run away
    assert make_scorer(relevance="similarity")({"similarity": 7}, now=now) == 5 * 2.5
    assert make_scorer(relevance="similarity")({"similarity": -3}, now=now) == 5.0


def test_evergreen_types_do_not_decay_and_horizons_are_per_type():
    now = BASE
    old = {"type": "correction", "created": "2020-01-01"}
    assert default_scorer(old, now=now) == 5 * 0.3
    assert make_scorer(evergreen=["correction"])(old, now=now) == 5.0
    week = {"type": "episode", "created": (BASE - timedelta(days=3.5)).isoformat()}
    assert make_scorer(decay_days={"episode": 7})(week, now=now) == 5 * (1 - 0.7 * 3.5 / 7)
    assert make_scorer(decay_days={"other": 7})(week, now=now) == default_scorer(week, now=now)


@pytest.mark.parametrize("value", ["high", True, float("nan"), float("inf"), [0.5]])
def test_a_similarity_that_is_not_a_finite_number_is_refused_naming_the_entry(value):
    scorer = make_scorer(relevance="both")
    store = [{"id": "ok", "similarity": 0.5}, {"id": "bad-1", "similarity": value}]
    with pytest.raises(ValueError, match=r"bad-1.*similarity"):
        retrieve_pools(store, [Pool("all", 100, 5)], {"message": "x"}, scorer=scorer)
    with pytest.raises(ValueError, match=r"bad-1.*similarity"):
        PreparedStore(store[:1], scorer=scorer).decide([Pool("all", 100, 5)], extra=store[1:])
    # the default scorer ignores the key, as it always has
    assert len(retrieve_pools(store, [Pool("all", 100, 5)])["all"]) == 2


@pytest.mark.parametrize("kwargs, error, words", [
    ({"relevance": "vectors"}, ValueError, "relevance"),
    ({"similarity_weight": -1}, ValueError, "similarity_weight"),
    ({"similarity_weight": "2"}, TypeError, "similarity_weight"),
    ({"evergreen": "correction"}, TypeError, "evergreen"),
    ({"evergreen": [1]}, TypeError, "evergreen"),
    ({"decay_days": {"episode": 0}}, ValueError, "decay_days\\['episode'\\]"),
    ({"decay_days": {"episode": float("inf")}}, ValueError, "decay_days"),
    ({"decay_days": [("episode", 7)]}, TypeError, "decay_days"),
])
def test_bad_options_are_refused_naming_the_option(kwargs, error, words):
    with pytest.raises(error, match=words):
        make_scorer(**kwargs)


def test_options_are_data_equal_by_value_and_round_trip():
    hybrid = make_scorer(relevance="both", similarity_weight=2, evergreen=["preference",
                                                                          "correction"],
                         decay_days={"episode": 7})
    assert hybrid == make_scorer(relevance="both", similarity_weight=2.0,
                                 evergreen=("correction", "preference"),
                                 decay_days={"episode": 7.0})
    assert hash(hybrid) == hash(make_scorer(**hybrid.to_data()))
    assert make_scorer(**hybrid.to_data()) == hybrid
    assert hybrid.to_data() == {"words": "ascii", "relevance": "both", "similarity_weight": 2.0,
                                "evergreen": ["correction", "preference"],
                                "decay_days": {"episode": 7.0}}
    assert repr(hybrid) == ("ConfiguredScorer(relevance='both', similarity_weight=2.0,"
                            " evergreen=['correction', 'preference'],"
                            " decay_days={'episode': 7.0})")
    assert make_scorer() == ConfiguredScorer() and make_scorer() != hybrid
    assert hybrid.uses_similarity and not make_scorer(evergreen=["x"]).uses_similarity


def _near_tie_options(rng):
    """Hybrid options over the near-tie stores' types: evergreen types, horizons, similarity."""
    opts = {}
    if rng.random() < 0.6:
        opts["evergreen"] = rng.sample(s.NEAR_TYPES, rng.randint(1, 2))
    if rng.random() < 0.6:
        opts["decay_days"] = {t: rng.choice((1, 7, 30.5, 365))
                              for t in rng.sample(s.NEAR_TYPES, rng.randint(1, 3))}
    if rng.random() < 0.4:
        opts["relevance"] = rng.choice(("similarity", "both"))
        opts["similarity_weight"] = rng.choice((0.5, 1.5, 3))
    return opts


@pytest.mark.parametrize("block", range(4))
def test_both_paths_equal_the_reference_on_seeded_near_tie_stores(block):
    """Stores of 40-200 near ties put an evergreen or short-horizon type at every bound."""
    for seed in range(block * 75, block * 75 + 75):
        rng = random.Random(seed)
        store = s.near_tie_store(rng)
        for entry in rng.sample(store, len(store) // 5):
            entry["similarity"] = rng.choice((0.0, 0.5, 1.0))
        opts = _near_tie_options(rng)
        scorer, pools = make_scorer(**opts), s.near_tie_pools(rng)
        context, now = s.near_tie_context(rng), s.near_tie_now(rng)
        want = ref_retrieve_pools(store, pools, context, now=now,
                                  scorer=ref_hybrid_scorer(**opts))
        expected = {k: ids(v) for k, v in want.items()}
        stateless = retrieve_pools(store, pools, context, now=now, scorer=scorer)
        assert {k: ids(v) for k, v in stateless.items()} == expected, f"seed {seed}, {opts}"
        prepared = PreparedStore(store, scorer=scorer)
        got = prepared.retrieve_pools(pools, context, now=now)
        assert {k: ids(v) for k, v in got.items()} == expected, f"seed {seed}, {opts}"


def test_an_age_past_2_to_the_53_microseconds_scores_exactly_as_the_reference():
    # 1700-01-01T00:00:00.000001 is 10,303,199,999,999,999 us before `now`: past
    # 2**53, where an int64 -> float64 conversion rounds. Its age in days must
    # be the exact quotient (119249.99999999997), as the reference reads it, not
    # the rounded one (119250.0); a horizon of 200,000 days makes the
    # difference reach the score.
    now = datetime(2026, 7, 1, tzinfo=timezone.utc)
    far = {"id": "far", "type": "note", "created": "1700-01-01T00:00:00.000001+00:00",
           "content": "x"}
    near = {"id": "near", "type": "note", "created": "2026-06-01", "content": "x"}
    scorer = make_scorer(decay_days={"note": 200_000})
    pools = [Pool("all", max_tokens=100, max_entries=5)]
    store = PreparedStore([far, near], scorer=scorer)
    got = {d.entry["id"]: d.score for d in store.decide(pools, now=now)["all"]}
    reference = ref_hybrid_scorer(decay_days={"note": 200_000})(far, {}, now=now)
    assert got["far"] == reference
    rounded = 5 * (1.0 - 0.7 * 119250.0 / 200_000)
    assert reference != rounded  # the test can tell the two readings apart
