"""One rule of bad input for every core path: context keys, pools given as data.

The adapters' side of the same rules (and filters) is in
``tests/integrations/test_strictness_rule.py``. Each rule is the core's, so
each path below meets the same error class and the same message.
"""

from __future__ import annotations

import json
import warnings
from datetime import datetime, timedelta, timezone

import pytest

from poolsplit_core.checks import check_entries, refuse_bad_entries
from poolsplit_core.cli import load_queries, main
from poolsplit_core.multilingual import unicode_words
from poolsplit_core.plan import best_entry_coverage, coverage, pools_from_json
from poolsplit_core.poolsplit import (
    Pool,
    default_scorer,
    explain_pools,
    make_scorer,
    retrieve,
    retrieve_pools,
)
from poolsplit_core.prepared import PreparedStore

NOW = datetime(2026, 3, 1, tzinfo=timezone.utc)
STORE = [
    {"id": "fix", "scope": "always", "content": "deploy with just"},
    {"id": "t1", "type": "task", "content": "deploy the release", "project": "atlas"},
    {"id": "n1", "type": "note", "content": "release notes"},
]
POOLS = [Pool("tasks", 100, 2, ("task",)), Pool("notes", 100, 2)]

# --------------------------------------------------------------------------
# Context keys: the default score reads message, project and tags only
# --------------------------------------------------------------------------

TYPO = {"mesage": "deploy"}
UNKNOWN_KEY = ("context has an unknown key 'mesage' (did you mean 'message'?): the default"
               " scorer reads 'message', 'project' and 'tags'; a custom scorer gets every key")

#: Every core path that scores with the default score, called with ``context``.
DEFAULT_SCORE_PATHS = {
    "retrieve": lambda context, scorer: retrieve(STORE, POOLS[1], context, scorer=scorer,
                                                 now=NOW),
    "retrieve_pools": lambda context, scorer: retrieve_pools(STORE, POOLS, context,
                                                             scorer=scorer, now=NOW),
    "explain_pools": lambda context, scorer: explain_pools(STORE, POOLS, context,
                                                           scorer=scorer, now=NOW),
    "PreparedStore.retrieve_pools": lambda context, scorer: PreparedStore(
        STORE, scorer=scorer).retrieve_pools(POOLS, context, now=NOW),
    "PreparedStore.explain_pools": lambda context, scorer: PreparedStore(
        STORE, scorer=scorer).explain_pools(POOLS, context, now=NOW),
    "PreparedStore.decide": lambda context, scorer: PreparedStore(STORE).decide(
        POOLS, context, scorer=scorer, now=NOW),
    "the scorer called": lambda context, scorer: scorer(STORE[1], context, now=NOW),
    "coverage": lambda context, scorer: coverage(STORE, POOLS, [context], scorer=scorer,
                                                 now=NOW),
    "best_entry_coverage": lambda context, scorer: best_entry_coverage(
        STORE, POOLS, [context], scorer=scorer, now=NOW),
}
DEFAULT_SCORERS = {
    "default_scorer": default_scorer,
    "make_scorer()": make_scorer(),
    "make_scorer(words=unicode)": make_scorer(words=unicode_words),
    "make_scorer(evergreen)": make_scorer(evergreen=["note"]),
    "make_scorer(similarity)": make_scorer(relevance="similarity"),
}


@pytest.mark.parametrize("scorer", list(DEFAULT_SCORERS))
@pytest.mark.parametrize("path", list(DEFAULT_SCORE_PATHS))
def test_an_unknown_context_key_is_refused_on_every_default_score_path(path, scorer):
    with pytest.raises(ValueError) as info:
        DEFAULT_SCORE_PATHS[path](TYPO, DEFAULT_SCORERS[scorer])
    assert UNKNOWN_KEY in str(info.value)


