"""The strict store checks: every field the core reads leniently, named when it is odd.

Each rule is held at its edges (what it accepts and what it refuses), each
problem names the entry (``id='x'``, else its index), the field and the value
received; the checks never raise on JSON-like input and never change it, and
an entry they pass is one the core scores without an error.
"""

from __future__ import annotations

import copy
import math
from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from poolsplit_core import check_entries
from poolsplit_core.checks import FUTURE_TOLERANCE, entry_problems, refuse_bad_entries
from poolsplit_core.poolsplit import Pool, explain_pools, retrieve_pools
from poolsplit_core.prepared import PreparedStore
from tests.core import strategies as s

NOW = datetime(2026, 3, 1, tzinfo=timezone.utc)
TIME_RULE = ("created must be an ISO 8601 time in the extended format (YYYY-MM-DD, optionally"
             " then THH:MM:SS, a fraction and Z or +HH:MM), such as '2026-01-31T09:00:00Z',"
             " or a datetime")


def problems_of(field, value):
    return check_entries([{"id": "e1", field: value}], now=NOW)


# (field, value) pairs each rule accepts, then those it refuses.
ACCEPTED = [
    ("scope", "always"), ("scope", "contextual"), ("scope", None),
    ("status", "active"), ("status", "retired"),
    ("created", "2026-01-31"), ("created", "2026-01-31T09:00:00Z"),
    ("created", " 2026-01-31T09:00:00+05:30 "), ("created", datetime(2026, 1, 1)),
    ("created", datetime(2026, 1, 1, tzinfo=timezone.utc)), ("created", None),
    ("token_count", 1), ("token_count", 500), ("token_count", None),
    ("tags", ["db", "prod"]), ("tags", ("db",)), ("tags", []), ("tags", {"db"}),
    ("tags", frozenset()), ("tags", None),
    ("superseded_by", "e2"), ("superseded_by", ""), ("superseded_by", None),
    ("base_priority", 5), ("base_priority", 0), ("base_priority", -2.5), ("base_priority", 1e300),
    ("type", "note"), ("type", "correction"),
    ("user_id", "ana"), ("user_id", " ana "),
]
REFUSED = [
    ("scope", "Always", "scope must be 'always', 'contextual' or absent, got 'Always'"),
    ("scope", "session", "scope must be 'always', 'contextual' or absent, got 'session'"),
    ("scope", True, "scope must be 'always', 'contextual' or absent, got True"),
    ("scope", 1, "scope must be 'always', 'contextual' or absent, got 1"),
    ("scope", "", "scope must be 'always', 'contextual' or absent, got ''"),
    ("status", None, "status must be a non-empty str, such as 'active', got None"),
    ("status", "", "status must be a non-empty str, such as 'active', got ''"),
    ("status", 3, "status must be a non-empty str, such as 'active', got 3"),
    ("created", "garbage", f"{TIME_RULE}, got 'garbage'"),
    ("created", "2025-13-45", f"{TIME_RULE}, got '2025-13-45'"),
    ("created", "2026-01-01T24:00", f"{TIME_RULE}, got '2026-01-01T24:00'"),
    ("created", 1767225600, f"{TIME_RULE}, got 1767225600"),
    ("token_count", True, "token_count must be a positive int, got True"),
    ("token_count", "5", "token_count must be a positive int, got '5'"),
    ("token_count", 5.0, "token_count must be a positive int, got 5.0"),
    ("token_count", 0, "token_count must be a positive int, got 0"),
    ("token_count", -5, "token_count must be a positive int, got -5"),
    ("tags", "db,prod", "tags is the bare str 'db,prod', read as one tag;"
                        ' write tags=["db", "prod"]'),
    ("tags", "db", 'tags is the bare str \'db\', read as one tag; write tags=["db"]'),
    ("tags", ["db", 3], "tags must be a list of str, got ['db', 3] (holding 3)"),
    ("tags", 7, "tags must be a list of str, got int"),
    ("tags", {"db": True}, "tags must be a list of str, got dict"),
    ("tags", b"db", "tags must be a list of str, got bytes"),
    ("superseded_by", False, "superseded_by must be a str (the id of the entry that replaces"
                             " it) or None, got False"),
    ("superseded_by", 0, "superseded_by must be a str (the id of the entry that replaces it)"
                         " or None, got 0"),
    ("base_priority", True, "base_priority must be a finite number, got True"),
    ("base_priority", "7", "base_priority must be a finite number, got '7'"),
    ("base_priority", None, "base_priority must be a finite number, got None"),
    ("base_priority", math.inf, "base_priority must be a finite number, got inf"),
    ("base_priority", math.nan, "base_priority must be a finite number, got nan"),
    ("base_priority", 10**400, "base_priority must be a finite number, got 1000000000000000"),
    ("type", None, "type must be a non-empty str, got None"),
    ("type", "", "type must be a non-empty str, got ''"),
    ("type", ["note"], "type must be a non-empty str, got ['note']"),
    ("user_id", None, "user_id must be a non-empty str, not only whitespace, got None"),
    ("user_id", "", "user_id must be a non-empty str, not only whitespace, got ''"),
    ("user_id", " ", "user_id must be a non-empty str, not only whitespace, got ' '"),
    ("user_id", 0, "user_id must be a non-empty str, not only whitespace, got 0"),
    ("user_id", False, "user_id must be a non-empty str, not only whitespace, got False"),
    ("user_id", ["ana"], "user_id must be a non-empty str, not only whitespace, got ['ana']"),
]


