"""The candidate merge and the vector-store plan both adapters share, without a framework."""

from __future__ import annotations

import pytest

from poolsplit_core import Pool
from poolsplit_integrations._candidates import Reading, VectorSource, merge
from poolsplit_integrations._live import LiveStore

BY_ID: Reading[tuple] = Reading(
    key=lambda hit: hit[0], score=lambda hit: hit[2],
    entry=lambda hit, similarity: {"id": hit[0], "content": hit[1], "similarity": similarity})


def stored(*ids):
    return LiveStore([({"id": i, "content": i}, f"stored {i}") for i in ids],
                     key=lambda obj: (obj.split()[-1],))


def test_a_stored_key_wins_and_a_repeated_candidate_is_kept_once():
    objects, entries = merge(stored("a"), [("a", "new a", 0.9), ("b", "b", 0.5),
                                           ("b", "b again", 0.7), ("c", "c", None)], BY_ID)
    assert objects == [("b", "b", 0.5), ("c", "c", None)]
    assert [(e["id"], e["similarity"]) for e in entries] == [("b", 0.5), ("c", None)]


def test_unscored_candidates_are_ranked_by_their_order_before_duplicates_drop():
    _, entries = merge(stored("a"), [("a", "a", None), ("b", "b", None), ("c", "c", None),
                                     ("d", "d", None)], BY_ID)
    assert [(e["id"], e["similarity"]) for e in entries] == [("b", 0.75), ("c", 0.5), ("d", 0.25)]


class FakeSource(VectorSource[str]):
    """Records the plan's calls; hits are strings naming what asked for them."""

    def __init__(self, search_size=None):
        self.vector_store, self._size, self.calls = object(), search_size, []

    @property
    def search_size(self):
        return self._size

    def _prepare(self, query, tenant):
        self.calls.append(("prepare", query, tenant))
        return query, tenant

    def _always(self, ready):
        self.calls.append(("always", ready[1]))
        return ["fix"]

    def _search(self, ready, pool):
        self.calls.append(("search", pool.name, self.top_k(pool)))
        return [f"{pool.name}-hit"]


POOLS = [Pool("work", 100, 2, ("task",)), Pool("notes", 100, 7)]


def test_the_plan_reads_the_always_tier_then_one_search_per_pool():
    source = FakeSource()
    assert source.candidates("q", POOLS, {"user_id": "ana"}) == ["fix", "work-hit", "notes-hit"]
    assert source.calls == [("prepare", "q", {"user_id": "ana"}), ("always", {"user_id": "ana"}),
                            ("search", "work", 10), ("search", "notes", 21)]
    assert FakeSource(search_size=4).top_k(POOLS[1]) == 4


@pytest.mark.parametrize("value", [True, None, ["ana"], {"a": 1}])
def test_a_tenant_value_no_store_can_compare_is_refused_before_any_read(value):
    source = FakeSource()
    with pytest.raises(ValueError, match=r"user_id=.* cannot be expressed as a metadata filter"
                                         r" of object \(a str or a number is\)"):
        source.candidates("q", POOLS, {"user_id": value})
    assert source.calls == []
