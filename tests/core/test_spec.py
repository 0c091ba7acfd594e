"""One test per rule of the user guide and per bad input of the core's contract.

The rules are those of ``docs/guide/core.md`` (the API table and "The default
scorer, exactly"), ``docs/guide/entries.md`` and ``docs/guide/bad-input.md``. Expected
scores are computed by hand from that formula; the arithmetic is written out
next to each value.
"""

from __future__ import annotations

import copy
import dataclasses
import re
from datetime import datetime, timedelta, timezone

import pytest

from poolsplit_core.poolsplit import (
    OUTCOMES,
    Pool,
    default_is_active,
    default_scorer,
    default_token_counter,
    explain_pools,
    make_scorer,
    retrieve,
    retrieve_pools,
)
from poolsplit_core.prepared import PreparedStore

# Every test of this module runs once per engine of PreparedStore (tests/core/conftest.py).
pytestmark = pytest.mark.usefixtures("each_engine")

NOW = datetime(2026, 4, 1, tzinfo=timezone.utc)
EVERYTHING = Pool("all", max_tokens=10_000, max_entries=100)


def ago(days: float) -> str:
    return (NOW - timedelta(days=days)).isoformat().replace("+00:00", "Z")


def ids(entries):
    return [e["id"] for e in entries]


def score(entry, context=None):
    return default_scorer(entry, context, now=NOW)


def constant(entry, context):
    return 1.0


# --------------------------------------------------------------------------
# Pool: a reserved budget
# --------------------------------------------------------------------------


def test_pool_is_a_frozen_dataclass_with_the_spec_fields():
    pool = Pool("skills", max_tokens=400, max_entries=3, types=("skill",))
    assert [f.name for f in dataclasses.fields(Pool)] == [
        "name", "max_tokens", "max_entries", "types"]
    assert (pool.name, pool.max_tokens, pool.max_entries, pool.types) == (
        "skills", 400, 3, ("skill",))
    with pytest.raises(dataclasses.FrozenInstanceError):
        pool.max_tokens = 1  # type: ignore[misc]


def test_pool_types_default_to_none_which_accepts_every_type():
    store = [{"id": "a", "type": "skill"}, {"id": "b", "type": "growth"}, {"id": "c"}]
    assert Pool("p", 10, 5).types is None
    assert ids(retrieve(store, Pool("p", 10, 5), now=NOW)) == ["a", "b", "c"]


@pytest.mark.parametrize("field", ["max_tokens", "max_entries"])
def test_pool_negative_limit_is_a_value_error_stating_the_value(field):
    kwargs = {"max_tokens": 10, "max_entries": 2, field: -3}
    with pytest.raises(ValueError, match=rf"{field} must be >= 0, got -3"):
        Pool("p", **kwargs)


@pytest.mark.parametrize("field", ["max_tokens", "max_entries"])
@pytest.mark.parametrize("bad", [True, False, 2.0, "3", None])
def test_pool_non_int_or_bool_limit_is_a_type_error(field, bad):
    kwargs = {"max_tokens": 10, "max_entries": 2, field: bad}
    with pytest.raises(TypeError, match=field):
        Pool("p", **kwargs)


def test_pool_zero_limits_are_allowed():
    pool = Pool("p", max_tokens=0, max_entries=0)
    assert (pool.max_tokens, pool.max_entries) == (0, 0)


def test_pool_types_as_bare_string_is_a_type_error_with_a_hint():
    with pytest.raises(TypeError, match=r"types=\('skill',\)"):
        Pool("p", 10, 2, types="skill")  # type: ignore[arg-type]


def test_pool_types_as_list_is_stored_as_a_tuple_and_the_pool_stays_hashable():
    pool = Pool("p", 10, 2, types=["skill", "task"])  # type: ignore[arg-type]
    assert pool.types == ("skill", "task")
    assert hash(pool) == hash(Pool("p", 10, 2, types=("skill", "task")))
    assert pool == Pool("p", 10, 2, types=("skill", "task"))


def test_pool_types_as_set_is_stored_as_a_sorted_tuple():
    pool = Pool("p", 10, 2, types={"task", "skill", "growth"})  # type: ignore[arg-type]
    assert pool.types == ("growth", "skill", "task")
    assert {pool: 1}[Pool("p", 10, 2, types=frozenset({"skill", "growth", "task"}))] == 1


def test_pool_types_holding_a_non_str_is_a_type_error():
    with pytest.raises(TypeError, match="every type must be a str"):
        Pool("p", 10, 2, types=("skill", 3))  # type: ignore[arg-type]


def test_pool_types_not_iterable_is_a_type_error():
    with pytest.raises(TypeError, match="types"):
        Pool("p", 10, 2, types=5)  # type: ignore[arg-type]


def test_pool_empty_name_is_a_value_error():
    with pytest.raises(ValueError, match="name"):
        Pool("", 10, 2)


@pytest.mark.parametrize("bad", [None, 3, b"bytes"])
def test_pool_non_str_name_is_a_type_error(bad):
    with pytest.raises(TypeError, match="name must be a str"):
        Pool(bad, 10, 2)  # type: ignore[arg-type]


def test_pools_fill_independently_so_a_high_priority_type_cannot_starve_another():
    store = [{"id": f"t{i}", "type": "task", "base_priority": 10, "content": "x" * 40}
             for i in range(5)]
    store.append({"id": "g", "type": "growth", "base_priority": 1, "content": "x" * 40})
    single = retrieve(store, Pool("one", max_tokens=30, max_entries=10), now=NOW)
    assert "g" not in ids(single)
    split = retrieve_pools(store, [Pool("tasks", 30, 10, types=("task",)),
                                   Pool("growth", 10, 10, types=("growth",))], now=NOW)
    assert ids(split["tasks"]) == ["t0", "t1", "t2"]
    assert ids(split["growth"]) == ["g"]