@pytest.mark.parametrize(("field", "value"), ACCEPTED)
def test_a_rule_accepts_its_edge(field, value):
    assert problems_of(field, value) == []


@pytest.mark.parametrize(("field", "value", "problem"), REFUSED)
def test_a_rule_refuses_its_edge_naming_the_entry_the_field_and_the_value(field, value,
                                                                           problem):
    got = problems_of(field, value)
    assert len(got) == 1
    assert got[0].startswith(f"entry id='e1': {problem}")


def test_a_long_value_is_cut_in_the_problem():
    [problem] = problems_of("scope", "x" * 500)
    assert problem.endswith("...") and len(problem) < 200


def test_a_datetime_created_is_fine_and_a_date_is_not():
    assert problems_of("created", datetime(2026, 1, 1, 9, 30)) == []
    [problem] = problems_of("created", datetime(2026, 1, 1).date())
    assert "got datetime.date(2026, 1, 1)" in problem


def test_an_entry_without_a_hashable_id_is_named_by_its_index():
    got = check_entries([{"id": "ok"}, {"scope": "Always"}, {"id": None, "type": ""},
                         {"id": ["x"], "status": None}, {"id": 7, "tags": "db"}])
    assert [p.split(":")[0] for p in got] == [
        "entry at index 1", "entry at index 2", "entry at index 3", "entry id=7"]


def test_every_problem_of_every_entry_is_listed_in_order():
    got = check_entries([
        {"id": "a", "scope": "Always", "status": "", "created": "garbage", "token_count": 0,
         "tags": "db", "superseded_by": False, "base_priority": "x", "type": "",
         "user_id": " "},
        {"id": "b"},
        {"id": "c", "token_count": 2.0},
    ])
    assert [p.split(": ", 1)[1].split(" ")[0] for p in got] == [
        "scope", "status", "created", "token_count", "tags", "superseded_by", "base_priority",
        "type", "user_id", "token_count"]
    assert [p.split(":")[0] for p in got] == ["entry id='a'"] * 9 + ["entry id='c'"]


def test_something_that_is_not_a_mapping_is_a_problem():
    assert check_entries([{"id": "a"}, ["id", "b"], None]) == [
        "entry at index 1: must be a mapping (dict), got list",
        "entry at index 2: must be a mapping (dict), got NoneType",
    ]