@pytest.mark.parametrize("path", list(DEFAULT_SCORE_PATHS))
def test_the_three_keys_and_no_context_still_pass(path):
    scorer = DEFAULT_SCORERS["make_scorer()"]
    for context in (None, {}, {"message": "deploy", "project": "atlas", "tags": ["db"]}):
        DEFAULT_SCORE_PATHS[path](context, scorer)


def test_default_scorer_called_directly():
    with pytest.raises(ValueError, match="unknown key 'mesage'"):
        default_scorer(STORE[1], TYPO, now=NOW)


def test_a_key_with_no_close_match_is_named_without_a_guess():
    with pytest.raises(ValueError, match=r"^context has an unknown key 'user': the default"):
        retrieve_pools(STORE, POOLS, {"message": "deploy", "user": "ana"}, now=NOW)
    with pytest.raises(ValueError, match=r"unknown key 3: the default"):
        retrieve_pools(STORE, POOLS, {3: "x"}, now=NOW)


def test_a_custom_scorer_gets_every_key_as_given():
    seen = []

    def scorer(entry, context):
        seen.append(context)
        return 1.0 if context.get("mesage") and entry.get("type") == "task" else 0.5

    got = retrieve_pools(STORE, POOLS, {"mesage": "deploy", "user": "ana"}, scorer=scorer,
                         now=NOW)
    assert [e["id"] for e in got["tasks"]] == ["t1"]
    assert seen and all(c == {"mesage": "deploy", "user": "ana"} for c in seen)
    # the PreparedStore's stateless path for a custom scorer too
    assert PreparedStore(STORE).retrieve_pools(POOLS, {"mesage": "x"}, scorer=scorer,
                                               now=NOW) == got


def test_the_default_scores_are_unchanged_by_the_check():
    context = {"message": "deploy release", "project": "atlas", "tags": []}
    assert [round(default_scorer(e, context, now=NOW), 9) for e in STORE] == [
        round(make_scorer()(e, context, now=NOW), 9) for e in STORE]


def test_the_cli_refuses_a_query_with_the_same_rule_and_message(tmp_path, capsys):
    queries = tmp_path / "q.jsonl"
    queries.write_text(json.dumps({"message": "deploy"}) + "\n" + json.dumps(TYPO) + "\n")
    with pytest.raises(Exception, match="line 2: " + UNKNOWN_KEY.replace("(", r"\(")
                       .replace(")", r"\)").replace("?", r"\?")):
        load_queries(str(queries))
    store = tmp_path / "store.jsonl"
    store.write_text("".join(json.dumps(e) + "\n" for e in STORE))
    status = main(["coverage", str(store), "--queries", str(queries), "--pools",
                   _pools_file(tmp_path, POOLS)])
    err = capsys.readouterr().err
    assert status == 2 and f"line 2: {UNKNOWN_KEY}" in err


# --------------------------------------------------------------------------
# Pools: a Pool, or a mapping with exactly Pool's fields, read by one function
# --------------------------------------------------------------------------


def _pools_file(tmp_path, pools):
    path = tmp_path / "pools.json"
    path.write_text(json.dumps([p if isinstance(p, dict) else
                                {"name": p.name, "max_tokens": p.max_tokens,
                                 "max_entries": p.max_entries,
                                 "types": None if p.types is None else list(p.types)}
                                for p in pools]))
    return str(path)


#: Every core path that takes a list of pools, called with ``pools``.
POOL_PATHS = {
    "retrieve_pools": lambda pools: retrieve_pools(STORE, pools, now=NOW),
    "explain_pools": lambda pools: explain_pools(STORE, pools, now=NOW),
    "PreparedStore.retrieve_pools": lambda pools: PreparedStore(STORE).retrieve_pools(
        pools, now=NOW),
    "PreparedStore.explain_pools": lambda pools: PreparedStore(STORE).explain_pools(
        pools, now=NOW),
    "PreparedStore.decide": lambda pools: PreparedStore(STORE).decide(pools, now=NOW),
    "coverage": lambda pools: coverage(STORE, pools, [None], now=NOW),
    "best_entry_coverage": lambda pools: best_entry_coverage(STORE, pools, [None], now=NOW),
    "pools_from_json": lambda pools: pools_from_json(json.dumps(pools), "pools"),
}

