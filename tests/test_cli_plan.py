"""poolsplit coverage and poolsplit plan: their tables, the pools.json they write, bad input."""

from __future__ import annotations

import json
from importlib import resources

import pytest

from poolsplit_core._text import plural
from poolsplit_core.cli import DEFAULT_SAMPLE, main, read_pools_file
from poolsplit_core.demo import (
    BURST_SIZE,
    DEMO_NOW,
    DEMO_QUERIES,
    SINGLE_POOL,
    SPLIT_POOLS,
    fresh_entries,
    load_sample_store,
)
from poolsplit_core.plan import coverage, plan_pools, pools_to_json, sample_queries

STORE = str(resources.files("poolsplit_core") / "data" / "sample_store.jsonl")
NOW = "2026-11-01"


@pytest.fixture
def queries_file(tmp_path):
    path = tmp_path / "queries.jsonl"
    path.write_text("".join(json.dumps(dict(q)) + "\n" for q in DEMO_QUERIES))
    return str(path)


@pytest.fixture
def pools_file(tmp_path):
    path = tmp_path / "split.json"
    path.write_text(pools_to_json(SPLIT_POOLS))
    return str(path)


def run(capsys, *argv):
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def test_coverage_prints_the_per_type_table_coverage_computes(capsys, queries_file, pools_file):
    status, out, err = run(capsys, "coverage", STORE, "--pools", pools_file,
                           "--queries", queries_file, "--now", NOW)
    assert status == 0 and err == ""
    report = coverage(load_sample_store(), SPLIT_POOLS, DEMO_QUERIES, now=DEMO_NOW)
    types_table = out.split("Pools (")[0]
    rows = {line.split()[0]: line for line in types_table.splitlines() if line.startswith("  ")}
    for kind, t in report.types.items():
        if t.best is not None:
            assert f"{t.best.hits}/32 ({t.best.low:.2f}-{t.best.high:.2f})" in rows[kind]
    assert "preference" in rows and "26/32" in rows["preference"]
    assert f"lowest {report.lowest:.2f}, mean {report.mean:.2f}" in out


def test_coverage_json_is_the_report_data(capsys, queries_file):
    status, out, _ = run(capsys, "coverage", STORE, "--pool", "all:1400:14",
                         "--queries", queries_file, "--now", NOW, "--json")
    assert status == 0
    data = json.loads(out)
    assert data["queries"] == 32 and data["types"]["growth"]["best"]["hits"] < 32


def test_plan_writes_pools_that_retrieve_reads(capsys, tmp_path, queries_file):
    out_path = tmp_path / "pools.json"
    status, out, err = run(capsys, "plan", STORE, "--queries", queries_file, "--budget", "1400",
                           "--now", NOW, "--out", str(out_path))
    assert status == 0 and err == ""
    plan = plan_pools(load_sample_store(), DEMO_QUERIES, 1400, now=DEMO_NOW)
    assert read_pools_file(str(out_path)) == list(plan.pools)
    assert f"wrote 8 pools to {out_path}" in out
    for kind, t in plan.types.items():
        assert any(line.split()[:2] == [kind, f"{t.predicted.share:.2f}"]
                   for line in out.splitlines() if line.startswith("  "))
    status, out, _ = run(capsys, "retrieve", STORE, "--pools", str(out_path),
                         "--message", "deploy", "--now", NOW)
    assert status == 0 and "pool 'growth'" in out


def test_plan_without_queries_draws_the_documented_sample_from_the_store(capsys):
    status, out, _ = run(capsys, "plan", STORE, "--budget", "1400", "--now", NOW, "--json")
    assert status == 0
    data = json.loads(out)
    assert data["queries_from"] == f"{DEFAULT_SAMPLE} queries drawn from the store"
    expected = plan_pools(load_sample_store(), sample_queries(load_sample_store(),
                                                               DEFAULT_SAMPLE),
                          1400, now=DEMO_NOW)
    assert data["pools"] == expected.to_dict()["pools"]