@pytest.mark.parametrize("store", [{"entries": []}, "store.json", 3, None])
def test_a_store_that_is_not_a_list_is_one_problem(store):
    [problem] = check_entries(store)
    assert problem.startswith("entries must be a list of mappings (dicts), got ")


def test_an_empty_store_and_unknown_keys_have_no_problem():
    assert check_entries([]) == []
    assert check_entries([{"id": "a", "whatever": object(), "content": 3, "project": None}]) == []


def test_a_one_shot_tags_iterator_is_a_problem_and_is_not_used_up():
    tags = iter(["db"])
    [problem] = problems_of("tags", tags)
    assert "got a one-shot list_iterator" in problem
    assert list(tags) == ["db"]


def test_entry_problems_uses_the_label_it_is_given():
    assert entry_problems({"type": 3}, "document 'd7'") == [
        "document 'd7': type must be a non-empty str, got 3"]
    assert entry_problems("text", "node 'n1'") == ["node 'n1': must be a mapping (dict), got str"]
    assert entry_problems({"type": "note"}, "x") == []


def test_refuse_bad_entries_raises_one_error_listing_every_problem():
    entries = [{"id": "a", "scope": "Always"}, {"id": "b"}, {"token_count": "5", "type": ""}]
    with pytest.raises(ValueError) as raised:
        refuse_bad_entries(entries)
    assert str(raised.value) == (
        "3 problems in the entries:\n"
        "  entry id='a': scope must be 'always', 'contextual' or absent, got 'Always'\n"
        "  entry at index 2: token_count must be a positive int, got '5'\n"
        "  entry at index 2: type must be a non-empty str, got ''"
    )
    assert refuse_bad_entries([{"id": "a"}, {"id": "b"}]) is None


def test_refuse_bad_entries_names_entries_by_the_labels_given():
    with pytest.raises(ValueError, match="1 problem in the entries:\n  document 'd2': scope"):
        refuse_bad_entries([{}, {"scope": "Always"}], ["document 'd1'", "document 'd2'"])
    with pytest.raises(ValueError, match="labels must name each entry once: got 1 labels for 2"):
        refuse_bad_entries([{}, {}], ["document 'd1'"])


# --------------------------------------------------------------------------
# The store's rules: a created in the future, an id two entries hold
# --------------------------------------------------------------------------

FUTURE = ("created must be at most 1 day after now (2026-03-01T00:00:00+00:00), got {}: a"
          " time in the future counts as 0 days old, brand new, until that day")


def test_the_tolerance_is_one_day():
    assert FUTURE_TOLERANCE == timedelta(days=1)


@pytest.mark.parametrize("created", [
    NOW + timedelta(days=1), (NOW + timedelta(days=1)).isoformat(), "2026-03-02",
    "2026-03-02T00:00:00Z", "2026-03-02T05:30:00+05:30", "2026-03-01T19:00:00-05:00",
    datetime(2026, 3, 2), "2026-02-28", "1999-01-01", NOW,
])
def test_a_created_at_most_a_day_after_now_passes(created):
    assert check_entries([{"id": "e1", "created": created}], now=NOW) == []


@pytest.mark.parametrize("created", [
    NOW + timedelta(days=1, microseconds=1), "2026-03-02T00:00:00.000001Z",
    "2026-03-02T05:30:01+05:30", "2026-03-01T19:00:01-05:00", datetime(2026, 3, 2, 0, 0, 1),
    "2062-03-01", "2099-01-01", "9999-12-31T23:59:59Z",
])
def test_a_created_later_than_a_day_after_now_is_refused_naming_the_tolerance(created):
    [problem] = check_entries([{"id": "e1", "created": created}], now=NOW)
    shown = repr(created.isoformat() if isinstance(created, datetime) else created)
    assert problem == "entry id='e1': " + FUTURE.format(shown)


