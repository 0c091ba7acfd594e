"""``poolsplit demo --lang zh`` and ``--words unicode`` / ``--tokens cjk`` on retrieve and explain.

The Chinese demo's numbers are recomputed here from the core's functions, not
copied: the per-type table, the relevance count and the burst table must be
what retrieve_pools gives on the shipped store.
"""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout
from datetime import datetime, timezone
from pathlib import Path

import pytest

from poolsplit_core.cli import main
from poolsplit_core.demo import SINGLE_POOL, SPLIT_POOLS, TYPES, scope_blind
from poolsplit_core.demo_zh import (
    CORRECTION_QUERIES_ZH,
    DEMO_QUERIES_ZH,
    fresh_entries_zh,
    load_sample_store_zh,
    most_relevant,
)
from poolsplit_core.multilingual import cjk_token_counter, unicode_words
from poolsplit_core.poolsplit import default_scorer, make_scorer, retrieve_pools

NOW = datetime(2026, 11, 1, tzinfo=timezone.utc)
ROOT = Path(__file__).resolve().parent.parent
ZH_STORE = ROOT / "poolsplit_core" / "data" / "sample_store_zh.jsonl"
SCORERS = {"unicode": make_scorer(words=unicode_words), "ascii": default_scorer}


def run(*argv):
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def loaded(entries, query, method, reader):
    pools = SPLIT_POOLS if method == "split" else [SINGLE_POOL]  # one_pool: scope kept
    kept = scope_blind(entries) if method == "single" else entries
    got = retrieve_pools(kept, pools, query, scorer=SCORERS[reader],
                         token_counter=cjk_token_counter, now=NOW)
    return [e for pool in pools for e in got[pool.name]]


@pytest.fixture(scope="module")
def report():
    code, out, err = run("demo", "--lang", "zh", "--json")
    assert code == 0 and err == ""
    return json.loads(out)


def test_chinese_store_has_the_english_stores_shape():
    store = load_sample_store_zh()
    kinds = [e["type"] for e in store]
    assert set(kinds) == set(TYPES) and kinds.count("correction") == 10
    assert set(CORRECTION_QUERIES_ZH) == {e["id"] for e in store if e["type"] == "correction"}
    assert any(e.get("status") == "retired" and e.get("superseded_by") for e in store)
    days = {e["created"][:7] for e in store}
    assert len(days) >= 12  # a year of dates
    assert all(unicode_words(e["content"]) - unicode_words(e["content"].encode("ascii", "ignore")
                                                           .decode()) for e in store)


