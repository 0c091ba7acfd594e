"""Hypothesis properties of the core: the invariants, the differential against the
literal reference, and the consistency of explain_pools with retrieve_pools."""

from __future__ import annotations

import copy

import pytest
from hypothesis import given
from hypothesis import strategies as st

from poolsplit_core.poolsplit import (
    OUTCOMES,
    _Query,
    _shared_words,
    default_is_active,
    explain_pools,
    retrieve,
    retrieve_pools,
)
from tests.core import strategies as s
from tests.reference import (
    cost,
    ref_default_scorer,
    ref_default_token_counter,
    ref_retrieve,
    ref_retrieve_pools,
    sort_key,
    words,
)
from tests.reference import resolve_now as ref_now


def identities(entries):
    return [id(e) for e in entries]


def is_always(entry):
    return entry.get("scope") == "always"


def counter_of(fns):
    return fns.get("token_counter", ref_default_token_counter)


def active_of(fns):
    return fns.get("is_active", default_is_active)


def key_of(entry, index, context, now, fns):
    return sort_key(entry, index, context, ref_now(now), fns.get("scorer", ref_default_scorer))


def contextual_candidates(store, pool, fns):
    """(index, entry) of the active contextual entries of the pool's types, in input order."""
    return [(i, e) for i, e in enumerate(store)
            if active_of(fns)(e) and pool.accepts(e.get("type", "note")) and not is_always(e)]


# --------------------------------------------------------------------------
# Differential: the core returns what the literal reference returns
# --------------------------------------------------------------------------


@given(store=s.stores(), pools=s.pool_lists, context=s.contexts, now=s.nows, fns=s.functions())
def test_retrieve_and_retrieve_pools_match_the_literal_reference(
        store, pools, context, now, fns):
    check_against_the_reference(store, pools, context, now, fns)


@given(store=s.near_tie_stores, pools=s.near_tie_pool_lists, context=s.near_tie_contexts,
       now=s.near_tie_nows, fns=s.functions())
def test_near_tie_stores_match_the_literal_reference(store, pools, context, now, fns):
    # 40-200 alike entries: ties at every bound of the lazy message factor
    check_against_the_reference(store, pools, context, now, fns)


def check_against_the_reference(store, pools, context, now, fns):
    got = retrieve_pools(store, pools, context, now=now, **fns)
    want = ref_retrieve_pools(store, pools, context, now=now, **fns)
    assert list(got) == list(want) == [p.name for p in pools]
    for name in want:
        assert identities(got[name]) == identities(want[name])
    for pool in pools:
        assert identities(retrieve(store, pool, context, now=now, **fns)) == identities(
            ref_retrieve(store, pool, context, now=now, **fns))


# --------------------------------------------------------------------------
# (a) always-scope entries are never crowded out
# --------------------------------------------------------------------------


@given(store=s.stores(), pool=s.pools, pools=s.pool_lists, context=s.contexts, now=s.nows,
       burst=st.integers(0, 40), data=st.data())
def test_every_active_always_scope_entry_of_the_pool_types_is_returned(
        store, pool, pools, context, now, burst, data):
    message = (context or {}).get("message") or "deploy release"
    fresh = [{"id": f"fresh{i}", "type": data.draw(st.sampled_from(s.TYPES)),
              "base_priority": 1000, "created": now, "content": message * 20,
              "tags": list(s.TAGS), "token_count": 10**6 if i % 2 else 1}
             for i in range(burst)]
    mixed = data.draw(st.permutations(store + fresh))

    got = retrieve(mixed, pool, context, now=now)
    always = [e for e in mixed
              if default_is_active(e) and is_always(e) and pool.accepts(e.get("type", "note"))]
    assert identities(got[:len(always)]) == identities(always)

    placed = retrieve_pools(mixed, pools, context, now=now)
    for entry in mixed:
        if default_is_active(entry) and is_always(entry):
            homes = [p.name for p in pools if p.accepts(entry.get("type", "note"))]
            if homes:
                assert any(e is entry for e in placed[homes[0]])


# --------------------------------------------------------------------------
# (b) the budget and the cap bound the contextual entries
# --------------------------------------------------------------------------


@given(store=s.stores(), pools=s.pool_lists, context=s.contexts, now=s.nows, fns=s.functions())
def test_contextual_tokens_and_count_stay_within_the_pool_limits(store, pools, context, now, fns):
    got = retrieve_pools(store, pools, context, now=now, **fns)
    for pool in pools:
        contextual = [e for e in got[pool.name] if not is_always(e)]
        assert sum(cost(e, counter_of(fns)) for e in contextual) <= pool.max_tokens
        assert len(contextual) <= pool.max_entries
        single = [e for e in retrieve(store, pool, context, now=now, **fns) if not is_always(e)]
        assert sum(cost(e, counter_of(fns)) for e in single) <= pool.max_tokens
        assert len(single) <= pool.max_entries