# --------------------------------------------------------------------------
# Defaults: counter and activity test
# --------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "tokens"), [
    ("", 1), ("abc", 1), ("abcd", 1), ("abcdefg", 1), ("abcdefgh", 2), ("x" * 401, 100)])
def test_default_token_counter_is_a_quarter_of_the_length_and_never_zero(text, tokens):
    assert default_token_counter(text) == tokens


@pytest.mark.parametrize(("entry", "active"), [
    ({}, True),
    ({"status": "active"}, True),
    ({"status": "retired"}, False),
    ({"status": "Active"}, False),
    ({"status": None}, False),
    ({"superseded_by": "m-2"}, False),
    ({"superseded_by": None}, True),
    ({"superseded_by": ""}, True),
    ({"superseded_by": False}, True),
    ({"status": "active", "superseded_by": "m-2"}, False),
    ({"status": "retired", "superseded_by": None}, False),
])
def test_default_is_active_needs_status_active_and_no_truthy_superseded_by(entry, active):
    assert default_is_active(entry) is active


def test_inactive_entries_are_never_returned_not_even_always_scope():
    store = [{"id": "old", "status": "retired"}, {"id": "gone", "superseded_by": "new"},
             {"id": "fix", "scope": "always", "status": "retired"}, {"id": "new"}]
    assert ids(retrieve(store, EVERYTHING, now=NOW)) == ["new"]


def test_custom_is_active_replaces_the_default():
    store = [{"id": "a", "status": "retired"}, {"id": "b"}]
    got = retrieve(store, EVERYTHING, is_active=lambda e: e["id"] == "a", now=NOW)
    assert ids(got) == ["a"]


def test_entry_without_type_has_the_type_note():
    store = [{"id": "untyped"}, {"id": "task", "type": "task"}]
    assert ids(retrieve(store, Pool("notes", 100, 5, types=("note",)), now=NOW)) == ["untyped"]
    assert ids(retrieve(store, Pool("tasks", 100, 5, types=("task",)), now=NOW)) == ["task"]


# --------------------------------------------------------------------------
# The default scorer, exactly
# --------------------------------------------------------------------------


def test_default_scorer_of_an_empty_entry_is_the_default_base_priority():
    assert score({}) == 5.0
    assert score({}, {}) == 5.0


def test_default_scorer_base_priority_goes_through_float():
    assert score({"base_priority": 7}) == 7.0
    assert score({"base_priority": "2.5"}) == 2.5
    assert score({"base_priority": 0}) == 0.0
    assert score({"base_priority": -2}) == -2.0


def test_default_scorer_recency_is_linear_over_90_days():
    # 45 days: 1 - 0.7 * 45 / 90 = 0.65 -> 6 * 0.65 = 3.9
    assert score({"base_priority": 6, "created": ago(45)}) == pytest.approx(3.9, abs=1e-9)
    # 30 days: 1 - 0.7 / 3 = 0.7666... -> 5 * 23/30 = 3.8333...
    assert score({"created": ago(30)}) == pytest.approx(23 / 6, abs=1e-9)


def test_default_scorer_recency_counts_fractional_days():
    # 12 hours = 0.5 days: 5 * (1 - 0.35 / 90) = 4.980555...
    assert score({"created": "2026-03-31T12:00:00Z"}) == pytest.approx(
        5 - 1.75 / 90, abs=1e-9)


def test_default_scorer_recency_floor_is_0_3():
    assert score({"created": ago(90)}) == pytest.approx(1.5, abs=1e-9)
    assert score({"created": ago(200)}) == pytest.approx(1.5, abs=1e-9)
    assert score({"created": "1999-01-01"}) == pytest.approx(1.5, abs=1e-9)
    # 81 days is just above the floor: 1 - 0.7 * 0.9 = 0.37
    assert score({"created": ago(81)}) == pytest.approx(1.85, abs=1e-9)


def test_default_scorer_future_timestamp_counts_as_zero_days():
    assert score({"created": "2026-04-02T00:00:00Z"}) == 5.0
    assert score({"created": "2999-01-01"}) == 5.0


@pytest.mark.parametrize("created", [None, "", "yesterday", "2026-02-30", "2026-13-01",
                                     "2026-04-01T25:00", "2026/01/01", 20260101, ["2026"],
                                     "2025-01-01T00:00:60Z", "2025-01-01T00:00:00+24:00",
                                     "\u0662\u0660\u0662\u0665-\u0660\u0661-\u0660\u0661",
                                     "\uff12\uff10\uff12\uff15-01-01"])
def test_default_scorer_missing_or_unparseable_created_counts_as_zero_days(created):
    assert score({"created": created}) == 5.0


@pytest.mark.parametrize("created", [None, "yesterday", "2026-02-30", 20260101, ["2026"],
                                     ago(30), datetime(2026, 3, 2)])
def test_a_call_scores_created_as_the_scorer_does_on_every_call(created):
    # The stateless path keeps the times it reads, by text, for the next call:
    # the second call must read them as the first did (and a list, not a text, too).
    entries = [{"id": "e", "created": created, "content": "deploy"}]
    want = score(entries[0], {"message": "deploy"})
    for _ in range(2):
        decided = explain_pools(entries, [EVERYTHING], {"message": "deploy"}, now=NOW)
        assert [d.score for d in decided.loaded()["all"]] == [want]


def test_default_scorer_honours_utc_offsets():
    # 2026-03-31T20:00-04:00 is 2026-04-01T00:00Z: 0 days.
    assert score({"created": "2026-03-31T20:00:00-04:00"}) == 5.0
    # 2026-04-01T00:00+12:00 is 2026-03-31T12:00Z: half a day.
    assert score({"created": "2026-04-01T00:00:00+12:00"}) == pytest.approx(
        5 - 1.75 / 90, abs=1e-9)
    # compact offset forms
    assert score({"created": "2026-04-01T00:00:00+1200"}) == pytest.approx(
        5 - 1.75 / 90, abs=1e-9)
    assert score({"created": "2026-04-01T00:00:00+12"}) == pytest.approx(
        5 - 1.75 / 90, abs=1e-9)


