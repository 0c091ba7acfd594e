"""Fuzz: arbitrary JSON-like entries and arbitrary valid pools.

The core either returns a valid result or raises one of its documented
TypeError/ValueError -- never another exception (OverflowError, KeyError,
AttributeError, ...) -- and never mutates its input. ``HYPOTHESIS_PROFILE=long``
runs 20k examples per test.
"""

from __future__ import annotations

import copy
from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from poolsplit_core.poolsplit import OUTCOMES, Pool, explain_pools, retrieve, retrieve_pools
from tests.core import strategies as s

HUGE = 10**4000  # far beyond float range (and still printable by hypothesis)

json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=-(10**400), max_value=10**400),
    st.sampled_from((HUGE, -HUGE, 2**63, -(2**63) - 1, 0, -1)),
    st.floats(),  # NaN and the infinities included
    st.text(max_size=12),
)

json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner,
                                                                 max_size=4),
    max_leaves=12,
)

EDGE_TIMESTAMPS = (
    "0001-01-01T00:00:00+14:00",
    "9999-12-31T23:59:59-14:00",
    "0001-01-01",
    "0001-01-01T00:00:00-23:59",
    "9999-12-31T23:59:59.999999999Z",
    "9999-12-31T23:59:59+23:59",
    "0000-01-01",
    "2024-02-29",
    "2026-02-29",
    "2026-01-01T24:00:00",
    "2026-01-01T00:00:60Z",
    "2026-01-01T00:00:00+24:00",
    "2026-01-01T00:00:00+23:59",
    "2026-01-01T00:00:00-00:00",
    "2026-01-01T00:00:00+99:99",
    "2026-01-01T00:00:00.",
    "\u0662\u0660\u0662\u0666-\u0660\u0661-\u0660\u0661",  # Arabic-Indic digits
    "\uff12\uff10\uff12\uff16-01-01",  # fullwidth digits
    " 2026-01-01T00:00:00Z\n",
    "",
)

NUMBERISH = st.sampled_from(("5", " 7 ", "1e400", "-1e400", "nan", "inf", "1_000", "0x10",
                             1e308, -1e308, 5e-324, HUGE))

SPEC_KEYS = {
    "id": json_values,
    "type": st.one_of(st.sampled_from(s.TYPES), json_values),
    "scope": st.one_of(st.just("always"), json_values),
    "base_priority": st.one_of(NUMBERISH, json_values),
    "created": st.one_of(st.sampled_from(EDGE_TIMESTAMPS), s.iso_timestamps(), st.text(max_size=30),
                         json_values),
    "tags": st.one_of(st.lists(st.text(max_size=4), max_size=3), json_values),
    "project": st.one_of(st.sampled_from(s.PROJECTS), json_values),
    "content": st.one_of(st.lists(st.sampled_from(s.VOCAB)).map(" ".join), json_values),
    "token_count": st.one_of(st.sampled_from((HUGE, 10**400, 2**63, -HUGE)), json_values),
    "status": st.one_of(st.just("active"), json_values),
    "superseded_by": json_values,
}


@st.composite
def json_entries(draw):
    entry = draw(st.dictionaries(st.text(max_size=8), json_values, max_size=3))
    entry.update(draw(st.fixed_dictionaries({}, optional=SPEC_KEYS)))
    return entry


json_stores = st.lists(json_entries(), max_size=8)

valid_pools = st.builds(
    Pool,
    name=st.text(min_size=1, max_size=8),
    max_tokens=st.one_of(st.integers(0, 50), st.integers(min_value=0), st.just(HUGE)),
    max_entries=st.one_of(st.integers(0, 5), st.integers(min_value=0), st.just(HUGE)),
    types=st.one_of(st.none(), st.lists(st.one_of(st.sampled_from(s.TYPES), st.text(max_size=4)),
                                        max_size=4)),
)

valid_pool_lists = st.lists(valid_pools, max_size=4, unique_by=lambda p: p.name)

EDGE_ZONES = (timezone.utc, timezone(timedelta(hours=14)), timezone(timedelta(hours=-14)),
              timezone(timedelta(hours=23, minutes=59)))