def test_a_naive_now_is_utc_and_no_now_is_the_current_time():
    assert check_entries([{"created": "2026-03-02T00:00:01Z"}],
                         now=datetime(2026, 3, 1)) != []
    assert check_entries([{"created": "9999-12-31"}]) != []  # later than any current time
    assert check_entries([{"created": "2000-01-01"}]) == []


def test_entry_problems_read_the_entry_alone_unless_given_the_time_of_a_write():
    entry = {"id": "e1", "created": "2099-01-01"}
    assert entry_problems(entry, "e") == []  # a stored entry reads the same tomorrow
    assert entry_problems(entry, "e", now=NOW) == ["e: " + FUTURE.format("'2099-01-01'")]
    assert entry_problems({"scope": "Always", "created": "2099-01-01"}, "e", now=NOW) == [
        "e: scope must be 'always', 'contextual' or absent, got 'Always'",
        "e: " + FUTURE.format("'2099-01-01'")]


def test_an_id_two_entries_hold_is_listed_naming_both_indexes():
    got = check_entries([{"id": "a"}, {"id": "b"}, {"id": "a", "scope": "Always"}, {},
                         {"id": None}, {"id": ["x"]}, {"id": "a"}, {"id": None}, {"id": 1},
                         {"id": 1}, {"id": "1"}], now=NOW)
    again = "is also the id of the entry at index {}; each entry needs its own id"
    assert got == [
        "entry id='a': scope must be 'always', 'contextual' or absent, got 'Always'",
        f"entry at index 2: id 'a' {again.format(0)}",
        f"entry at index 6: id 'a' {again.format(0)}",
        f"entry at index 9: id 1 {again.format(8)}",
    ]


def test_refuse_bad_entries_names_a_repeated_id_by_the_labels_given():
    with pytest.raises(ValueError) as raised:
        refuse_bad_entries([{"id": "a"}, {"id": "a"}], ["document 'a' (0)", "document 'a' (1)"])
    assert str(raised.value) == (
        "1 problem in the entries:\n  document 'a' (1): id 'a' is also the id of the entry at"
        " index 0; each entry needs its own id")


# --------------------------------------------------------------------------
# Properties
# --------------------------------------------------------------------------

json_like = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                 max_size=4),
    max_leaves=12,
)
FIELDS = ("id", "scope", "status", "created", "token_count", "tags", "superseded_by",
          "base_priority", "type", "user_id", "content")
entry_like = st.dictionaries(st.sampled_from(FIELDS) | st.text(max_size=6), json_like,
                             max_size=8)


@given(store=st.one_of(json_like, st.lists(st.one_of(entry_like, json_like), max_size=6)))
def test_the_checks_never_raise_on_json_like_input_and_never_change_it(store):
    before = copy.deepcopy(store)
    got = check_entries(store)
    assert isinstance(got, list) and all(isinstance(p, str) for p in got)
    assert s.same(before, store)


@given(store=s.stores(repeats=False), pools=s.pool_lists, context=s.contexts, now=s.nows)
def test_an_entry_without_a_problem_is_scored_by_the_core_without_error(store, pools,
                                                                        context, now):
    clean = [entry for entry in store if not entry_problems(entry, "e")]
    retrieve_pools(clean, pools, context, now=now)
    explain_pools(clean, pools, context, now=now, always_pool=True)
    PreparedStore(clean).retrieve_pools(pools, context, now=now)


@given(store=st.lists(entry_like, max_size=6), context=s.contexts)
def test_a_json_like_entry_without_a_problem_is_scored_by_the_core_without_error(store,
                                                                                 context):
    clean = [entry for entry in store if not entry_problems(entry, "e")]
    pools = [Pool("all", max_tokens=40, max_entries=3)]
    explain_pools(clean, pools, context, now=NOW, always_pool=True)
    PreparedStore(clean).decide(pools, context, now=NOW, always_pool=True)