def test_chinese_store_script_is_in_sync_with_the_shipped_file():
    script = ROOT / "scripts" / "make_sample_store_zh.py"
    done = subprocess.run([sys.executable, str(script), "--check"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_demo_zh_type_counts_are_what_retrieve_pools_gives(report):
    store = load_sample_store_zh()
    for method in ("single", "split"):
        for reader in SCORERS:
            counts = dict.fromkeys(TYPES, 0)
            for query in DEMO_QUERIES_ZH:
                for kind in {e["type"] for e in loaded(store, query, method, reader)}:
                    counts[kind] += 1
            assert {k: v[f"{method}_{reader}"] for k, v in report["types"].items()} == counts
    # Pool-split feeds every type on every query; the single budget starves growth.
    n = len(DEMO_QUERIES_ZH)
    assert all(v["split_unicode"] == n for v in report["types"].values())
    assert report["types"]["growth"]["single_unicode"] < n


def test_demo_zh_relevance_is_recomputed_and_the_unicode_reader_wins(report):
    store = load_sample_store_zh()
    for reader in SCORERS:
        for setting in ("context", "message_only"):
            hits = 0
            for query in DEMO_QUERIES_ZH:
                best = {id(e) for e in most_relevant(store, query)}
                asked = {"message": query["message"]} if setting == "message_only" else query
                hits += any(id(e) in best for e in loaded(store, asked, "split", reader))
            assert report["relevance"][setting][reader] == hits
    for setting in ("context", "message_only"):
        assert report["relevance"][setting]["unicode"] > report["relevance"][setting]["ascii"]


def test_demo_zh_on_topic_counts_are_recomputed(report):
    store = load_sample_store_zh()
    for reader in SCORERS:
        counts = {kind: [0, 0] for kind in TYPES}
        for query in DEMO_QUERIES_ZH:
            wanted = unicode_words(query["message"])
            for e in loaded(store, query, "split", reader):
                if e.get("scope") != "always":
                    counts[e["type"]][0] += len(wanted & unicode_words(e["content"])) / len(
                        wanted) > 0.15
                    counts[e["type"]][1] += 1
        assert report["on_topic"][reader] == counts
    on = {r: sum(c[0] for c in report["on_topic"][r].values()) for r in SCORERS}
    assert on["unicode"] > on["ascii"]


def test_demo_zh_burst_keeps_every_correction_under_pool_split_only(report):
    store = load_sample_store_zh()
    loud = store + fresh_entries_zh(report["burst"]["fresh_entries"])
    for row in report["burst"]["corrections"]:
        query = DEMO_QUERIES_ZH[CORRECTION_QUERIES_ZH[row["id"]]]
        for method in ("single", "one_pool", "split"):
            assert row[f"{method}_burst"] == (
                row["id"] in {e["id"] for e in loaded(loud, query, method, "unicode")})
    assert all(row["split_quiet"] and row["split_burst"] for row in report["burst"]["corrections"])
    # The fair baseline keeps every correction through the burst too: the always tier's work.
    assert all(row["one_pool_burst"] for row in report["burst"]["corrections"])
    _, out, _ = run("demo", "--lang", "zh")
    rows = re.findall(r"^\s+.+?\s{2,}" + r"\s+".join(["(yes|NO)"] * 6) + r"\s*$", out, re.M)
    assert [r[3] == "yes" for r in rows] == [c["one_pool_burst"]
                                             for c in report["burst"]["corrections"]]
    assert "that is the always tier alone" in out
    assert not any(row["single_burst"] for row in report["burst"]["corrections"])


def test_demo_zh_text_report_prints_the_tables(report):
    code, out, _ = run("demo", "--lang", "zh")
    assert code == 0
    n = report["queries"]
    rel = report["relevance"]
    assert any(line.split() == ["unicode_words", f"{rel['context']['unicode']}/{n}",
                                f"{rel['message_only']['unicode']}/{n}"]
               for line in out.splitlines())
    assert "  loaded " in out and "10/10" in out


def test_retrieve_with_unicode_words_and_cjk_tokens(tmp_path):
    store = tmp_path / "zh.jsonl"
    store.write_text("\n".join(json.dumps(e, ensure_ascii=False) for e in [
        {"id": "a", "type": "note", "content": "周末去超市买水果和牛奶", "created": "2026-10-01"},
        {"id": "b", "type": "note", "content": "数据库迁移前先备份生产数据",
         "created": "2026-10-01"},
    ]), encoding="utf-8")
    args = [str(store), "--pool", "notes:100:1", "--message", "数据库迁移", "--now", "2026-11-01",
            "--json"]
    _, plain, _ = run("retrieve", *args)
    _, chinese, _ = run("retrieve", *args, "--words", "unicode", "--tokens", "cjk")
    assert [e["id"] for e in json.loads(plain)["pools"]["notes"]] == ["a"]  # a tie: smallest id
    picked = json.loads(chinese)["pools"]["notes"]
    assert [e["id"] for e in picked] == ["b"] and picked[0]["cost"] == 13
    _, why, _ = run("explain", *args, "--words", "unicode", "--tokens", "cjk")
    decisions = {d["id"]: d for d in json.loads(why)["decisions"]}
    assert decisions["b"]["outcome"] == "selected" and decisions["a"]["outcome"] == "over_entries"


def test_unknown_reader_names_are_refused():
    code, out, err = run("retrieve", "-", "--pool", "p:1:1", "--words", "klingon")
    assert code == 2 and out == "" and "--words" in err and "unicode" in err


@pytest.fixture(scope="module")
def zh_queries(tmp_path_factory):
    path = tmp_path_factory.mktemp("zh") / "queries.jsonl"
    path.write_text("".join(json.dumps(dict(q), ensure_ascii=False) + "\n"
                            for q in DEMO_QUERIES_ZH), encoding="utf-8")
    return str(path)


def test_coverage_and_plan_take_the_unicode_reader_and_the_cjk_counter(zh_queries):
    from poolsplit_core.plan import coverage, plan_pools, pools_to_json

    store, chinese = load_sample_store_zh(), make_scorer(words=unicode_words)
    common = [str(ZH_STORE), "--queries", zh_queries, "--now", "2026-11-01", "--json"]
    code, out, err = run("plan", *common, "--budget", "1400", "--words", "unicode",
                         "--tokens", "cjk")
    assert code == 0, err
    want = plan_pools(store, DEMO_QUERIES_ZH, 1400, now=NOW, scorer=chinese,
                      token_counter=cjk_token_counter)
    got = json.loads(out)
    assert got["pools"] == want.to_dict()["pools"] and got["types"] == want.to_dict()["types"]
    _, plain, _ = run("plan", *common, "--budget", "1400")
    assert json.loads(plain)["pools"] != got["pools"]  # the reader and counter matter here

    pools_file = Path(zh_queries).with_name("pools.json")
    pools_file.write_text(pools_to_json(want.pools), encoding="utf-8")
    code, out, err = run("coverage", *common, "--pools", str(pools_file), "--words", "unicode",
                         "--tokens", "cjk")
    assert code == 0, err
    report = coverage(store, want.pools, DEMO_QUERIES_ZH, now=NOW, scorer=chinese,
                      token_counter=cjk_token_counter)
    assert json.loads(out)["types"] == json.loads(json.dumps(report.to_dict()["types"]))