fuzz_nows = st.one_of(
    st.none(),
    st.datetimes(timezones=st.one_of(st.none(), st.sampled_from(EDGE_ZONES))),
    st.sampled_from((datetime.min, datetime.max,
                     datetime.min.replace(tzinfo=timezone(timedelta(hours=-14))),
                     datetime.max.replace(tzinfo=timezone(timedelta(hours=14))))),
)

fuzz_contexts = st.one_of(
    st.none(),
    st.fixed_dictionaries({}, optional={"message": st.one_of(st.text(max_size=30), json_values),
                                        "project": json_values,
                                        "tags": json_values}),
    st.dictionaries(st.text(max_size=8), json_values, max_size=3),
)


def priority_scorer(entry, context):
    return entry.get("base_priority")


def heavy_counter(text):
    return len(text) * 10**30 - 10**29


fuzz_functions = st.fixed_dictionaries({}, optional={
    "scorer": st.just(priority_scorer),
    "token_counter": st.just(heavy_counter),
})


def assert_valid_pools_result(got, store, pools):
    assert isinstance(got, dict)
    assert list(got) == [p.name for p in pools]
    inputs = {id(e) for e in store}
    owner = {}
    for name, picked in got.items():
        assert isinstance(picked, list)
        for entry in picked:
            assert id(entry) in inputs
            assert owner.setdefault(id(entry), name) == name


def assert_valid_explanation(explained, store, pools):
    assert len(explained.decisions) == len(store)
    names = [p.name for p in pools]
    assert list(explained.ledgers) == names
    for i, (decision, entry) in enumerate(zip(explained.decisions, store)):
        assert decision.entry is entry and decision.index == i
        assert decision.outcome in OUTCOMES
        assert decision.pool is None or decision.pool in names
        if decision.outcome == "over_tokens":
            assert decision.cost > decision.tokens_left
    for pool in pools:
        ledger = explained.ledgers[pool.name]
        assert 0 <= ledger.tokens_used <= pool.max_tokens
        assert 0 <= ledger.selected <= pool.max_entries


def run_or_refuse(fn, *args, **kwargs):
    """The result, or None when the core refused the input with TypeError/ValueError."""
    try:
        return fn(*args, **kwargs)
    except (TypeError, ValueError):
        return None


# A pool of no type (types=()) is drawn on purpose: it warns, and takes nothing.
@pytest.mark.filterwarnings("ignore:Pool '.*' takes no type")
@given(store=json_stores, pools=valid_pool_lists, context=fuzz_contexts, now=fuzz_nows,
       fns=fuzz_functions)
def test_arbitrary_json_entries_give_a_valid_result_or_a_documented_error(
        store, pools, context, now, fns):
    before = copy.deepcopy((store, context))

    got = run_or_refuse(retrieve_pools, store, pools, context, now=now, **fns)
    explained = run_or_refuse(explain_pools, store, pools, context, now=now, **fns)
    single = [run_or_refuse(retrieve, store, pool, context, now=now, **fns) for pool in pools]

    assert s.same(before, (store, context))
    if got is not None:
        assert_valid_pools_result(got, store, pools)
    if explained is not None:
        assert_valid_explanation(explained, store, pools)
    if got is not None and explained is not None:
        loaded = explained.loaded()
        for name, picked in got.items():
            assert [id(d.entry) for d in loaded[name]] == [id(e) for e in picked]
    if pools and got is not None:
        first = single[0]
        assert first is not None
        assert [id(e) for e in first] == [id(e) for e in got[pools[0].name]]


@given(store=json_stores, now=fuzz_nows)
def test_arbitrary_json_entries_under_a_pool_of_every_type_never_crash_or_mutate(store, now):
    # one pool that considers every entry: every scoring path runs
    before = copy.deepcopy(store)
    pools = [Pool("all", max_tokens=10**6, max_entries=10**6)]
    got = run_or_refuse(retrieve_pools, store, pools, {"message": "rotate the database"},
                        now=now)
    assert s.same(before, store)
    if got is not None:
        assert_valid_pools_result(got, store, pools)
