"""One rule of bad input for every core path: context keys, pools given as data.

The adapters' side of the same rules (and filters) is in
``tests/integrations/test_strictness_rule.py``. Each rule is the core's, so
each path below meets the same error class and the same message.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone

import pytest

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