def test_default_scorer_takes_a_naive_timestamp_as_utc():
    assert score({"created": "2026-03-02T00:00:00"}) == pytest.approx(23 / 6, abs=1e-9)
    assert score({"created": "2026-03-02"}) == pytest.approx(23 / 6, abs=1e-9)
    assert score({"created": "2026-03-02 00:00:00.000000z"}) == pytest.approx(23 / 6, abs=1e-9)


def test_default_scorer_reads_datetime_created_directly():
    aware = datetime(2026, 3, 2, 5, 30, tzinfo=timezone(timedelta(hours=5, minutes=30)))
    naive = datetime(2026, 3, 2)
    assert score({"created": aware}) == pytest.approx(23 / 6, abs=1e-9)
    assert score({"created": naive}) == pytest.approx(23 / 6, abs=1e-9)


def test_default_scorer_takes_a_naive_now_as_utc():
    entry = {"created": "2026-03-02T00:00:00Z"}
    naive_now = datetime(2026, 4, 1)
    assert default_scorer(entry, None, now=naive_now) == pytest.approx(23 / 6, abs=1e-9)


def test_default_scorer_now_none_means_the_current_utc_time():
    entry = {"created": datetime.now(timezone.utc) - timedelta(days=45)}
    assert default_scorer(entry) == pytest.approx(3.25, abs=1e-6)


def test_default_scorer_tag_overlap_is_the_shared_share_of_the_entry_tags():
    entry = {"tags": ["db", "ops", "net", "x"]}
    # 1 + 0.5 * 2 / 4 = 1.25
    assert score(entry, {"tags": ["db", "ops", "other"]}) == pytest.approx(6.25, abs=1e-9)
    # tags are compared as sets: duplicates count once -> 1 + 0.5 * 1 / 2
    assert score({"tags": ["db", "db", "ops"]}, {"tags": ("db",)}) == pytest.approx(
        6.25, abs=1e-9)
    # entry tags without any shared one: 1 + 0 = 1
    assert score(entry, {"tags": ["zzz"]}) == 5.0
    assert score(entry) == 5.0


def test_default_scorer_skips_the_tag_factor_when_the_entry_has_no_tags():
    assert score({"tags": []}, {"tags": ["db"]}) == 5.0
    assert score({"tags": None}, {"tags": ["db"]}) == 5.0


def test_default_scorer_entry_tags_as_a_bare_string_are_one_tag():
    # one tag "db", all shared: 1 + 0.5 = 1.5
    assert score({"tags": "db"}, {"tags": ["db"]}) == pytest.approx(7.5, abs=1e-9)
    # not the letters d and b
    assert score({"tags": "db"}, {"tags": ["d", "b"]}) == 5.0


def test_default_scorer_context_tags_as_a_bare_string_are_one_tag():
    assert score({"tags": ["db"]}, {"tags": "db"}) == pytest.approx(7.5, abs=1e-9)
    assert score({"tags": ["d", "b"]}, {"tags": "db"}) == 5.0


def test_default_scorer_project_factor():
    assert score({"project": None}, {"project": "atlas"}) == 5.0
    assert score({}, {"project": "atlas"}) == 5.0
    assert score({"project": "atlas"}, {"project": "atlas"}) == 7.5
    assert score({"project": "atlas"}, {"project": "zeus"}) == 2.5
    assert score({"project": "atlas"}, {}) == 2.5
    assert score({"project": "atlas"}) == 2.5


def test_default_scorer_message_overlap_above_threshold_boosts():
    entry = {"content": "Rotate the database"}
    # W(message) = {rotate, database, credentials, quickly}; shared 2 -> 0.5
    # -> 1 + 1.5 * 0.5 = 1.75
    ctx = {"message": "rotate database credentials quickly"}
    assert score(entry, ctx) == pytest.approx(8.75, abs=1e-9)
    # 1 of 6 words = 0.1666 > 0.15 -> 1 + 0.25 = 1.25
    ctx = {"message": "rotate alpha bravo charlie delta echo"}
    assert score(entry, ctx) == pytest.approx(6.25, abs=1e-9)


def test_default_scorer_message_overlap_at_or_below_threshold_does_nothing():
    entry = {"content": "rotate database credentials"}
    # 1 of 7 = 0.142 < 0.15
    ctx = {"message": "rotate alpha bravo charlie delta echo foxtrot"}
    assert score(entry, ctx) == 5.0
    # 3 of 20 = 0.15 exactly: not above the threshold
    filler = " ".join(f"word{i}" for i in range(17))
    ctx = {"message": "rotate database credentials " + filler}
    assert score(entry, ctx) == 5.0


def test_default_scorer_message_words_drop_stopwords_and_short_runs():
    # W("the and with rotate db is ok") = {rotate}: overlap 1 -> 1 + 1.5 = 2.5
    ctx = {"message": "the and with rotate db is ok"}
    assert score({"content": "Rotate"}, ctx) == pytest.approx(12.5, abs=1e-9)
    # the content's stopwords and short runs do not count either
    assert score({"content": "the and with db is ok"}, ctx) == 5.0
    # a message made only of stopwords and short words adds no factor
    assert score({"content": "the db"}, {"message": "the and db"}) == 5.0


def test_default_scorer_words_are_lowercase_alphanumeric_runs():
    # "Force-Push v2026!" -> {force, push, v2026}
    ctx = {"message": "force push v2026"}
    assert score({"content": "Never FORCE-push to main (v2026)!"}, ctx) == pytest.approx(
        12.5, abs=1e-9)


def test_default_scorer_empty_or_missing_message_adds_no_factor():
    entry = {"content": "rotate"}
    assert score(entry, {"message": ""}) == 5.0
    assert score(entry, {"message": None}) == 5.0
    assert score(entry, {}) == 5.0