def test_plan_says_when_the_target_is_out_of_reach(capsys, queries_file):
    status, out, _ = run(capsys, "plan", STORE, "--queries", queries_file, "--budget", "400",
                         "--target", "0.95", "--now", NOW)
    assert status == 0
    plan = plan_pools(load_sample_store(), DEMO_QUERIES, 400, target=0.95, now=DEMO_NOW)
    assert not plan.reached
    assert (f"target 0.95 out of reach: with 400 tokens the lowest coverage is"
            f" {plan.lowest:.2f}; the smallest total budget that reaches it is"
            f" {plan.tokens_for_target} tokens") in out


BAD = {
    "no budget": (["plan", STORE], "the following arguments are required: --budget"),
    "zero budget": (["plan", STORE, "--budget", "0"], "--budget must be a positive integer"),
    "target above 1": (["plan", STORE, "--budget", "900", "--target", "1.2"],
                       "--target must be in (0, 1], got '1.2'"),
    "holdout of 1": (["plan", STORE, "--budget", "900", "--holdout", "1"],
                     "--holdout must be in [0, 1), got '1'"),
    "always tier takes all": (["plan", STORE, "--budget", "150"],
                              "the always tier needs 185 tokens per query (p95)"),
    "entry cap too small": (["plan", STORE, "--budget", "900", "--entries", "3"],
                            "total_entries=3 cannot give each of the 7 types"),
    "missing queries file": (["plan", STORE, "--budget", "900", "--queries", "nope.jsonl"],
                             "queries file not found: nope.jsonl"),
    "coverage without pools": (["coverage", STORE], "one of the arguments --pool --pools"),
}


@pytest.mark.parametrize("case", BAD, ids=list(BAD))
def test_bad_input_is_one_line_and_exit_2(case, capsys):
    argv, message = BAD[case]
    status, out, err = run(capsys, *argv)
    assert status == 2 and out == ""
    assert err.startswith("poolsplit: error: ") and err.count("\n") == 1
    assert message in err


@pytest.mark.parametrize(("text", "message"), [
    ('{"message": "hi"}\n{"msg": "typo"}\n',
     "line 2: context has an unknown key 'msg' (did you mean 'message'?)"),
    ('{"message": "hi"}\nnot json\n', "line 2: invalid JSON"),
    ('["a list"]\n', "query 0: a query must be a JSON object, got a string"),
    ('{"message": 3}\n', "line 1: message must be a string, got a number"),
    ('{"tags": [1]}\n', "line 1: tags must be a list of strings"),
    ("\n\n", "no queries"),
])
def test_a_bad_queries_file_is_named_by_its_line(text, message, tmp_path, capsys):
    path = tmp_path / "q.jsonl"
    path.write_text(text)
    status, out, err = run(capsys, "plan", STORE, "--budget", "900", "--queries", str(path))
    assert status == 2 and out == "" and err.count("\n") == 1
    assert f"{path}" in err and message in err


def test_pools_and_queries_files_that_are_not_utf8_are_one_error_line_naming_them(capsys,
                                                                                 tmp_path):
    bad = tmp_path / "latin1.json"
    bad.write_bytes('[{"message": "caf\u00e9"}]'.encode("latin-1"))
    for argv in (["coverage", STORE, "--pools", str(bad)],
                 ["plan", STORE, "--budget", "900", "--queries", str(bad)]):
        status, out, err = run(capsys, *argv)
        assert status == 2 and out == "" and err.count("\n") == 1
        assert f"{bad}: not UTF-8 text" in err


def test_plan_out_writes_a_type_with_a_lone_surrogate_as_a_file_that_reads_back(capsys,
                                                                                tmp_path):
    store = tmp_path / "store.json"
    store.write_text('[{"id": "a", "type": "note\\ud800", "content": "deploy the api"}]')
    out_path = tmp_path / "pools.json"
    status, _, err = run(capsys, "plan", str(store), "--budget", "100", "--now", NOW,
                         "--out", str(out_path))
    assert status == 0, err
    assert [pool.types for pool in read_pools_file(str(out_path))] == [("note\ud800",)]


def test_an_unwritable_out_path_is_a_clear_error(capsys, tmp_path):
    status, out, err = run(capsys, "plan", STORE, "--budget", "900", "--now", NOW,
                           "--out", str(tmp_path / "no" / "such" / "dir.json"))
    assert status == 2 and out == "" and "cannot write" in err


