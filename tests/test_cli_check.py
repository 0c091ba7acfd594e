"""The command's strict side: ``check``, stores refused by default, every correction loaded.

``poolsplit check STORE`` lists every problem (exit 1) or says ok (exit 0);
retrieve, explain, coverage and plan refuse a store with a problem unless
``--no-strict``; retrieve and explain load a correction whose type no pool
takes in one more pool, ``always``; a pool naming a type no entry has is run
with a warning.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from poolsplit_core.cli import main
from poolsplit_core.demo import DEMO_QUERIES

CONTEXT = ["--message", "ship the release", "--now", "2026-11-01T00:00:00Z"]
CLEAN = [
    {"id": "fix", "type": "correction", "scope": "always", "content": "Never force-push."},
    {"id": "lesson", "type": "lesson", "scope": "always", "token_count": 7,
     "content": "Run the tests first."},
    {"id": "t1", "type": "task", "base_priority": 9, "content": "Ship the release notes"},
    {"id": "s1", "type": "skill", "content": "Bisect with git bisect run."},
]
BAD = [
    {"id": "c1", "type": "correction", "scope": "Always", "content": "Never force-push."},
    {"id": "t1", "type": "task", "token_count": 5.0, "created": "garbage"},
    {"type": "note", "tags": "db,prod"},
    {"id": "s1", "type": "skill", "user_id": " "},
]
BAD_PROBLEMS = [
    "entry id='c1': scope must be 'always', 'contextual' or absent, got 'Always'",
    "entry id='t1': created must be an ISO 8601 time in the extended format (YYYY-MM-DD,"
    " optionally then THH:MM:SS, a fraction and Z or +HH:MM), such as '2026-01-31T09:00:00Z',"
    " or a datetime, got 'garbage'",
    "entry id='t1': token_count must be a positive int, got 5.0",
    "entry at index 2: tags is the bare str 'db,prod', read as one tag;"
    ' write tags=["db", "prod"]',
    "entry id='s1': user_id must be a non-empty str, not only whitespace, got ' '",
]
POOLS = ["--pool", "work:50:5:task,correction", "--pool", "skills:50:1:skill"]


def write(name, entries):
    Path(name).write_text("".join(json.dumps(e) + "\n" for e in entries), encoding="utf-8")
    return name


@pytest.fixture(autouse=True)
def in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)


def run(capsys, *argv):
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


# --------------------------------------------------------------------------
# check
# --------------------------------------------------------------------------


def test_check_prints_every_problem_one_a_line_and_exits_1(capsys):
    status, out, err = run(capsys, "check", write("bad.jsonl", BAD))
    assert (status, err) == (1, "")
    assert out.splitlines() == BAD_PROBLEMS


@pytest.mark.parametrize(("entries", "line"), [
    (CLEAN, "ok: 4 entries, no problem"), (CLEAN[:1], "ok: 1 entry, no problem"),
    ([], "ok: 0 entries, no problem")])
def test_check_of_a_clean_store_is_one_ok_line_and_exit_0(entries, line, capsys):
    assert run(capsys, "check", write("s.jsonl", entries)) == (0, line + "\n", "")


def test_check_reads_standard_input(capsys, monkeypatch):
    import io

    text = "".join(json.dumps(e) + "\n" for e in BAD)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(text.encode("utf-8"))))
    status, out, _ = run(capsys, "check", "-")
    assert status == 1 and out.splitlines() == BAD_PROBLEMS


def test_check_lists_a_created_in_the_future_of_now_and_an_id_held_twice(capsys):
    store = write("s.jsonl", [{"id": "a", "created": "2026-03-03"}, {"id": "b"}, {"id": "a"},
                              {"id": "c", "created": "2026-03-02T00:00:00Z"}])
    status, out, _ = run(capsys, "check", store, "--now", "2026-03-01")
    assert status == 1 and out.splitlines() == [
        "entry id='a': created must be at most 1 day after now (2026-03-01T00:00:00+00:00),"
        " got '2026-03-03': a time in the future counts as 0 days old, brand new, until that"
        " day",
        "entry at index 2: id 'a' is also the id of the entry at index 0; each entry needs its"
        " own id"]
    status, out, _ = run(capsys, "check", store, "--now", "2026-03-02T00:00:00Z")
    assert status == 1 and len(out.splitlines()) == 1  # only the id now
    status, _, err = run(capsys, "retrieve", store, "--pool", "all:9:9", "--now", "2026-03-01")
    assert status == 2 and "at most 1 day after now (2026-03-01T00:00:00+00:00)" in err


def test_now_is_read_in_the_grammar_of_created_on_every_python(capsys):
    store = write("s.jsonl", CLEAN)
    status, _, err = run(capsys, "check", store, "--now", "20260301T000000Z")
    assert status == 2 and err == (
        "poolsplit: error: --now must be an ISO 8601 time in the extended format (YYYY-MM-DD,"
        " optionally then THH:MM:SS, a fraction and Z or +HH:MM), such as"
        " '2026-01-31T09:00:00Z', got '20260301T000000Z', ISO 8601's basic format: write"
        " '2026-03-01T00:00:00Z', the same instant\n")


@pytest.mark.parametrize(("text", "message"), [
    (None, "store file not found: s.jsonl"),
    ('{"id": "a"}\n{oops}\n', "s.jsonl line 2: invalid JSON"),
    ('{"id": "a"}\n[1]\n', "s.jsonl line 2: an entry must be a JSON object, got an array"),
])
def test_check_of_a_bad_file_is_one_error_line_and_exit_2(text, message, capsys):
    if text is not None:
        Path("s.jsonl").write_text(text, encoding="utf-8")
    status, out, err = run(capsys, "check", "s.jsonl")
    assert (status, out) == (2, "")
    assert err.startswith("poolsplit: error: ") and err.count("\n") == 1 and message in err


def test_the_console_script_check_exits_1_on_a_problem():
    write("bad.jsonl", BAD)
    script = Path(sys.executable).parent / "poolsplit"
    done = subprocess.run([str(script), "check", "bad.jsonl"], capture_output=True, text=True,
                          timeout=60)
    assert (done.returncode, done.stderr) == (1, "")
    assert done.stdout.splitlines() == BAD_PROBLEMS


def test_check_escapes_control_characters_in_what_it_prints(capsys):
    status, out, _ = run(capsys, "check", write("s.jsonl", [{"id": "x\x1b[2J", "scope": 1}]))
    assert status == 1 and "\x1b" not in out and "x\\x1b[2J" in out


# --------------------------------------------------------------------------
# strict by default, --no-strict as the spec reads it
# --------------------------------------------------------------------------

STRICT_COMMANDS = {
    "retrieve": ["retrieve", "bad.jsonl", *POOLS, *CONTEXT],
    "explain": ["explain", "bad.jsonl", *POOLS, *CONTEXT],
    "retrieve --json": ["retrieve", "bad.jsonl", *POOLS, *CONTEXT, "--json"],
    "coverage": ["coverage", "bad.jsonl", *POOLS, "--now", "2026-11-01"],
    "plan": ["plan", "bad.jsonl", "--budget", "400", "--now", "2026-11-01"],
}


@pytest.mark.parametrize("command", list(STRICT_COMMANDS))
def test_a_store_with_a_problem_is_refused_naming_its_first_problems(command, capsys):
    write("bad.jsonl", BAD)
    status, out, err = run(capsys, *STRICT_COMMANDS[command])
    assert (status, out) == (2, "")
    assert err == (
        "poolsplit: error: bad.jsonl: 5 problems: " + "; ".join(BAD_PROBLEMS[:3])
        + "; and 2 more problems (run `poolsplit check bad.jsonl` for all; --no-strict reads"
        " the store as the spec does)\n")


@pytest.mark.parametrize("command", list(STRICT_COMMANDS))
def test_no_strict_reads_the_store_as_the_spec_does(command, capsys):
    write("bad.jsonl", BAD)
    Path("queries.jsonl").write_text("".join(json.dumps(dict(q)) + "\n"
                                             for q in DEMO_QUERIES[:4]), encoding="utf-8")
    argv = [*STRICT_COMMANDS[command], "--no-strict"]
    if command in ("coverage", "plan"):
        argv += ["--queries", "queries.jsonl"]
    status, out, _ = run(capsys, *argv)
    assert status == 0 and out
    if command == "retrieve --json":
        # 'Always' is not 'always': the correction is a contextual entry, scored
        work = json.loads(out)["pools"]["work"]
        assert [(e["id"], e["always"]) for e in work] == [("c1", False), ("t1", False)]


def test_a_problem_in_a_file_name_with_a_space_is_quoted_in_the_hint(capsys):
    write("my store.jsonl", BAD[:1])
    status, _, err = run(capsys, "retrieve", "my store.jsonl", *POOLS)
    assert status == 2 and "(run `poolsplit check 'my store.jsonl'` for all;" in err
    assert "1 problem: entry id='c1'" in err and "more" not in err


# --------------------------------------------------------------------------
# every correction loads: the pool "always"
# --------------------------------------------------------------------------


def test_retrieve_prints_the_always_pool_first(capsys):
    status, out, err = run(capsys, "retrieve", write("s.jsonl", CLEAN), *POOLS, *CONTEXT)
    assert (status, err) == (0, "")
    # filled after the others, listed first: the corrections no pool takes lead the output
    assert out.index("pool 'always'") < out.index("pool 'work'") < out.index("pool 'skills'")
    always = out[out.index("pool 'always'"):out.index("pool 'work'")]
    assert always.splitlines()[0] == (
        "pool 'always' (always-scope entries of the types no pool takes, outside every"
        " budget): 1 loaded, 7 tokens")
    rows = [line.split() for line in always.splitlines()[2:] if line.strip()]
    assert rows == [["lesson", "lesson", "-", "7", "always", "Run", "the", "tests", "first."]]


def test_retrieve_json_has_the_always_pool(capsys):
    status, out, _ = run(capsys, "retrieve", write("s.jsonl", CLEAN), *POOLS, *CONTEXT,
                         "--json")
    pools = json.loads(out)["pools"]
    assert status == 0 and list(pools) == ["always", "work", "skills"]
    assert pools["always"] == [{"id": "lesson", "type": "lesson", "score": None, "cost": 7,
                                "always": True, "entry": CLEAN[1]}]


def test_there_is_no_always_pool_when_every_correction_has_a_pool(capsys):
    pools = [*POOLS, "--pool", "lessons:10:1:lesson"]
    status, out, _ = run(capsys, "retrieve", write("s.jsonl", CLEAN), *pools, *CONTEXT)
    assert status == 0 and "'always'" not in out
    status, out, _ = run(capsys, "explain", "s.jsonl", *pools, *CONTEXT, "--json")
    assert [led["pool"] for led in json.loads(out)["ledgers"]] == ["work", "skills", "lessons"]


def test_explain_shows_the_always_pool_in_its_ledger_and_reasons(capsys):
    status, out, _ = run(capsys, "explain", write("s.jsonl", CLEAN), *POOLS, *CONTEXT)
    assert status == 0
    ledger = [line.split() for line in out.split("Why")[0].splitlines() if line.strip()]
    rows = [row[0] for row in ledger]
    assert rows.index("always") < rows.index("work") < rows.index("skills")
    assert ledger[rows.index("always")] == ["always", "0/0", "0", "0/0", "1", "(7)", "0", "0"]
    lines = {line.split()[0]: line for line in out.split("loaded\n", 1)[1].splitlines() if line}
    assert lines["lesson"].split(None, 2)[2] == (
        "always: scope=always, and its type 'lesson' is in no pool: loaded in pool 'always',"
        " outside every budget (7 tokens, not charged)")
    assert "always: scope=always, loaded first in pool 'work'" in lines["fix"]
    order = [line.split()[0] for line in out.split("loaded\n", 1)[1].splitlines() if line]
    assert order == ["lesson", "fix", "t1", "s1"]  # the pool "always" comes first


def test_explain_json_has_the_always_ledger_and_decision(capsys):
    status, out, _ = run(capsys, "explain", write("s.jsonl", CLEAN), *POOLS, *CONTEXT,
                         "--json", "--id", "lesson")
    got = json.loads(out)
    assert status == 0
    assert [led["pool"] for led in got["ledgers"]] == ["always", "work", "skills"]
    assert got["ledgers"][0] == {
        "pool": "always", "max_tokens": 0, "max_entries": 0, "tokens_used": 0,
        "tokens_left": 0, "selected": 0, "always": 1, "always_tokens": 7,
        "skipped_tokens": 0, "skipped_entries": 0}
    (decision,) = got["decisions"]
    assert (decision["outcome"], decision["pool"], decision["cost"], decision["rank"]) == (
        "always", "always", 7, 0)


# --------------------------------------------------------------------------
# a pool naming a type no entry has
# --------------------------------------------------------------------------


@pytest.mark.parametrize("command", ["retrieve", "explain"])
def test_a_pool_type_no_entry_has_is_a_warning_and_the_command_runs(command, capsys):
    write("s.jsonl", CLEAN)
    pools = ["--pool", "work:300:3:tsak,correction", "--pool", "skills:50:1:skill,skil"]
    status, out, err = run(capsys, command, "s.jsonl", *pools, *CONTEXT)
    assert status == 0 and out
    types = "(types in the store: correction, lesson, skill, task)"
    assert err.splitlines() == [
        f"poolsplit: warning: pool 'work' names type 'tsak', which no entry has {types}",
        f"poolsplit: warning: pool 'skills' names type 'skil', which no entry has {types}",
    ]
    # the warning is all that differs: the pools run as named
    pools_file = [{"name": "work", "max_tokens": 300, "max_entries": 3,
                   "types": ["tsak", "correction"]},
                  {"name": "skills", "max_tokens": 50, "max_entries": 1,
                   "types": ["skill", "skil"]}]
    Path("pools.json").write_text(json.dumps(pools_file), encoding="utf-8")
    assert run(capsys, command, "s.jsonl", "--pools", "pools.json", *CONTEXT) == (0, out, err)


def test_an_entry_without_a_type_is_a_note_for_the_warning(capsys):
    status, _, err = run(capsys, "retrieve", write("s.jsonl", [{"id": "a"}]), "--pool",
                         "notes:10:1:note", "--pool", "tasks:10:1:task")
    assert status == 0
    assert err == ("poolsplit: warning: pool 'tasks' names type 'task', which no entry has"
                   " (types in the store: note)\n")


def test_coverage_warns_of_a_pool_type_no_entry_has(capsys):
    write("s.jsonl", CLEAN)
    Path("queries.jsonl").write_text('{"message": "ship"}\n', encoding="utf-8")
    status, _, err = run(capsys, "coverage", "s.jsonl", "--pool", "work:300:3:tsak",
                         "--queries", "queries.jsonl", "--now", "2026-11-01")
    assert status == 0
    assert err.startswith("poolsplit: warning: pool 'work' names type 'tsak', which no entry")


def test_no_warning_on_an_empty_store_nor_on_an_error(capsys):
    assert run(capsys, "retrieve", write("e.jsonl", []), "--pool", "a:1:1:x")[2] == ""
    status, _, err = run(capsys, "retrieve", write("s.jsonl", CLEAN), "--pool", "a:1:1:x",
                         "--now", "someday")
    assert status == 2 and err.count("\n") == 1 and "warning" not in err


def test_the_help_lists_check_and_no_strict(capsys):
    assert main(["--help"]) == 0
    assert "check" in capsys.readouterr().out
    for command in ("retrieve", "explain", "coverage", "plan"):
        assert main([command, "--help"]) == 0
        assert "--no-strict" in capsys.readouterr().out
