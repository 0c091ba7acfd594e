"""The scorer factory: default options are the default scorer, the Unicode reader boosts.

Differentials: with a factory scorer, the prepared store's walk, the stateless
functions and the literal reference (calling the scorer entry by entry) agree,
on random stores of mixed-script text.
"""

from __future__ import annotations

import copy
import random
from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from poolsplit_core.multilingual import unicode_words
from poolsplit_core.poolsplit import (
    ConfiguredScorer,
    Pool,
    default_scorer,
    explain_pools,
    make_scorer,
    retrieve_pools,
)
from poolsplit_core.prepared import PreparedStore
from tests.core import strategies as s
from tests.core.multilingual_fixtures import FIXTURES
from tests.reference import ref_default_scorer, ref_retrieve_pools

# Every test of this module runs once per engine of PreparedStore (tests/core/conftest.py).
pytestmark = pytest.mark.usefixtures("each_engine")

NOW = datetime(2026, 11, 1, tzinfo=timezone.utc)
UNICODE = make_scorer(words=unicode_words)


def fixture_store(lang):
    f = FIXTURES[lang]
    texts = [*f["others"], f["match"], *f["others"]]
    return [{"id": f"{lang}-{n}", "type": "note", "content": text, "created": "2026-10-01"}
            for n, text in enumerate(texts)]


@pytest.mark.parametrize("lang", sorted(FIXTURES))
def test_a_message_in_each_language_boosts_its_matching_entry(lang):
    store = fixture_store(lang)
    context = {"message": FIXTURES[lang]["message"]}
    match = next(e for e in store if e["content"] == FIXTURES[lang]["match"])
    plain = default_scorer(match, {}, now=NOW)
    boosted = UNICODE(match, context, now=NOW)
    assert boosted > plain * 1.2  # the message factor applies
    for other in store:
        if other is not match:
            assert UNICODE(other, context, now=NOW) == plain  # no shared word, no boost
    got = retrieve_pools(store, [Pool("one", 1000, 1)], context, scorer=UNICODE, now=NOW)
    assert got["one"] == [match]
    prepared = PreparedStore(store, scorer=UNICODE)
    assert prepared.retrieve_pools([Pool("one", 1000, 1)], context, now=NOW)["one"] == [match]


@pytest.mark.parametrize("lang", ["zh", "ja", "ko", "ru", "hi"])
def test_the_default_reader_never_boosts_these_languages(lang):
    # What the opt-in fixes: without it the message factor never applies.
    store = fixture_store(lang)
    context = {"message": FIXTURES[lang]["message"]}
    scores = {default_scorer(e, context, now=NOW) for e in store}
    assert scores == {default_scorer(store[0], {}, now=NOW)}


def test_make_scorer_without_options_scores_exactly_as_the_default():
    rng = random.Random(7)
    plain = make_scorer()
    assert plain == ConfiguredScorer() and plain != UNICODE
    assert repr(plain) == "ConfiguredScorer()"
    assert repr(UNICODE) == "ConfiguredScorer(words='unicode')"
    entries = [{"content": " ".join(rng.choices(s.VOCAB, k=6)), "tags": ["db"],
                         "base_priority": rng.randint(1, 9), "project": rng.choice(s.PROJECTS),
                         "created": (NOW - timedelta(days=rng.randint(0, 200))).isoformat()}
                        for _ in range(150)]
    for entry in entries:
        context = {"message": " ".join(rng.choices(s.VOCAB, k=4)), "tags": ["db"],
                   "project": rng.choice(s.PROJECTS)}
        assert plain(entry, context, now=NOW) == default_scorer(entry, context, now=NOW)
        assert plain(entry, context, now=NOW) == ref_default_scorer(entry, context, now=NOW)


def test_options_round_trip_as_data_and_custom_readers_do_not():
    assert make_scorer(**UNICODE.to_data()) == UNICODE
    assert make_scorer(**make_scorer().to_data()) == make_scorer()
    assert make_scorer(words="ascii") == make_scorer()
    with pytest.raises(TypeError, match="custom word reader"):
        make_scorer(words=lambda text: set(text.split())).to_data()
    with pytest.raises(ValueError, match="'ascii', 'unicode'"):
        make_scorer(words="klingon")
    with pytest.raises(TypeError, match="word reader"):
        make_scorer(words=3)
    with pytest.raises(TypeError):
        make_scorer("unicode")  # options are keyword-only