def test_the_demo_compares_the_hand_made_split_with_the_planned_one(capsys):
    from tests.core.test_plan import loaded_hits

    status, out, _ = run(capsys, "demo", "--json")
    assert status == 0
    data = json.loads(out)["plan"]
    store = load_sample_store()
    burst = store + fresh_entries(BURST_SIZE)
    planned = plan_pools(store, DEMO_QUERIES, 1400, now=DEMO_NOW).pools
    pools = {"one_pool": [SINGLE_POOL], "hand": SPLIT_POOLS, "planned": planned}
    for kind, counts in data["best_entry"].items():
        for name, chosen in pools.items():  # the planned pools are planned once, on the quiet store
            assert counts[name] == loaded_hits(store, chosen, DEMO_QUERIES, kind, 1, DEMO_NOW)
            assert counts[f"{name}_burst"] == loaded_hits(burst, chosen, DEMO_QUERIES, kind, 1,
                                                          DEMO_NOW)
    assert min(c["planned"] for c in data["best_entry"].values()) > min(
        c["hand"] for c in data["best_entry"].values())
    status, text, _ = run(capsys, "demo")
    n = len(DEMO_QUERIES)
    rows = [line.split() for line in text.split("Best entry loaded (of")[1].splitlines()]
    for kind, c in data["best_entry"].items():  # the table: one pool, hand-made, planned
        want = [kind, *(f"{c[name + when]}/{n}" for name in pools for when in ("", "_burst"))]
        assert want in rows, kind


def test_plan_takes_its_total_budget_as_budget_and_refuses_a_number_for_tokens(capsys,
                                                                               queries_file):
    status, out, err = run(capsys, "plan", STORE, "--queries", queries_file, "--budget",
                           "1400", "--now", NOW, "--json")
    assert status == 0, err
    want = plan_pools(load_sample_store(), DEMO_QUERIES, 1400, now=DEMO_NOW)
    assert json.loads(out)["pools"] == want.to_dict()["pools"]
    status, out, err = run(capsys, "plan", STORE, "--tokens", "2000")
    assert status == 2 and out == "" and err.count("\n") == 1
    assert ("--tokens names the token counter (default|cjk); the total budget is --budget N"
            in err)


def test_plan_prints_beside_each_pool_why_it_got_its_budget(capsys, queries_file):
    status, out, _ = run(capsys, "plan", STORE, "--queries", queries_file, "--budget", "1400",
                         "--now", NOW)
    assert status == 0
    plan = plan_pools(load_sample_store(), DEMO_QUERIES, 1400, now=DEMO_NOW)
    header = next(line for line in out.splitlines() if line.split()[:2] == ["pool", "types"])
    assert "why" in header
    rows = {line.split()[0]: line for line in out.split("Coverage per type")[0].splitlines()
            if line.startswith("  ") and line.split()[0] in plan.types}
    for kind, t in plan.types.items():
        n = plan.planning_queries
        assert (f"{plural(t.entries, 'entry', 'entries')}, median pick {t.median_cost:g} tokens"
                in rows[kind])
        assert f"best entry fits on {t.predicted.hits}/{n}" in rows[kind]
        assert f"the dearest needing {t.max_tokens - t.margin}" in rows[kind]
        if t.next_step is not None:
            assert f"+{t.next_step} tokens for 1 more query" in rows[kind]
    skill = plan.types["skill"]
    assert skill.entries > 1 and skill.next_step is not None


def test_coverage_headings_say_in_plain_words_why_the_best_entry_missed(capsys, queries_file,
                                                                        pools_file):
    status, out, _ = run(capsys, "coverage", STORE, "--pools", pools_file,
                         "--queries", queries_file, "--now", NOW)
    assert status == 0
    lines = out.splitlines()
    at = next(i for i, line in enumerate(lines) if line.split()[:2] == ["type", "entries"])
    groups, header = lines[at - 1], lines[at]
    # Each group's title stands over its own columns, so the two groups do not run together.
    missed, left_out = groups.index("best entry missed"), groups.index("entries left out")
    assert header.index("no tokens left (short by)") == missed
    assert header.index("no tokens left", missed + 1 + len("no tokens left")) == left_out
    assert header.count("pool full") == 2 and "no pool" in header[missed:left_out]
    assert "crowded" not in out and "best missed" not in out


