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
    ids = _vectorized._Postings.vocabulary()
    postings = _vectorized._Postings.build(iter(sets), len(sets), ids)
    assert postings.items_of_rows(len(sets)) == [set(items) for items in sets]
    assert sorted(ids.values()) == list(range(len(ids)))
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
    ids = _vectorized._Postings.vocabulary(sorted(_NOT_WORDS))
    postings = _vectorized._Postings.build(_word_runs(texts), len(texts), ids, len(_NOT_WORDS))
    assert postings.items_of_rows(len(texts)) == [set(words) for words in _word_sets(texts)]
    # each item's rows ascending, a row once: a query counts each shared word once
    assert all((np.diff(postings.rows[start:end]) > 0).all()
               for start, end in zip(postings.offsets[:-1], postings.offsets[1:]))
    assert not (_NOT_WORDS & {item for k, item in enumerate(ids) if k in postings.items})


def test_partitions_share_one_vocabulary_and_keep_their_own_rows():
    # Two blocks filed with one vocabulary: an id one block holds and the other does not
    # reads no rows there; a word added to one after the build is found in that one only.
    ids = _vectorized._Postings.vocabulary()
    first = _vectorized._Postings.build([{"a", "b"}, {"b"}], 2, ids)
    second = _vectorized._Postings.build([{"c"}, {"b", "c"}, set()], 3, ids)
    assert sorted(ids.values()) == [0, 1, 2] and len(ids) == 3
    assert first.items_of_rows(2) == [{"a", "b"}, {"b"}]
    assert second.items_of_rows(3) == [{"c"}, {"b", "c"}, set()]
    counts = np.zeros(3, np.int64)
    second.count_into(counts, ["a", "b", "c", "unknown"])
    assert counts.tolist() == [1, 2, 0]
    first.add(2, ["c", "d"])
    counts = np.zeros(3, np.int64)
    first.count_into(counts, ["c", "d", "a"])
    assert counts.tolist() == [1, 0, 2]
    counts = np.zeros(3, np.int64)
    second.count_into(counts, ["d"])
    assert counts.tolist() == [0, 0, 0]


@pytest.mark.parametrize("held", [["a", "c"], ["c", "d"], ["a", "b", "d"], ["d"]])
def test_a_block_reads_only_the_ids_it_holds(held):
    # Blocks holding a run of ids (read by offset) and blocks with gaps (searched):
    # every query item counts its own rows, and an item the block lacks counts none.
    ids = _vectorized._Postings.vocabulary()
    _vectorized._Postings.build([{"a", "b", "c", "d"}], 1, ids)  # ids a0 b1 c2 d3
    block = _vectorized._Postings.build([{item} for item in held], len(held), ids)
    for item in "abcde":
        counts = np.zeros(len(held), np.int64)
        block.count_into(counts, [item])
        assert counts.tolist() == [int(h == item) for h in held], item


def test_postings_of_no_rows_are_empty():
    postings = _vectorized._Postings.build([], 0, _vectorized._Postings.vocabulary())
    assert postings.items_of_rows(0) == [] and not postings.ids and not len(postings.items)