@pytest.mark.parametrize("bad", [["a", "b"], "ab", {"a": 1}, {1, 2}, None])
def test_a_word_reader_returning_anything_but_a_set_of_str_is_refused_naming_the_entry(bad):
    # The message reads well; the entry "m-7" does not.
    scorer = make_scorer(words=lambda text: {"x"} if text == "x" else bad)
    store = [{"id": "m-7", "content": "数据"}]
    with pytest.raises(TypeError, match=r"entry id='m-7': the word reader must return a set"):
        retrieve_pools(store, [Pool("p", 100, 5)], {"message": "x"}, scorer=scorer)
    for engine in ("python", "numpy"):  # each engine's build names it too
        with pytest.raises(TypeError,
                           match=r"entry id='m-7': the word reader must return a set"):
            PreparedStore(store, scorer=scorer, engine=engine)
    # by its position in the store when it has no id
    with pytest.raises(TypeError, match=r"entry at index 1: the word reader must return a set"):
        PreparedStore([{"content": "x"}, {"content": "数据"}], scorer=scorer, engine="python")
    with pytest.raises(TypeError, match=r"context\['message'\]: the word reader"):
        scorer({"id": "a"}, {"message": "y"})


def test_a_token_counter_returning_a_float_is_refused_naming_the_entry_and_zero_costs_one():
    store = [{"id": "n-1", "content": "数据库"}]
    with pytest.raises(TypeError, match=r"entry id='n-1': token_counter must return an int"):
        retrieve_pools(store, [Pool("p", 100, 5)], token_counter=lambda text: 1.5)
    with pytest.raises(TypeError, match=r"entry id='n-1': token_counter must return an int"):
        PreparedStore(store, token_counter=lambda text: 1.5)
    # A counter's 0 is taken as 1, as the specification says: no entry is free.
    got = explain_pools(store, [Pool("p", 100, 5)], token_counter=lambda text: 0)
    assert got.decisions[0].cost == 1


def test_a_store_prepared_with_one_reader_answers_a_query_with_another_statelessly():
    rng = random.Random(3)
    store = [mixed_entry(rng, n) for n in range(120)]
    prepared = PreparedStore(store, scorer=UNICODE)
    for _ in range(20):
        context = mixed_context(rng)
        pools = [Pool("a", rng.randint(0, 60), rng.randint(0, 4), ("task", "note")),
                 Pool("b", rng.randint(0, 80), rng.randint(0, 5))]
        for scorer in (default_scorer, make_scorer(), UNICODE):
            want = retrieve_pools(store, pools, context, scorer=scorer, now=NOW)
            got = prepared.retrieve_pools(pools, context, scorer=scorer, now=NOW)
            assert {k: [id(e) for e in v] for k, v in got.items()} == {
                k: [id(e) for e in v] for k, v in want.items()}
        # scorer=None is the store's own
        assert prepared.retrieve_pools(pools, context, now=NOW) == retrieve_pools(
            store, pools, context, scorer=UNICODE, now=NOW)


# --------------------------------------------------------------------------
# Differentials on mixed-script stores
# --------------------------------------------------------------------------

MIXED_VOCAB = ("数据库", "迁移", "备份", "服务器", "東京", "会議", "회의", "자료", "миграцию",
               "базы", "café", "gare", "Straße", "PRÜFUNG", "डेटाबेस", "बैकअप", "deploy",
               "release", "GitHub", "ｶﾀｶﾅ", "数据", "会议", "备份数据")
TYPES = ("task", "note", "skill", "fact")


def mixed_entry(rng, n):
    entry = {
        "id": f"e{n % 37}",  # ids repeat: ties fall to created, then id, then index
        "type": rng.choice(TYPES),
        "content": rng.choice(("", " ", "，")).join(rng.choices(MIXED_VOCAB, k=rng.randint(0, 5))),
        "base_priority": rng.choice((1, 3, 5, 5, 7, 9)),
        "created": (NOW - timedelta(days=rng.choice((0, 1, 10, 30, 30, 120)))).strftime(
            "%Y-%m-%dT%H:%M:%SZ"),
    }
    if rng.random() < 0.4:
        entry["project"] = rng.choice(("atlas", "harbor"))
    if rng.random() < 0.3:
        entry["tags"] = rng.sample(("db", "ops", "备份"), rng.randint(1, 2))
    if rng.random() < 0.1:
        entry["scope"] = "always"
    if rng.random() < 0.1:
        entry["status"] = "retired"
    return entry