def test_default_scorer_content_none_is_empty_and_non_str_content_is_str():
    assert score({"content": None}, {"message": "rotate"}) == 5.0
    assert score({}, {"message": "rotate"}) == 5.0
    # str(12345) = "12345": full overlap -> 2.5
    assert score({"content": 12345}, {"message": "12345"}) == pytest.approx(12.5, abs=1e-9)


def test_default_scorer_multiplies_all_factors():
    now = NOW
    entry = {"base_priority": 6, "created": "2026-01-01T00:00:00Z", "project": "atlas",
             "tags": ["db", "ops"], "content": "Rotate the database credentials"}
    ctx = {"project": "atlas", "tags": ["db"], "message": "rotate credentials"}
    # 6 * 0.3 (90 days) * 1.25 * 1.5 * 2.5 = 8.4375
    assert default_scorer(entry, ctx, now=now) == pytest.approx(8.4375, abs=1e-9)
    entry = {"base_priority": 4, "created": ago(30), "project": "atlas", "tags": ["a", "b"],
             "content": "deploy"}
    ctx = {"project": "zeus", "tags": ["a"], "message": "deploy release"}
    # 4 * 23/30 * 1.25 * 0.5 * 1.75 = 3.3541666...
    assert score(entry, ctx) == pytest.approx(4 * 23 / 30 * 1.25 * 0.5 * 1.75, abs=1e-9)
    assert score(entry, ctx) == pytest.approx(3.354166666666667, abs=1e-9)


def test_default_scorer_has_no_frequency_term():
    base = {"content": "rotate"}
    counted = {"content": "rotate", "access_count": 1000, "hits": 99, "last_accessed": ago(0)}
    assert score(base, {"message": "rotate"}) == score(counted, {"message": "rotate"})


def test_default_scorer_base_priority_not_a_number_is_a_value_error_naming_the_entry():
    with pytest.raises(ValueError, match=r"id='bad'.*base_priority"):
        score({"id": "bad", "base_priority": "high"})


def test_default_scorer_entry_tags_not_iterable_is_a_type_error():
    with pytest.raises(TypeError, match="tags"):
        retrieve([{"id": "t", "tags": 5}], EVERYTHING, now=NOW)


def test_default_scorer_one_shot_iterator_tags_are_a_type_error_naming_the_entry():
    # A generator would be used up by the first call and silently differ on the next.
    with pytest.raises(TypeError, match=r"entry id='t'.*one-shot"):
        retrieve([{"id": "t", "tags": (tag for tag in ["db"])}], EVERYTHING, now=NOW)


def test_default_scorer_ranks_and_retrieve_follows_it():
    store = [{"id": "low", "base_priority": 1}, {"id": "mid", "base_priority": 5},
             {"id": "top", "content": "rotate keys"}]
    got = retrieve(store, EVERYTHING, {"message": "rotate"}, now=NOW)
    assert ids(got) == ["top", "mid", "low"]


# --------------------------------------------------------------------------
# retrieve: always-scope first
# --------------------------------------------------------------------------


def test_always_scope_bypasses_max_tokens():
    store = [{"id": "fix", "scope": "always", "content": "x" * 4000}]
    assert ids(retrieve(store, Pool("p", max_tokens=0, max_entries=5), now=NOW)) == ["fix"]


def test_always_scope_bypasses_max_entries():
    store = [{"id": f"fix{i}", "scope": "always"} for i in range(5)]
    assert len(retrieve(store, Pool("p", max_tokens=0, max_entries=0), now=NOW)) == 5


def test_always_scope_does_not_consume_the_budget():
    store = [{"id": "fix", "scope": "always", "content": "x" * 400},
             {"id": "a", "content": "x" * 40}, {"id": "b", "content": "x" * 40}]
    got = retrieve(store, Pool("p", max_tokens=20, max_entries=2), now=NOW)
    assert ids(got) == ["fix", "a", "b"]


def test_always_scope_loads_first_in_input_order_then_contextual_in_sorted_order():
    store = [{"id": "low", "base_priority": 1}, {"id": "fix2", "scope": "always",
                                                 "base_priority": 0},
             {"id": "high", "base_priority": 9}, {"id": "fix1", "scope": "always",
                                                  "base_priority": 9}]
    assert ids(retrieve(store, EVERYTHING, now=NOW)) == ["fix2", "fix1", "high", "low"]


def test_always_scope_still_passes_the_pool_type_filter():
    store = [{"id": "fix", "type": "correction", "scope": "always"}, {"id": "s", "type": "skill"}]
    assert ids(retrieve(store, Pool("p", 10, 5, types=("skill",)), now=NOW)) == ["s"]


def test_always_scope_is_never_crowded_out_by_fresh_high_scoring_content():
    fix = {"id": "fix", "scope": "always", "content": "old rule", "created": "2020-01-01"}
    burst = [{"id": f"n{i}", "base_priority": 100, "created": NOW.isoformat(),
              "content": "deploy now deploy " * 50} for i in range(200)]
    got = retrieve([*burst, fix], Pool("p", max_tokens=50, max_entries=1),
                   {"message": "deploy"}, now=NOW)
    assert got[0] is fix
    assert len(got) == 1  # the burst entries cost more than 50 tokens each


def test_only_scope_always_is_always_scope():
    store = [{"id": "a", "scope": "Always"}, {"id": "b", "scope": "session"}]
    assert retrieve(store, Pool("p", 0, 0), now=NOW) == []


# --------------------------------------------------------------------------
# retrieve: deterministic order
# --------------------------------------------------------------------------


def test_sort_ties_break_on_created_ascending():
    store = [{"id": "x", "created": "2026-03-02"}, {"id": "y", "created": "2026-03-01"},
             {"id": "z"}]
    got = retrieve(store, EVERYTHING, scorer=constant, now=NOW)
    assert ids(got) == ["z", "y", "x"]  # missing created is "" and sorts first


