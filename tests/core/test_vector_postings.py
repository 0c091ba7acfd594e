"""The numpy engine's postings, their first rows filed in one step, read back as given."""

from __future__ import annotations

import random

import pytest

pytest.importorskip("numpy")

from poolsplit_core import _vectorized


@pytest.mark.parametrize("first_rows", [1, 3, 40, 1024])
def test_postings_hold_each_rows_items(monkeypatch, first_rows):
    # Items recur after the first rows: each keeps the one id it was first given.
    monkeypatch.setattr(_vectorized, "_FIRST_ROWS", first_rows)
    rng = random.Random(first_rows)
    words = [f"w{k}" for k in range(12)]
    sets = [frozenset(rng.sample(words, rng.randrange(0, 5))) for _ in range(40)]
    postings = _vectorized._Postings.build(iter(sets), len(sets))
    assert postings.items_of_rows(len(sets)) == [set(items) for items in sets]
    assert sorted(postings.ids.values()) == list(range(len(postings.ids)))
    postings.add(len(sets), ["w0", "new"])  # a write after the build: a known and a new item
    assert postings.items_of_rows(len(sets) + 1)[-1] == {"w0", "new"}


def test_postings_of_no_rows_are_empty():
    postings = _vectorized._Postings.build([], 0)
    assert postings.items_of_rows(0) == [] and not postings.ids
