"""Differential: a PreparedStore answers exactly what the literal reference answers.

The store is built from part of a random store and given the rest through
``add``, then queried with random pools, contexts, times and scorers; it must
return the reference's entry objects in the reference's order, and its
explanation must load exactly those.
"""

from __future__ import annotations

import copy

from hypothesis import given
from hypothesis import strategies as st

from poolsplit_core.poolsplit import PreparedStore
from tests.core import strategies as s
from tests.reference import ref_retrieve_pools


def identities(entries):
    return [id(e) for e in entries]


@given(store=s.stores(), pools=s.pool_lists, context=s.contexts, now=s.nows, fns=s.functions(),
       split=st.integers(0, 12), queries=st.integers(1, 3), data=st.data())
def test_prepared_store_matches_the_literal_reference(
        store, pools, context, now, fns, split, queries, data):
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
        # the next query: other pools, context and time over the same store
        pools = data.draw(s.pool_lists)
        context = data.draw(s.contexts)
        now = data.draw(s.nows)
    assert s.same(before, store)