def test_sort_ties_on_equal_default_scores_break_on_created():
    # both past the 90-day floor: equal scores, the older string sorts first
    store = [{"id": "a", "created": "2020-01-01"}, {"id": "b", "created": "2019-01-01"}]
    assert ids(retrieve(store, EVERYTHING, now=NOW)) == ["b", "a"]


def test_sort_ties_break_on_id_then_on_input_index():
    store = [{"id": "b", "n": 0}, {"id": "a", "n": 1}, {"n": 2}, {"id": "a", "n": 3}, {"n": 4}]
    got = retrieve(store, EVERYTHING, scorer=constant, now=NOW)
    assert [e["n"] for e in got] == [2, 4, 1, 3, 0]


def test_sort_key_uses_isoformat_for_datetime_created_so_mixed_stores_never_raise():
    dt = datetime(2020, 1, 1, tzinfo=timezone.utc)  # "2020-01-01T00:00:00+00:00"
    store = [{"id": "s", "created": "2020-01-01T00:00:00Z"}, {"id": "d", "created": dt},
             {"id": "n", "created": datetime(2019, 6, 1)}]
    got = retrieve(store, EVERYTHING, scorer=constant, now=NOW)
    assert ids(got) == ["n", "d", "s"]  # "2019-..." < "...+00:00" < "...Z"


def test_sort_key_uses_str_for_int_ids_so_mixed_ids_never_raise():
    store = [{"id": 9}, {"id": "9a"}, {"id": 10}, {"id": "1"}]
    got = retrieve(store, EVERYTHING, scorer=constant, now=NOW)
    assert ids(got) == ["1", 10, 9, "9a"]


def test_higher_score_comes_first_whatever_the_created_and_id():
    store = [{"id": "a", "created": "2020-01-01", "s": 1}, {"id": "z", "created": "2030", "s": 2}]
    got = retrieve(store, EVERYTHING, scorer=lambda e, c: e["s"], now=NOW)
    assert ids(got) == ["z", "a"]


# --------------------------------------------------------------------------
# retrieve: greedy fill and cost
# --------------------------------------------------------------------------


def test_greedy_fill_skips_what_does_not_fit_and_keeps_scanning():
    store = [{"id": "a", "base_priority": 9, "token_count": 8},
             {"id": "b", "base_priority": 8, "token_count": 5},
             {"id": "c", "base_priority": 7, "token_count": 2},
             {"id": "d", "base_priority": 6, "token_count": 1}]
    got = retrieve(store, Pool("p", max_tokens=10, max_entries=5), now=NOW)
    assert ids(got) == ["a", "c"]


def test_greedy_fill_stops_at_the_entry_cap_even_when_more_would_fit():
    store = [{"id": c, "base_priority": 9 - n, "token_count": 1} for n, c in enumerate("abcd")]
    got = retrieve(store, Pool("p", max_tokens=100, max_entries=2), now=NOW)
    assert ids(got) == ["a", "b"]


def test_zero_max_entries_loads_no_contextual_entry():
    assert retrieve([{"id": "a"}], Pool("p", max_tokens=100, max_entries=0), now=NOW) == []


def test_zero_max_tokens_loads_no_contextual_entry():
    assert retrieve([{"id": "a"}], Pool("p", max_tokens=0, max_entries=5), now=NOW) == []


def test_cost_is_token_count_when_it_is_a_positive_int():
    store = [{"id": "a", "content": "x" * 400, "token_count": 3}]
    assert ids(retrieve(store, Pool("p", max_tokens=3, max_entries=5), now=NOW)) == ["a"]
    assert retrieve(store, Pool("p", max_tokens=2, max_entries=5), now=NOW) == []


@pytest.mark.parametrize("count", [True, False, 0, -4, 3.0, "3", None, [3]])
def test_cost_ignores_a_token_count_that_is_not_a_positive_int(count):
    # content of 40 chars costs 10 by the counter; the bad count would cost <= 3
    store = [{"id": "a", "content": "x" * 40, "token_count": count}]
    assert retrieve(store, Pool("p", max_tokens=9, max_entries=5), now=NOW) == []
    assert ids(retrieve(store, Pool("p", max_tokens=10, max_entries=5), now=NOW)) == ["a"]


def test_cost_of_missing_content_is_never_zero():
    store = [{"id": "a"}, {"id": "b", "content": None}, {"id": "c", "content": ""}]
    assert len(retrieve(store, Pool("p", max_tokens=2, max_entries=5), now=NOW)) == 2


def test_cost_counts_str_of_the_content_with_the_token_counter():
    seen = []

    def counter(text):
        seen.append(text)
        return 1

    store = [{"id": "a", "content": 12345}, {"id": "b"}, {"id": "c", "content": "hi"}]
    retrieve(store, EVERYTHING, token_counter=counter, now=NOW)
    assert sorted(seen) == ["", "12345", "hi"]


@pytest.mark.parametrize("result", [0, -5])
def test_custom_counter_result_below_one_counts_as_one(result):
    store = [{"id": c} for c in "abc"]
    got = retrieve(store, Pool("p", max_tokens=2, max_entries=5),
                   token_counter=lambda text: result, now=NOW)
    assert len(got) == 2


@pytest.mark.parametrize("result", [1.0, None, True, "2"])
def test_custom_counter_non_int_result_is_a_type_error_naming_the_entry(result):
    with pytest.raises(TypeError, match=r"id='bad'.*token_counter"):
        retrieve([{"id": "bad"}], EVERYTHING, token_counter=lambda text: result, now=NOW)
    with pytest.raises(TypeError, match="index 1"):
        retrieve([{"token_count": 2}, {}], EVERYTHING, token_counter=lambda text: result,
                 now=NOW)


# --------------------------------------------------------------------------
# retrieve: scorers
# --------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), float("-inf"), "9", None, True,
                                 [1.0]])