AS_DATA = [{"name": "tasks", "max_tokens": 100, "max_entries": 2, "types": ["task"]},
           {"name": "notes", "max_tokens": 100, "max_entries": 2}]

#: (pools, error class, message fragment): the same on every path.
BAD_POOLS = {
    "unknown key": ([{"name": "a", "max_tokens": 1, "max_entries": 1, "max_token": 2}],
                    ValueError, "has unknown key(s) max_token (did you mean 'max_tokens'?);"
                                " a pool has name, max_tokens, max_entries, types"),
    "missing key": ([{"name": "a", "max_tokens": 1}], ValueError,
                    "lacks max_entries; a pool has name, max_tokens, max_entries, types"),
    "bad value": ([{"name": "a", "max_tokens": -1, "max_entries": 1}], ValueError,
                  "Pool 'a': max_tokens must be >= 0, got -1"),
    "bare str types": ([{"name": "a", "max_tokens": 1, "max_entries": 1, "types": "task"}],
                       TypeError, "Pool 'a': types must be a tuple of str or None"),
    "not a pool": (["a"], TypeError, "must be a Pool or a mapping with the keys name,"
                                     " max_tokens, max_entries, types, got str"),
}


@pytest.mark.parametrize("path", list(POOL_PATHS))
def test_pools_given_as_data_are_read_as_pools_on_every_path(path):
    if path == "pools_from_json":
        assert POOL_PATHS[path](AS_DATA) == [Pool("tasks", 100, 2, ("task",)),
                                             Pool("notes", 100, 2)]
        return
    as_pools = [Pool("tasks", 100, 2, ("task",)), Pool("notes", 100, 2)]
    assert POOL_PATHS[path](AS_DATA) == POOL_PATHS[path](as_pools)


@pytest.mark.parametrize("case", list(BAD_POOLS))
@pytest.mark.parametrize("path", list(POOL_PATHS))
def test_a_bad_pool_mapping_is_refused_alike_on_every_path(path, case):
    pools, error, fragment = BAD_POOLS[case]
    if path == "pools_from_json" and case == "not a pool":
        pools = [1]
        fragment = fragment.replace("got str", "got int")
    with pytest.raises(error) as info:
        POOL_PATHS[path](pools)
    assert fragment in str(info.value)
    assert ("pool 0" if path == "pools_from_json" else "pools[0]") in str(info.value)


def test_the_cli_reads_a_pools_file_with_the_same_rule(tmp_path, capsys):
    store = tmp_path / "store.jsonl"
    store.write_text("".join(json.dumps(e) + "\n" for e in STORE))
    pools = _pools_file(tmp_path, [{"name": "a", "max_tokens": 1, "max_entries": 1,
                                    "max_token": 2}])
    status = main(["retrieve", str(store), "--pools", pools, "--message", "deploy"])
    err = capsys.readouterr().err
    assert status == 2 and BAD_POOLS["unknown key"][2] in err


def test_retrieve_pools_with_pool_mappings_returns_the_pool_names():
    assert list(retrieve_pools(STORE, AS_DATA, now=NOW)) == ["tasks", "notes"]


# --------------------------------------------------------------------------
# strict=True: the checks' rules and messages, opt-in on every core path
# --------------------------------------------------------------------------

#: Entries the spec reads leniently (each is silently another memory), and one clean.
ODD = [
    {"id": "fix", "scope": "Always", "content": "deploy with just"},
    {"id": "t2", "type": "task", "created": "2026-13-45", "content": "deploy"},
    {"id": "n2", "tags": "db,prod", "content": "release"},
    {"id": "f1", "created": "2062-03-01", "content": "deploy soon"},
    {"id": "b1", "created": "20260101T000000Z", "content": "deploy basic"},
    {"id": "t1", "content": "deploy again"},
    {"id": "ok", "content": "fine"},
]