# --------------------------------------------------------------------------
# (c) input order does not matter when the sort keys are distinct
# --------------------------------------------------------------------------


@given(store=s.stores(repeats=False), pool=s.pools, context=s.contexts, now=s.nows,
       fns=s.functions(), data=st.data())
def test_shuffling_the_input_never_changes_the_output_when_keys_are_distinct(
        store, pool, context, now, fns, data):
    # unique ids make the (score, created, id) keys distinct
    store = [{**e, "id": f"e{i:02d}"} for i, e in enumerate(store)]
    shuffled = data.draw(st.permutations(store))
    first = retrieve(store, pool, context, now=now, **fns)
    second = retrieve(shuffled, pool, context, now=now, **fns)
    # always-scope entries come in input order; the contextual order is the sort order
    assert sorted(e["id"] for e in first if is_always(e)) == sorted(
        e["id"] for e in second if is_always(e))
    assert [e["id"] for e in first if not is_always(e)] == [
        e["id"] for e in second if not is_always(e)]
    many = retrieve_pools(store, [pool], context, now=now, **fns)
    again = retrieve_pools(shuffled, [pool], context, now=now, **fns)
    assert [e["id"] for e in many[pool.name] if not is_always(e)] == [
        e["id"] for e in again[pool.name] if not is_always(e)]


# --------------------------------------------------------------------------
# (d) nothing is mutated
# --------------------------------------------------------------------------


@given(store=s.stores(), pools=s.pool_lists, context=s.contexts, now=s.nows, fns=s.functions())
def test_inputs_are_never_mutated(store, pools, context, now, fns):
    before = copy.deepcopy((store, pools, context, now))
    retrieve(store, pools[0], context, now=now, **fns)
    retrieve_pools(store, pools, context, now=now, **fns)
    explain_pools(store, pools, context, now=now, **fns)
    assert s.same(before, (store, pools, context, now))
    assert before[1] == pools


# --------------------------------------------------------------------------
# (e) results are the input objects; (f) retrieve_pools: disjoint pools, each one a
# retrieve over what is left
# --------------------------------------------------------------------------


@given(store=s.stores(), pools=s.pool_lists, context=s.contexts, now=s.nows, fns=s.functions())
def test_results_are_input_objects_each_in_one_pool_taken_from_what_earlier_pools_left(
        store, pools, context, now, fns):
    got = retrieve_pools(store, pools, context, now=now, **fns)
    inputs = set(identities(store))
    for picked in got.values():
        assert set(identities(picked)) <= inputs
    owner = {}
    for name, picked in got.items():
        for entry in picked:
            assert owner.setdefault(id(entry), name) == name  # never in two pools
    left = list(store)
    for pool in pools:
        assert identities(got[pool.name]) == identities(
            retrieve(left, pool, context, now=now, **fns))
        taken = set(identities(got[pool.name]))
        left = [e for e in left if id(e) not in taken]


# --------------------------------------------------------------------------
# (g) greedy maximality
# --------------------------------------------------------------------------


@given(store=s.stores(), pool=s.pools, context=s.contexts, now=s.nows, fns=s.functions())
def test_every_entry_left_out_did_not_fit_or_came_after_the_cap(store, pool, context, now, fns):
    got = retrieve(store, pool, context, now=now, **fns)
    returned = [e for e in got if not is_always(e)]
    ranked = sorted(((key_of(e, i, context, now, fns), e)
                     for i, e in contextual_candidates(store, pool, fns)), key=lambda t: t[0])
    # walk the candidates in sort order: the returned ones are a subsequence of it
    j, count, tokens_left = 0, 0, pool.max_tokens
    for _, entry in ranked:
        price = cost(entry, counter_of(fns))
        if j < len(returned) and returned[j] is entry:
            j, count, tokens_left = j + 1, count + 1, tokens_left - price
            continue
        assert count == pool.max_entries or price > tokens_left
    assert j == len(returned)


# --------------------------------------------------------------------------
# explain_pools accounts for every entry and every token
# --------------------------------------------------------------------------


def simulate(store, pools, context, now, fns):
    """Per input index: (outcome, pool, tokens_left) from the spec's rules, and per pool the
    number of entries skipped for the tokens and for the cap."""
    fate = {}
    skipped = {}
    taken = set()
    for pool in pools:
        considered = [(i, e) for i, e in enumerate(store)
                      if id(e) not in taken and active_of(fns)(e)
                      and pool.accepts(e.get("type", "note"))]
        for i, e in considered:
            if is_always(e):
                fate[i] = ("always", pool.name, None)
                taken.add(id(e))
        ranked = sorted(((key_of(e, i, context, now, fns), i, e) for i, e in considered
                         if not is_always(e)), key=lambda t: t[0])
        tokens_left, count, over = pool.max_tokens, 0, {"over_tokens": 0, "over_entries": 0}
        for _, i, e in ranked:
            price = cost(e, counter_of(fns))
            if count == pool.max_entries:
                fate[i] = ("over_entries", pool.name, None)
            elif price > tokens_left:
                fate[i] = ("over_tokens", pool.name, tokens_left)
            else:
                fate[i] = ("selected", pool.name, None)
                tokens_left -= price
                count += 1
                continue
            over[fate[i][0]] += 1
        taken.update(id(e) for _, i, e in ranked if fate[i][0] == "selected")
        skipped[pool.name] = over
    for i, e in enumerate(store):
        if i not in fate:
            fate[i] = ("no_pool" if active_of(fns)(e) else "inactive", None, None)
    return fate, skipped