def test_scorer_returning_nan_inf_or_non_number_is_a_value_error_naming_the_entry(bad):
    with pytest.raises(ValueError, match=r"id='bad'.*finite number"):
        retrieve([{"id": "bad"}], EVERYTHING, scorer=lambda e, c: bad, now=NOW)
    with pytest.raises(ValueError, match="index 1"):
        retrieve([{"id": "ok", "s": 1}, {"s": bad}], EVERYTHING,
                 scorer=lambda e, c: e["s"], now=NOW)


def test_scorer_may_return_ints_and_huge_ints():
    store = [{"id": "a", "s": 10**400}, {"id": "b", "s": 3}, {"id": "c", "s": 2.5}]
    got = retrieve(store, EVERYTHING, scorer=lambda e, c: e["s"], now=NOW)
    assert ids(got) == ["a", "b", "c"]


def test_scorer_receives_the_context_and_now_as_a_keyword():
    calls = []

    def scorer(entry, context, *, now):
        calls.append((entry, context, now))
        return 1.0

    entry, ctx = {"id": "a"}, {"message": "m"}
    retrieve([entry], EVERYTHING, ctx, scorer=scorer, now=NOW)
    assert calls == [(entry, ctx, NOW)]
    assert calls[0][0] is entry and calls[0][1] is ctx


def test_scorer_without_a_now_parameter_is_called_with_two_arguments():
    calls = []

    def scorer(entry, context):
        calls.append(context)
        return 1.0

    retrieve([{"id": "a"}], EVERYTHING, None, scorer=scorer, now=NOW)
    assert calls == [None]


def test_custom_scorer_orders_the_contextual_entries():
    store = [{"id": "a", "base_priority": 9}, {"id": "b", "base_priority": 1}]
    got = retrieve(store, EVERYTHING, scorer=lambda e, c: -e["base_priority"], now=NOW)
    assert ids(got) == ["b", "a"]


# --------------------------------------------------------------------------
# retrieve: identity, no mutation, bad input
# --------------------------------------------------------------------------


def test_retrieve_returns_the_same_dict_objects():
    store = [{"id": "fix", "scope": "always"}, {"id": "a"}]
    got = retrieve(store, EVERYTHING, now=NOW)
    assert got[0] is store[0] and got[1] is store[1]


def test_retrieve_never_mutates_the_entries_or_the_context():
    store = [{"id": "a", "tags": ["db"], "content": "rotate", "created": "2026-01-01"},
             {"id": "fix", "scope": "always", "meta": {"k": [1, 2]}}, {"id": "b"}]
    ctx = {"message": "rotate", "tags": ["db"], "project": "atlas"}
    before = copy.deepcopy((store, ctx))
    retrieve(store, Pool("p", 1, 1), ctx, now=NOW)
    assert (store, ctx) == before


def test_retrieve_accepts_any_iterable_of_entries():
    store = [{"id": "a"}, {"id": "b", "base_priority": 9}]
    assert ids(retrieve(iter(store), EVERYTHING, now=NOW)) == ["b", "a"]
    assert ids(retrieve(tuple(store), EVERYTHING, now=NOW)) == ["b", "a"]


def test_entry_not_a_mapping_is_a_type_error_with_its_index():
    with pytest.raises(TypeError, match="index 2"):
        retrieve([{"id": "a"}, {"id": "b"}, ["id", "c"]], EVERYTHING, now=NOW)
    with pytest.raises(TypeError, match="index 0"):
        retrieve_pools(["text"], [EVERYTHING], now=NOW)


@pytest.mark.parametrize("entries", [{"id": "a"}, "entries", 5, None])
def test_entries_not_an_iterable_of_mappings_is_a_type_error(entries):
    with pytest.raises(TypeError, match="entries"):
        retrieve(entries, EVERYTHING, now=NOW)


def test_pool_not_a_pool_is_a_type_error():
    with pytest.raises(TypeError, match="pool must be a Pool"):
        retrieve([{}], [EVERYTHING], now=NOW)  # type: ignore[arg-type]


@pytest.mark.parametrize("context", ["rotate", ["message"], 3])
def test_context_not_a_mapping_is_a_type_error(context):
    with pytest.raises(TypeError, match="context"):
        retrieve([{}], EVERYTHING, context, now=NOW)


@pytest.mark.parametrize("message", [["rotate"], 3, b"rotate"])
def test_context_message_not_a_str_is_a_type_error(message):
    with pytest.raises(TypeError, match="message"):
        retrieve([{}], EVERYTHING, {"message": message}, now=NOW)


def test_now_not_a_datetime_is_a_type_error():
    with pytest.raises(TypeError, match="now"):
        retrieve([{}], EVERYTHING, now="2026-01-01")  # type: ignore[arg-type]


@pytest.mark.parametrize("name", ["scorer", "token_counter", "is_active"])
def test_non_callable_function_argument_is_a_type_error(name):
    with pytest.raises(TypeError, match=name):
        retrieve([{}], EVERYTHING, now=NOW, **{name: 3})


def test_bad_input_is_refused_before_any_call_to_the_user_functions():
    calls = []

    def scorer(entry, context):
        calls.append(entry)
        return 1.0

    with pytest.raises(TypeError):
        retrieve([{"id": "a"}, 7], EVERYTHING, scorer=scorer, is_active=calls.append, now=NOW)
    assert calls == []


# --------------------------------------------------------------------------
# retrieve_pools
# --------------------------------------------------------------------------


def test_retrieve_pools_an_entry_taken_by_an_earlier_pool_is_invisible_to_later_ones():
    store = [{"id": "a", "type": "task"}, {"id": "b", "type": "note"}]
    got = retrieve_pools(store, [Pool("first", 100, 5), Pool("second", 100, 5)], now=NOW)
    assert ids(got["first"]) == ["a", "b"]
    assert got["second"] == []


def test_retrieve_pools_an_entry_left_out_by_an_earlier_pool_stays_available():
    store = [{"id": "big", "token_count": 50}, {"id": "small", "token_count": 1}]
    got = retrieve_pools(store, [Pool("first", 10, 5), Pool("second", 100, 5)], now=NOW)
    assert ids(got["first"]) == ["small"]
    assert ids(got["second"]) == ["big"]