def mixed_context(rng):
    return {"message": " ".join(rng.choices(MIXED_VOCAB, k=rng.randint(0, 4))),
            "project": rng.choice((None, "atlas", "harbor")),
            "tags": rng.sample(("db", "ops", "备份"), rng.randint(0, 2))}


def mixed_pools(rng):
    return [Pool("work", rng.randint(0, 80), rng.randint(0, 6), ("task", "fact")),
            Pool("rest", rng.randint(0, 120), rng.randint(0, 8))]


def ids(result):
    return {name: [id(e) for e in picked] for name, picked in result.items()}


@pytest.mark.parametrize("seed", range(8))
def test_prepared_walk_equals_stateless_and_reference_with_the_unicode_reader(seed):
    rng = random.Random(seed)
    store = [mixed_entry(rng, n) for n in range(rng.randint(40, 200))]
    before = copy.deepcopy(store)
    prepared = PreparedStore(store[:30], scorer=UNICODE)
    for entry in store[30:]:
        prepared.add(entry)
    for _ in range(15):
        context, pools = mixed_context(rng), mixed_pools(rng)
        now = NOW + timedelta(hours=rng.randint(0, 2000))
        want = ref_retrieve_pools(store, pools, context, scorer=UNICODE, now=now)
        assert ids(retrieve_pools(store, pools, context, scorer=UNICODE, now=now)) == ids(want)
        assert ids(prepared.retrieve_pools(pools, context, now=now)) == ids(want)
        loaded = prepared.explain_pools(pools, context, now=now).loaded()
        assert {k: [id(d.entry) for d in v] for k, v in loaded.items()} == ids(want)
    assert store == before


def test_the_walk_is_taken_with_the_unicode_reader(monkeypatch):
    # The prepared store answers from its index, not by falling back.
    import poolsplit_core.poolsplit as core

    rng = random.Random(11)
    store = [mixed_entry(rng, n) for n in range(100)]
    prepared = PreparedStore(store, scorer=UNICODE)
    calls = []
    monkeypatch.setattr(core, "explain_pools", lambda *a, **k: calls.append(1))
    prepared.retrieve_pools(mixed_pools(rng), mixed_context(rng), now=NOW)
    assert calls == []


@given(store=st.lists(st.builds(mixed_entry, st.randoms(use_true_random=False),
                                st.integers(0, 40)), max_size=25),
       seed=st.integers(0, 10**6), split=st.integers(0, 25))
def test_prepared_built_in_parts_equals_the_reference_with_the_unicode_reader(store, seed, split):
    rng = random.Random(seed)
    prepared = PreparedStore(store[:split], scorer=UNICODE)
    for entry in store[split:]:
        prepared.add(entry)
    context, pools = mixed_context(rng), mixed_pools(rng)
    want = ref_retrieve_pools(store, pools, context, scorer=UNICODE, now=NOW)
    assert ids(prepared.retrieve_pools(pools, context, now=NOW)) == ids(want)


@pytest.mark.parametrize("seed", range(4))
def test_upserts_and_deletes_are_read_with_the_stores_reader(seed):
    rng = random.Random(100 + seed)
    store = [{**mixed_entry(rng, n), "id": f"u{n}"} for n in range(120)]
    prepared = PreparedStore(store, scorer=UNICODE)
    live = list(store)
    for step in range(60):
        at = rng.randrange(len(live))
        if step % 3 == 2:
            prepared.delete(live.pop(at)["id"])
        else:
            live[at] = {**mixed_entry(rng, step), "id": live[at]["id"]}
            prepared.upsert(live[at])
        context, pools = mixed_context(rng), mixed_pools(rng)
        want = ref_retrieve_pools(live, pools, context, scorer=UNICODE, now=NOW)
        assert ids(prepared.retrieve_pools(pools, context, now=NOW)) == ids(want)
