"""The numpy engine's postings: read a chunk at a time, each row's items filed once."""

from __future__ import annotations

import random

import pytest

pytest.importorskip("numpy")

import numpy as np

from poolsplit_core import _vectorized
from poolsplit_core.poolsplit import _NOT_WORDS, _word_runs, _word_sets


@pytest.mark.parametrize("chunk_rows", [1, 3, 40, 1024])
def test_postings_hold_each_rows_items(monkeypatch, chunk_rows):
    # Items recur across chunks: each keeps the one id it was first given.
    monkeypatch.setattr(_vectorized, "_CHUNK_ROWS", chunk_rows)
    rng = random.Random(chunk_rows)
    words = [f"w{k}" for k in range(12)]
    sets = [frozenset(rng.sample(words, rng.randrange(0, 5))) for _ in range(40)]
    postings = _vectorized._Postings.build(iter(sets), len(sets))
    assert postings.items_of_rows(len(sets)) == [set(items) for items in sets]
    assert sorted(postings.ids.values()) == list(range(len(postings.ids)))
    postings.add(len(sets), ["w0", "new"])  # a write after the build: a known and a new item
    assert postings.items_of_rows(len(sets) + 1)[-1] == {"w0", "new"}


@pytest.mark.parametrize("chunk_rows", [1, 7, 1024])
def test_postings_of_runs_are_the_word_sets(monkeypatch, chunk_rows):
    # Repeated runs are filed once per row; short runs and stopwords under no row.
    monkeypatch.setattr(_vectorized, "_CHUNK_ROWS", chunk_rows)
    rng = random.Random(chunk_rows)
    vocabulary = ["the", "and", "db", "x", "deploy", "Deploy", "cache", "é", "naïve", "v2",
                  "pool-split", "\u0130stanbul", "\u212a", "ok", "of", "retry", "2026",
                  "\x00", "\u0131i"]
    texts = [" ".join(rng.choice(vocabulary) for _ in range(rng.randrange(0, 12)))
             for _ in range(60)]
    postings = _vectorized._Postings.build(_word_runs(texts), len(texts), _NOT_WORDS)
    assert postings.items_of_rows(len(texts)) == [set(words) for words in _word_sets(texts)]
    # each item's rows ascending, a row once: a query counts each shared word once
    assert all((np.diff(postings.rows[start:end]) > 0).all()
               for start, end in zip(postings.offsets[:-1], postings.offsets[1:]))
    for item in _NOT_WORDS & set(postings.ids):  # known, but filed under no row
        k = postings.ids[item]
        assert postings.offsets[k] == postings.offsets[k + 1]


def test_postings_of_no_rows_are_empty():
    postings = _vectorized._Postings.build([], 0)
    assert postings.items_of_rows(0) == [] and not postings.ids