def test_retrieve_pools_always_scope_lands_in_the_first_pool_of_its_type_only():
    fix = {"id": "fix", "scope": "always", "type": "correction"}
    pools = [Pool("tasks", 0, 0, types=("task",)), Pool("a", 0, 0, types=("correction",)),
             Pool("b", 0, 0)]
    got = retrieve_pools([fix], pools, now=NOW)
    assert got == {"tasks": [], "a": [fix], "b": []}


def test_retrieve_pools_dedupes_by_identity_so_entries_without_id_dedupe_too():
    one, two = {"content": "same"}, {"content": "same"}
    got = retrieve_pools([one, two], [Pool("first", 1, 1), Pool("second", 1, 1)], now=NOW)
    assert got["first"][0] is one and got["second"][0] is two
    shared = {"content": "shared"}
    got = retrieve_pools([shared], [Pool("first", 1, 1), Pool("second", 1, 1)], now=NOW)
    assert got == {"first": [shared], "second": []}


def test_retrieve_pools_result_keys_follow_the_pool_order():
    pools = [Pool(name, 10, 1) for name in ("zeta", "alpha", "mid")]
    assert list(retrieve_pools([], pools, now=NOW)) == ["zeta", "alpha", "mid"]


def test_retrieve_pools_with_no_pools_is_empty():
    assert retrieve_pools([{"id": "a"}], [], now=NOW) == {}


def test_retrieve_pools_each_pool_equals_retrieve_over_what_earlier_pools_left():
    store = [{"id": f"e{i}", "type": "task" if i % 2 else "note", "base_priority": i,
              "token_count": 1 + i % 3} for i in range(12)]
    pools = [Pool("one", 5, 3), Pool("two", 4, 10, types=("task",)), Pool("three", 100, 100)]
    got = retrieve_pools(store, pools, now=NOW)
    left = list(store)
    for pool in pools:
        assert got[pool.name] == retrieve(left, pool, now=NOW)
        left = [e for e in left if all(e is not p for p in got[pool.name])]


def test_pools_as_a_single_pool_is_a_type_error():
    with pytest.raises(TypeError, match="single Pool"):
        retrieve_pools([{}], EVERYTHING, now=NOW)  # type: ignore[arg-type]


@pytest.mark.parametrize("pools", ["all", {"all": EVERYTHING}, 3, [EVERYTHING, "p"]])
def test_pools_not_a_sequence_of_pools_is_a_type_error(pools):
    with pytest.raises(TypeError, match="pools"):
        retrieve_pools([{}], pools, now=NOW)


def test_duplicate_pool_names_are_a_value_error():
    with pytest.raises(ValueError, match="'p' twice"):
        retrieve_pools([{}], [Pool("p", 1, 1), Pool("q", 1, 1), Pool("p", 2, 2)], now=NOW)


def test_retrieve_pools_never_mutates_the_entries():
    store = [{"id": "a", "tags": ["x"]}, {"id": "b", "scope": "always"}]
    before = copy.deepcopy(store)
    retrieve_pools(store, [Pool("p", 1, 1), Pool("q", 1, 1)], {"tags": ["x"]}, now=NOW)
    assert store == before


# --------------------------------------------------------------------------
# explain_pools: the outcomes
# --------------------------------------------------------------------------


def test_explain_inactive_is_decided_first_whatever_the_type():
    store = [{"id": "a", "type": "nowhere", "status": "retired"},
             {"id": "b", "type": "nowhere"}]
    got = explain_pools(store, [Pool("p", 10, 1, types=("task",))], now=NOW)
    assert [d.outcome for d in got.decisions] == ["inactive", "no_pool"]
    assert all(d.pool is None for d in got.decisions)


def test_explain_cap_is_checked_before_the_tokens():
    store = [{"id": "a", "base_priority": 9, "token_count": 5},
             {"id": "b", "base_priority": 8, "token_count": 50},
             {"id": "c", "base_priority": 7, "token_count": 50}]
    got = explain_pools(store, [Pool("p", max_tokens=5, max_entries=1)], now=NOW)
    assert [d.outcome for d in got.decisions] == ["selected", "over_entries", "over_entries"]
    ledger = got.ledgers["p"]
    assert (ledger.tokens_used, ledger.tokens_left, ledger.selected) == (5, 0, 1)
    assert (ledger.skipped_tokens, ledger.skipped_entries) == (0, 2)


def test_explain_over_tokens_records_the_near_miss():
    store = [{"id": "a", "base_priority": 9, "token_count": 7},
             {"id": "b", "base_priority": 8, "token_count": 5},
             {"id": "c", "base_priority": 7, "token_count": 3}]
    got = explain_pools(store, [Pool("p", max_tokens=10, max_entries=5)], now=NOW)
    by_id = {d.entry["id"]: d for d in got.decisions}
    assert by_id["b"].outcome == "over_tokens" and by_id["b"].tokens_left == 3
    assert by_id["b"].cost == 5
    assert [by_id[k].outcome for k in "ac"] == ["selected", "selected"]
    assert [by_id[k].rank for k in "ac"] == [0, 1]


def test_explain_always_is_accounted_but_not_charged():
    store = [{"id": "fix", "scope": "always", "token_count": 40}, {"id": "a", "token_count": 2}]
    got = explain_pools(store, [Pool("p", max_tokens=2, max_entries=0)], now=NOW)
    ledger = got.ledgers["p"]
    assert (ledger.always, ledger.always_tokens, ledger.tokens_used) == (1, 40, 0)
    assert [d.outcome for d in got.decisions] == ["always", "over_entries"]