# --------------------------------------------------------------------------
# A small store: the plan spends its budget, and one always-tier count
# --------------------------------------------------------------------------

SMALL_STORE = [  # 7 entries: two corrections (one of a type with contextual entries), 5 types
    {"id": "fix-1", "type": "correction", "scope": "always",
     "content": "Never deploy on a Friday without a rollback plan."},
    {"id": "fix-2", "type": "task", "scope": "always",
     "content": "Always run the migrations twice."},
    {"id": "t1", "type": "task", "content": "Deploy billing to staging."},
    {"id": "s1", "type": "skill", "content": "Rotate the DB keys."},
    {"id": "g1", "type": "growth", "content": "Smaller PRs."},
    {"id": "p1", "type": "preference", "content": "Short answers."},
    {"id": "f1", "type": "fact", "content": "API at api.example.com"},
]


@pytest.fixture
def small_store(tmp_path):
    path = tmp_path / "small.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in SMALL_STORE))
    return str(path)


def _curve_rows(out):
    curve = out.split("Budget vs coverage (predicted)")[1]
    return [line.split() for line in curve.splitlines()
            if line.startswith("  ") and line.split()[0].isdigit()]


def test_a_plan_on_a_small_store_spends_its_budget_and_leaves_headroom(capsys, small_store,
                                                                        tmp_path):
    out_path = tmp_path / "pools.json"
    status, out, err = run(capsys, "plan", small_store, "--budget", "300", "--now", NOW,
                           "--out", str(out_path))
    assert status == 0, err
    always = sum(len(e["content"]) // 4 for e in SMALL_STORE if e.get("scope") == "always")
    pools = read_pools_file(str(out_path))
    assert sum(p.max_tokens for p in pools) == 300 - always
    assert (f"Plan for 300 tokens: {always} for the always tier (p95),"
            f" {300 - always} in {len(pools)} pools") in out
    # Headroom: on every query the plan was made for, each pool has tokens to spare.
    for query in sample_queries(SMALL_STORE, DEFAULT_SAMPLE):
        status, shown, _ = run(capsys, "retrieve", small_store, "--pools", str(out_path),
                               "--message", query["message"], "--now", NOW, "--json")
        ledgers = json.loads(shown)
        assert ledgers["totals"]["max_tokens"] == 300 - always
        assert ledgers["totals"]["always_tokens"] == always
        assert ledgers["totals"]["tokens_used"] < 300 - always
    rows = _curve_rows(out)
    totals = [row[0] for row in rows]
    assert rows and len(totals) == len(set(totals))
    assert totals == sorted(totals, key=int)


def test_coverage_retrieve_and_plan_print_one_always_tier_count(capsys, small_store):
    always = sum(len(e["content"]) // 4 for e in SMALL_STORE if e.get("scope") == "always")
    # Hand-made pools that take no correction's type: every correction loads all the same.
    spec = "work:60:4:skill,growth,preference,fact"
    status, out, err = run(capsys, "plan", small_store, "--budget", "300", "--now", NOW,
                           "--json")
    assert status == 0, err
    assert json.loads(out)["always_tokens"] == always
    status, out, err = run(capsys, "coverage", small_store, "--pool", spec, "--now", NOW,
                           "--json")
    assert status == 0, err
    data = json.loads(out)["always"]
    assert data["entries"] == 2 and data["tokens_p50"] == data["tokens_p95"] == always
    status, out, _ = run(capsys, "coverage", small_store, "--pool", spec, "--now", NOW)
    assert f"Always tier: 2 entries, {always} tokens per query (p95 {always})" in out
    status, out, _ = run(capsys, "retrieve", small_store, "--pool", spec, "--message",
                         "deploy", "--now", NOW)
    assert f"+ {always} always-scope tokens (outside every budget)" in out