@given(store=s.stores(), pools=s.pool_lists, context=s.contexts, now=s.nows, fns=s.functions())
def test_explain_pools_loaded_entries_are_exactly_what_retrieve_pools_returns(
        store, pools, context, now, fns):
    explained = explain_pools(store, pools, context, now=now, **fns)
    got = retrieve_pools(store, pools, context, now=now, **fns)
    loaded = explained.loaded()
    assert list(loaded) == list(got) == list(explained.ledgers)
    for name, picked in got.items():
        assert identities(d.entry for d in loaded[name]) == identities(picked)
        assert [d.rank for d in loaded[name]] == list(range(len(picked)))


@given(store=s.stores(), pools=s.pool_lists, context=s.contexts, now=s.nows, fns=s.functions())
def test_explain_pools_decides_every_entry_once_by_the_spec_rules(
        store, pools, context, now, fns):
    explained = explain_pools(store, pools, context, now=now, **fns)
    assert [d.index for d in explained.decisions] == list(range(len(store)))
    assert all(d.entry is e for d, e in zip(explained.decisions, store))
    assert all(d.outcome in OUTCOMES for d in explained.decisions)

    fate, skipped = simulate(store, pools, context, now, fns)
    for d in explained.decisions:
        assert (d.outcome, d.pool, d.tokens_left) == fate[d.index]
        if d.pool is not None:
            assert d.cost == cost(d.entry, counter_of(fns))
        if d.outcome == "over_tokens":
            assert d.cost > d.tokens_left
        if d.outcome in ("selected", "over_tokens", "over_entries"):
            assert d.score == key_of(d.entry, d.index, context, now, fns)[0] * -1
        else:
            assert d.score is None

    for pool in pools:
        ledger = explained.ledgers[pool.name]
        mine = [d for d in explained.decisions if d.pool == pool.name]
        selected = [d for d in mine if d.outcome == "selected"]
        always = [d for d in mine if d.outcome == "always"]
        assert (ledger.pool, ledger.max_tokens, ledger.max_entries) == (
            pool.name, pool.max_tokens, pool.max_entries)
        assert ledger.tokens_used == sum(d.cost for d in selected) <= pool.max_tokens
        assert ledger.tokens_left == pool.max_tokens - ledger.tokens_used
        assert ledger.selected == len(selected) <= pool.max_entries
        assert ledger.always == len(always)
        assert ledger.always_tokens == sum(d.cost for d in always)
        assert ledger.skipped_tokens == skipped[pool.name]["over_tokens"]
        assert ledger.skipped_entries == skipped[pool.name]["over_entries"]
        # what this pool skipped and no later pool considered is decided here
        assert len([d for d in mine if d.outcome == "over_tokens"]) <= ledger.skipped_tokens
        assert len([d for d in mine if d.outcome == "over_entries"]) <= ledger.skipped_entries


# Runs of a few letters and a digit (the Kelvin sign lowercases to "k"), and
# message words cut from them: whole runs, and their starts, ends and middles.
_RUNS = st.lists(st.text(st.sampled_from("ab1\u212a"), min_size=3, max_size=7), max_size=6)


@given(runs=_RUNS, separator=st.sampled_from([" ", "-", "\u0130", "\n"]), data=st.data())
def test_the_stateless_score_counts_the_message_words_the_text_holds_as_whole_runs(
        runs, separator, data):
    # The stateless path looks each message word up in the text, not the text's words.
    text = separator.join(runs)
    cuts = sorted({run[i:j] for run in runs for i in range(len(run))
                   for j in range(i + 3, len(run) + 1)})
    message = " ".join(data.draw(st.lists(st.sampled_from(cuts), max_size=4))) if cuts else ""
    query = _Query(frozenset(words(message)), None, frozenset())
    assert _shared_words(text, query, "") == len(words(text) & words(message))


@pytest.mark.parametrize("text, count", [
    ("plan planning", 1),  # whole, then inside a longer run
    ("plans plan plans", 1),  # whole only between two longer runs
    ("planning replan plan", 1),  # whole only at the end
    ("planning replan plans", 0),  # never whole
])
def test_a_message_word_counts_when_any_of_its_occurrences_is_a_whole_run(text, count):
    query = _Query(frozenset({"plan"}), None, frozenset())
    assert _shared_words(text, query, "") == count == len(words(text) & {"plan"})