#: Every core path that takes ``strict``, called with ``entries`` and it.
STRICT_PATHS = {
    "retrieve": lambda entries, **kw: retrieve(entries, POOLS[1], now=NOW, **kw),
    "retrieve_pools": lambda entries, **kw: retrieve_pools(entries, POOLS, now=NOW, **kw),
    "explain_pools": lambda entries, **kw: explain_pools(entries, POOLS, now=NOW, **kw),
    "PreparedStore.retrieve_pools": lambda entries, **kw: PreparedStore(entries)
    .retrieve_pools(POOLS, now=NOW, **kw),
    "PreparedStore.explain_pools": lambda entries, **kw: PreparedStore(entries)
    .explain_pools(POOLS, now=NOW, **kw),
    "PreparedStore.decide": lambda entries, **kw: PreparedStore(entries).decide(
        POOLS, now=NOW, **kw),
    "PreparedStore.decide (extra)": lambda entries, **kw: PreparedStore(entries[:1]).decide(
        POOLS, now=NOW, extra=entries[1:], **kw),
}


@pytest.mark.parametrize("path", list(STRICT_PATHS))
def test_strict_refuses_with_the_message_refuse_bad_entries_gives(path):
    with pytest.raises(ValueError) as expected:
        refuse_bad_entries(ODD, now=NOW)
    assert str(expected.value).startswith("5 problems in the entries:\n  entry id='fix': scope")
    with pytest.raises(ValueError) as raised:
        STRICT_PATHS[path](ODD, strict=True)
    assert str(raised.value) == str(expected.value)


@pytest.mark.parametrize("path", list(STRICT_PATHS))
def test_without_strict_the_spec_reads_the_same_store_leniently(path):
    assert STRICT_PATHS[path](ODD) == STRICT_PATHS[path](ODD, strict=False)
    clean = [entry for entry in ODD if not check_entries([entry], now=NOW)]
    assert STRICT_PATHS[path](clean, strict=True) == STRICT_PATHS[path](clean)


@pytest.mark.parametrize("path", list(STRICT_PATHS))
def test_strict_must_be_a_bool(path):
    with pytest.raises(TypeError, match="strict must be a bool, got 'yes'"):
        STRICT_PATHS[path](ODD[-1:], strict="yes")


def test_strict_refuses_two_entries_with_one_id_naming_both():
    with pytest.raises(ValueError, match=r"entry at index 1: id 'a' is also the id of the entry"
                                         r" at index 0"):
        retrieve_pools([{"id": "a"}, {"id": "a"}], POOLS, now=NOW, strict=True)


def test_a_strict_prepared_query_checks_the_entries_it_reads_and_no_other():
    store = PreparedStore([{"id": "a", "user_id": "ana", "content": "deploy"},
                           {"id": "b", "user_id": "bo", "scope": "Always"}])
    ana = store.retrieve_pools(POOLS, now=NOW, where={"user_id": "ana"}, strict=True)
    assert [e["id"] for e in ana["notes"]] == ["a"]
    for query in (lambda: store.retrieve_pools(POOLS, now=NOW, strict=True),
                  lambda: store.decide(POOLS, now=NOW, where={"user_id": "bo"}, strict=True),
                  lambda: store.decide(POOLS, now=NOW, include=lambda e: e["id"] == "b",
                                       strict=True),
                  lambda: store.explain_pools(POOLS, now=NOW, where={"user_id": "ana"},
                                              extra=[{"user_id": "ana", "tags": "db"}],
                                              strict=True)):
        with pytest.raises(ValueError, match="1 problem in the entries"):
            query()


def test_a_strict_future_check_reads_the_call_s_now():
    late = [{"id": "n", "created": "2026-03-05"}]
    with pytest.raises(ValueError, match=r"at most 1 day after now \(2026-03-01T00:00:00"):
        retrieve_pools(late, POOLS, now=NOW, strict=True)
    assert retrieve_pools(late, POOLS, now=NOW + timedelta(days=3), strict=True)["notes"] == late


