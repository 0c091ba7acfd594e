"""Differential: a PreparedStore answers exactly what the literal reference answers.

The store is built from part of a random store and given the rest through
``add``, then queried with random pools, contexts, times and scorers; it must
return the reference's entry objects in the reference's order, and its
explanation must load exactly those.
"""

from __future__ import annotations

import copy

import pytest
from hypothesis import given
from hypothesis import strategies as st

from poolsplit_core.poolsplit import _word_sets
from poolsplit_core.prepared import PreparedStore
from tests.core import strategies as s
from tests.reference import ref_retrieve_pools, words

# Every test of this module runs once per engine of PreparedStore (tests/core/conftest.py).
pytestmark = pytest.mark.usefixtures("each_engine")


def identities(entries):
    return [id(e) for e in entries]


@given(store=s.stores(), pools=s.pool_lists, context=s.contexts, now=s.nows, fns=s.functions(),
       split=st.integers(0, 12), queries=st.integers(1, 3), data=st.data())
def test_prepared_store_matches_the_literal_reference(
        store, pools, context, now, fns, split, queries, data):
    check_prepared(store, pools, context, now, fns, split, queries, data, s.pool_lists,
                   s.contexts, s.nows)


@given(store=s.near_tie_stores, pools=s.near_tie_pool_lists, context=s.near_tie_contexts,
       now=s.near_tie_nows, fns=s.functions(), split=st.integers(0, 200),
       queries=st.integers(1, 3), data=st.data())
def test_prepared_store_matches_the_literal_reference_on_near_tie_stores(
        store, pools, context, now, fns, split, queries, data):
    # 40-200 alike entries: ties at every stream bound and every prune
    check_prepared(store, pools, context, now, fns, split, queries, data,
                   s.near_tie_pool_lists, s.near_tie_contexts, s.near_tie_nows)


def check_prepared(store, pools, context, now, fns, split, queries, data, pool_lists, contexts,
                   nows):
    before = copy.deepcopy(store)
    build = {k: v for k, v in fns.items() if k in ("token_counter", "is_active")}
    query = {k: v for k, v in fns.items() if k == "scorer"}
    prepared = PreparedStore(store[:split], **build)
    for entry in store[split:]:
        prepared.add(entry)
    for _ in range(queries):
        want = ref_retrieve_pools(store, pools, context, now=now, **fns)
        got = prepared.retrieve_pools(pools, context, now=now, **query)
        assert list(got) == list(want)
        for name in want:
            assert identities(got[name]) == identities(want[name])
        loaded = prepared.explain_pools(pools, context, now=now, **query).loaded()
        for name in want:
            assert identities(d.entry for d in loaded[name]) == identities(want[name])
        # decide builds its Decisions its own way: every field equal to the account's
        assert prepared.decide(pools, context, now=now, **query) == loaded
        # the next query: other pools, context and time over the same store
        pools = data.draw(pool_lists)
        context = data.draw(contexts)
        now = data.draw(nows)
    assert s.same(before, store)


# Characters whose lowercase is, or holds, ASCII (the Kelvin sign is "k", the
# dotted capital I lowercases to "i" plus a combining dot), or that look like
# ASCII letters and digits but are not (long s, fullwidth A, a and 0,
# Arabic-Indic zero, sharp s, the angstrom sign).
TRICKY = "\u212a\u0130\u017f\uff21\uff41\uff10\u0660\u00df\u212b"
texts = st.text(st.sampled_from("abcxyz019 -_.'\n\t" + TRICKY + "THE") | st.characters(),
                max_size=60)


@given(texts=st.lists(texts, max_size=5))
def test_the_bulk_word_reader_finds_exactly_the_spec_words(texts):
    # A build reads every entry's words with C-level steps (via bytes); they
    # must be W(text) of the spec, which the reference reads with a regex.
    got = [set(found) for found in _word_sets(texts)]
    assert got == [words(text) for text in texts]