def test_explain_an_entry_no_pool_loaded_is_decided_in_the_last_pool_that_considered_it():
    store = [{"id": "big", "token_count": 50}]
    pools = [Pool("first", 10, 5), Pool("second", 20, 5), Pool("tasks", 100, 5, types=("task",))]
    (decision,) = explain_pools(store, pools, now=NOW).decisions
    assert (decision.outcome, decision.pool, decision.tokens_left) == ("over_tokens", "second", 20)


def test_explain_outcomes_are_a_closed_set():
    assert set(OUTCOMES) == {"always", "selected", "inactive", "no_pool", "over_tokens",
                             "over_entries"}


@pytest.mark.parametrize("context", [None, {"message": "deploy the release"}],
                         ids=["scored at once", "message factor deferred"])
@pytest.mark.parametrize("fn", [retrieve_pools, explain_pools])
def test_a_bad_priority_names_the_entry_by_its_index_on_every_scoring_path(fn, context):
    # With a message, the default scorer's message factor is deferred: the
    # rest of the score is computed (and checked) first, and must still name
    # the entry, here by its index, as it has no id.
    store = [{"content": "deploy"}, {"base_priority": "hi", "content": "deploy"}]
    with pytest.raises(ValueError, match=r"^entry at index 1: base_priority must be a number, "
                                         r"got 'hi'$"):
        fn(store, [Pool("p", 10, 5)], context)


@pytest.mark.parametrize("message", [None, "deploy"], ids=["scored at once", "message deferred"])
def test_a_score_that_overflows_names_the_entry_on_every_scoring_path(message):
    # 1e308 x 1.5 (project) x 1.5 (tags) is past the largest float before
    # any message factor: the partial score itself must be refused by name.
    store = [{"content": "deploy"},
             {"base_priority": 1e308, "project": "atlas", "tags": ["db"], "content": "deploy"}]
    context = {"project": "atlas", "tags": ["db"], "message": message}
    with pytest.raises(ValueError, match=r"^entry at index 1: scorer must return a finite number"):
        retrieve_pools(store, [Pool("p", 10, 5)], context)


def test_a_custom_scorer_is_never_bounded_by_the_default_score():
    # Only the default scorer's message factor may be deferred behind a bound;
    # a custom score can exceed any bound the default factors give.
    def scorer(entry, context):
        return {"a": 100, "b": 200}[entry["id"]]

    store = [{"id": "a", "base_priority": 9, "content": "deploy"},
             {"id": "b", "base_priority": 1, "content": "deploy"}]
    got = retrieve_pools(store, [Pool("p", 10, 1)], {"message": "deploy"}, scorer=scorer)
    assert [e["id"] for e in got["p"]] == ["b"]


def test_a_deferred_bound_sorts_before_an_exact_score_it_ties():
    # "0" scores 2 x 2.5 = 5 once its message factor is known; "1" scores 5
    # with none. Same score, both undated: the id decides, so "0" must be
    # scored before "1" is taken -- the bound standing for "0" sorts first.
    store = [{"id": "1", "base_priority": 5, "content": "other"},
             {"id": "0", "base_priority": 2, "content": "deploy"}]
    got = retrieve_pools(store, [Pool("p", 10, 1)], {"message": "deploy"})
    assert [e["id"] for e in got["p"]] == ["0"]


def test_a_stream_not_yet_started_sorts_before_an_exact_score_it_ties():
    # The stored "0" and the extra "1" both score 5, undated: the id decides.
    # "1" is scored at once (an extra); "0" waits in a stream not yet started,
    # whose bound (5) must sort before "1" so that "0" is read first.
    store = PreparedStore([{"id": "0", "base_priority": 5, "content": "x"}])
    extra = [{"id": "1", "base_priority": 5, "content": "x"}]
    got = store.decide([Pool("p", 10, 1)], extra=extra)
    assert [d.entry["id"] for d in got["p"]] == ["0"]


@pytest.mark.parametrize("entry_id", [None, "huge"])
def test_a_score_that_overflows_is_refused_naming_the_entry_on_every_path(entry_id):
    # A priority of 1e308 is past the prepared index's groups, so every path
    # scores the entry exactly: x 1.5 (tag) x 1.5 (project) overflows to inf.
    huge = {"content": "deploy now", "base_priority": 1e308, "tags": ["a"], "project": "p"}
    if entry_id is not None:
        huge["id"] = entry_id
    entries = [{"id": "ok", "content": "deploy"}, huge]
    context = {"message": "deploy", "tags": ["a"], "project": "p"}
    pools = [Pool("all", max_tokens=100, max_entries=5)]
    name = "entry at index 1" if entry_id is None else "entry id='huge'"
    expected = f"{name}: scorer must return a finite number, got inf"
    with pytest.raises(ValueError, match=re.escape(expected)):
        retrieve_pools(entries, pools, context, now=NOW)
    with pytest.raises(ValueError, match=re.escape(expected)):
        PreparedStore(entries).retrieve_pools(pools, context, now=NOW)


def _picky_reader(text):
    """The text's words, but a list (which a word reader must not return) for "unreadable"."""
    words = text.split()
    return words if text == "unreadable" else frozenset(words)


@pytest.mark.parametrize(("reader", "bad"), [
    (None, {"base_priority": "hi", "content": "deploy"}),
    (_picky_reader, {"content": "unreadable"}),
], ids=["a bad priority", "a word reader's bad answer"])
def test_a_prepared_store_names_a_bad_entry_by_its_position_in_a_build_and_an_add(reader, bad):
    # Without an id, the entry is named by its position in the store: the
    # third of a build, and the third after an add() to a store of two.
    kwargs = {} if reader is None else {"scorer": make_scorer(words=reader)}
    good = [{"content": "deploy the release"}, {"content": "rotate the keys"}]
    with pytest.raises((ValueError, TypeError), match=r"^entry at index 2: "):
        PreparedStore([*good, bad], **kwargs)
    store = PreparedStore(good, **kwargs)
    with pytest.raises((ValueError, TypeError), match=r"^entry at index 2: "):
        store.add(bad)
    assert len(store) == 2  # refused before anything changed