# --------------------------------------------------------------------------
# explain_pools says why an entry dated in the future (or unreadably) ranks as new
# --------------------------------------------------------------------------


def test_explain_notes_a_created_counted_as_0_days_old_and_nothing_else():
    store = [{"id": "new", "created": "2099-01-01", "content": "deploy"},
             {"id": "basic", "created": "20260101T000000Z", "content": "deploy"},
             {"id": "old", "created": "2026-01-01", "content": "deploy"},
             {"id": "undated", "content": "deploy"},
             {"id": "fix", "scope": "always", "created": "2099-01-01"}]
    got = {d.entry["id"]: d for d in explain_pools(store, POOLS, now=NOW).decisions}
    assert got["new"].notes == ("created '2099-01-01' is later than now"
                                " (2026-03-01T00:00:00+00:00): counted as 0 days old",)
    assert got["basic"].notes == (
        "created '20260101T000000Z' is ISO 8601's basic format, which the core does not read"
        " ('2026-01-01T00:00:00Z' in the extended format): counted as 0 days old",)
    assert got["new"].score == got["undated"].score > got["old"].score  # why it ranks first
    for quiet in ("old", "undated", "fix"):  # read as written; an always-scope one is unscored
        assert got[quiet].notes == ()
    custom = explain_pools(store, POOLS, now=NOW, scorer=lambda entry, context: 1.0)
    assert all(d.notes == () for d in custom.decisions)  # its reading of created is its own
    # a note is an explanation, not a decision: the loaded Decisions equal decide()'s
    assert PreparedStore(store).decide(POOLS, now=NOW) == explain_pools(
        store, POOLS, now=NOW).loaded()


def test_the_cli_explain_prints_the_note_after_the_reason(tmp_path, capsys):
    path = tmp_path / "store.json"
    path.write_text(json.dumps([{"id": "new", "created": "2099-01-01", "content": "x"}]))
    args = ["explain", str(path), "--pool", "all:10:2", "--now", "2026-03-01"]
    assert main(args) == 2  # strict: refused, naming the rule
    assert "created must be at most 1 day after now" in capsys.readouterr().err
    assert main([*args, "--no-strict"]) == 0
    line = next(line for line in capsys.readouterr().out.splitlines() if "new" in line)
    assert line.endswith("; created '2099-01-01' is later than now"
                         " (2026-03-01T00:00:00+00:00): counted as 0 days old")
    assert main([*args, "--no-strict", "--json"]) == 0
    [decision] = json.loads(capsys.readouterr().out)["decisions"]
    assert decision["notes"] == ["created '2099-01-01' is later than now"
                                 " (2026-03-01T00:00:00+00:00): counted as 0 days old"]
    assert decision["reason"].endswith("counted as 0 days old")


# --------------------------------------------------------------------------
# A pool of no type takes nothing: said at construction
# --------------------------------------------------------------------------


def test_a_pool_of_no_type_warns_naming_the_pool():
    message = r"Pool 'none' takes no type \(types=\(\)\): it loads nothing, not even a correction"
    for types in ((), [], set()):
        with pytest.warns(UserWarning, match=message) as caught:
            Pool("none", 100, 2, types)
        assert caught[0].filename == __file__  # it points at the caller's line
    with pytest.warns(UserWarning, match=r"Pool 'none' takes no type"):
        retrieve_pools(STORE, [{"name": "none", "max_tokens": 1, "max_entries": 1,
                                "types": []}], now=NOW)


def test_a_pool_with_types_or_every_type_does_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Pool("every", 100, 2)
        Pool("some", 100, 2, ("task",))
        Pool("corrections only", 0, 0, ("correction",))
        retrieve_pools(STORE, [], now=NOW, always_pool=True)
