"""The demo's fair baseline, best-entry coverage, and the README's copy of its output."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

from poolsplit_core import demo
from poolsplit_core.demo import (
    BURST_SIZE,
    CORRECTION_QUERIES,
    DEMO_NOW,
    DEMO_QUERIES,
    PLAN_TARGETS,
    SINGLE_POOL,
    TOTAL_TOKENS,
    TYPES,
    best_entry_counts,
    format_report,
    fresh_entries,
    load_sample_store,
    run_demo,
    type_load_counts,
)
from poolsplit_core.plan import plan_pools
from poolsplit_core.poolsplit import retrieve, retrieve_pools

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def report():
    return run_demo()


@pytest.fixture(scope="module")
def text(report):
    return format_report(report)


# --------------------------------------------------------------------------
# the fair baseline: one pool of the same totals, always tier kept
# --------------------------------------------------------------------------


def test_fair_baseline_is_retrieve_with_one_pool_and_the_always_tier_kept():
    store, n = load_sample_store(), len(DEMO_QUERIES)
    counts = dict.fromkeys(TYPES, 0)
    for query in DEMO_QUERIES:  # the store as is: scope="always" still honoured
        for kind in {e["type"] for e in retrieve(store, SINGLE_POOL, query, now=DEMO_NOW)}:
            counts[kind] += 1
    assert type_load_counts(store, "one_pool") == counts
    # Every correction is always-scope, so it loads on every query by construction...
    assert counts["correction"] == n
    # ...and the rest of the budget still starves skill and growth.
    assert counts["skill"] <= n // 10 and counts["growth"] <= n // 10
    assert (counts["skill"], counts["growth"]) == (0, 1)


def test_report_has_the_three_methods_under_stable_keys(report):
    assert report["methods"] == ["single", "one_pool", "split"]
    for table in ("types", "best_entry"):
        assert list(report[table]) == list(TYPES)
        assert all(list(row) == ["single", "one_pool", "split"] for row in report[table].values())
    assert report["types"]["correction"]["one_pool"] == report["queries"]
    assert report["best_entry"]["correction"]["one_pool"] == report["queries"]


def test_text_report_prints_both_tables_with_three_columns(report, text):
    n = report["queries"]
    for title, table in (("loaded at all", "types"), ("best entry loaded", "best_entry")):
        start = text.index(f"Queries on which each type's {title}"
                           if title != "loaded at all" else "each type loaded at all")
        section = text[start:]
        for kind in TYPES:
            row = report[table][kind]
            want = [kind, *(f"{row[m]}/{n}" for m in ("single", "one_pool", "split"))]
            assert any(line.split() == want for line in section.splitlines()), (title, kind)
    assert "scope ignored" in text and "always tier kept" in text


# --------------------------------------------------------------------------
# best-entry coverage on a tiny store
# --------------------------------------------------------------------------

NOW = "2026-11-01T00:00:00Z"


def tiny_store():
    return [
        # notes: the best one for "backup" is too big for any pool (over 1400 tokens),
        # so another note loads -- the type loads, its best entry does not
        {"id": "n-big", "type": "note", "content": "backup database restore checklist",
         "base_priority": 9, "token_count": 2000, "created": NOW},
        {"id": "n-small", "type": "note", "content": "unrelated grocery list",
         "base_priority": 5, "token_count": 10, "created": NOW},
        # a retired note that would outscore both: not active, never the best
        {"id": "n-old", "type": "note", "content": "backup database restore checklist",
         "base_priority": 10, "token_count": 10, "created": NOW, "status": "retired"},
        # skills: which is best depends on the query's words
        {"id": "s-backup", "type": "skill", "content": "backup database restore",
         "base_priority": 5, "token_count": 10, "created": NOW},
        {"id": "s-ios", "type": "skill", "content": "ios build xcode",
         "base_priority": 5, "token_count": 10, "created": NOW},
        {"id": "c", "type": "correction", "content": "never restore onto production",
         "scope": "always", "base_priority": 1, "token_count": 10, "created": NOW},
    ]


QUERIES = [
    {"message": "backup database restore", "project": None, "tags": []},
    {"message": "ios build xcode", "project": None, "tags": []},
]


def test_best_entry_coverage_is_not_loaded_at_all():
    store = tiny_store()
    got = best_entry_counts(store, "split", queries=QUERIES)
    # the notes pool loads a note on both queries, but never n-big, the best note
    assert got["note"] == 0
    # one skill loads per query (skills pool: 1 entry): the query's own best one
    assert got["skill"] == 2
    assert got["correction"] == 2


def test_best_entry_is_chosen_per_query_by_score():
    store = tiny_store()
    # with room for a single contextual skill, pool-split loads the best one for each
    # query; a best-entry count taken from one fixed entry would give 1, not 2
    picked = demo.best_entries(store, QUERIES[0])
    assert store[picked["skill"]]["id"] == "s-backup"
    assert store[demo.best_entries(store, QUERIES[1])["skill"]]["id"] == "s-ios"
    assert store[picked["note"]]["id"] == "n-big"  # n-old scores higher but is retired


def test_best_entry_under_the_naive_baseline_ranks_corrections_like_any_entry():
    # 14 matching high-priority tasks fill the one pool's 14-entry cap
    fillers = [{"id": f"t{k:02d}", "type": "task", "content": "backup database restore ios",
                "base_priority": 9, "token_count": 10, "created": NOW} for k in range(14)]
    store = tiny_store() + fillers
    naive = best_entry_counts(store, "single", queries=QUERIES)
    fair = best_entry_counts(store, "one_pool", queries=QUERIES)
    split = best_entry_counts(store, "split", queries=QUERIES)
    # scope ignored, the low-priority correction is crowded out; kept, it always loads
    assert (naive["correction"], fair["correction"], split["correction"]) == (0, 2, 2)
    # the one pool starves skills whichever way corrections load; pool-split does not
    assert (naive["skill"], fair["skill"], split["skill"]) == (0, 0, 2)
    assert naive["task"] == fair["task"] == split["task"] == 2


def test_split_best_entry_agrees_with_the_planner_measure(report):
    hand = report["plan"]["best_entry"]
    for kind, row in hand.items():
        assert report["best_entry"][kind]["split"] == row["hand"], kind
        assert report["best_entry"][kind]["one_pool"] == row["one_pool"], kind


# --------------------------------------------------------------------------
# the untrimmed plan line, and the README's copy of the output
# --------------------------------------------------------------------------


def test_the_planned_pools_table_is_explained_where_it_is_printed(text):
    lines = text.splitlines()
    i = next(k for k, line in enumerate(lines)
             if line.split() == ["type", "one", "pool", "hand-made", "planned"])
    assert lines[i + 1].split() == ["quiet", "burst"] * 3
    after = " ".join(lines[i + 2:i + 16])
    assert "Why planned and hand-made differ: plan_pools moved tokens" in after


def flat(text):
    """The report's words on one line: the wrapped sentences read whole."""
    return " ".join(text.split())


def test_the_demo_says_which_part_comes_from_the_always_tier_and_which_from_the_pools(report,
                                                                                    text):
    best, n = report["best_entry"], report["queries"]
    said = flat(text)
    # single budget -> one pool: only scope changes, so the corrections' jump is the tier's.
    fix = best["correction"]
    assert fix["single"] < fix["one_pool"] == n
    drift = max(abs(c["one_pool"] - c["single"]) for k, c in best.items() if k != "correction")
    assert (f"from single budget to one pool only the always tier changes (correction"
            f" {fix['single']}→{fix['one_pool']}; every other type moves by at most"
            f" {drift}") in said
    # one pool -> pool-split: the same tier, other pools; skill and growth are the pools' doing.
    for kind in ("skill", "growth"):
        assert best[kind]["one_pool"] < best[kind]["split"]
        assert f"{kind} {best[kind]['one_pool']}→{best[kind]['split']}" in said
    # The burst: one pool keeps every correction too, so that is the tier, not the pools.
    rows = report["burst"]["corrections"]
    kept = sum(c["one_pool_burst"] for c in rows)
    assert kept == sum(c["split_burst"] for c in rows) == len(rows)
    assert (f"one pool keeps {kept}/{len(rows)} corrections through the burst, as pool-split"
            f" keeps {kept}/{len(rows)}: that is the always tier alone") in said
    planned = report["plan"]["best_entry"]
    fell = [k for k, c in planned.items() if c["one_pool_burst"] < c["one_pool"]]
    assert fell and all(f"{k} {planned[k]['one_pool']}→{planned[k]['one_pool_burst']}" in said
                        for k in fell)


def test_the_demo_says_whether_the_planned_pools_reach_the_target_and_why_not(report, text):
    from tests.core.test_plan import loaded_hits

    store, n = load_sample_store(), len(DEMO_QUERIES)
    planned = plan_pools(store, DEMO_QUERIES, TOTAL_TOKENS, now=DEMO_NOW).pools
    said = flat(text)
    for when, entries in (("quiet", store), ("burst", store + fresh_entries(BURST_SIZE))):
        t = report["plan"]["target"][when]
        need = math.ceil(PLAN_TARGETS[when] * n)
        kinds = {e["type"] for e in entries if e.get("scope") != "always"}
        hits = {k: loaded_hits(entries, planned, DEMO_QUERIES, k, 1, DEMO_NOW) for k in kinds}
        short = {k for k, h in hits.items() if h < need}
        fixes = sum(cid in {e["id"] for got in retrieve_pools(entries, planned, DEMO_QUERIES[i],
                                                               now=DEMO_NOW).values()
                            for e in got}
                    for cid, i in CORRECTION_QUERIES.items())
        assert (t["need"], t["corrections"]) == (need, fixes)
        assert t["reached"] == (not short and fixes == len(CORRECTION_QUERIES)), when
        assert {s["type"] for s in t["short"]} == short
        label = "quiet" if when == "quiet" else "after the burst"
        assert f"{label}: {'reached' if t['reached'] else 'not reached'}" in said
        if short:  # the total it names is enough for one pool per type to reach the target
            enough = plan_pools(entries, DEMO_QUERIES, t["tokens_needed"], holdout=0,
                                now=DEMO_NOW)
            assert all(loaded_hits(entries, enough.pools, DEMO_QUERIES, k, 1, DEMO_NOW) >= need
                       for k in kinds)
            assert f"the target needs {t['tokens_needed']} tokens in total" in said
            for s in t["short"]:
                assert f"{s['type']}'s best entry did not fit on" in said


@pytest.mark.parametrize("page", ["README.md", "docs/index.md"])
def test_trimmed_demo_output_is_what_the_demo_prints(page, text):
    body = (ROOT / page).read_text(encoding="utf-8")
    block = re.search(r"prints\s+\(trimmed\):\s*```\n(.*?)```", body, re.S).group(1)
    printed = text.splitlines()
    for line in block.splitlines():
        if line.strip() in ("", "..."):
            continue
        assert line in printed, f"{page}: {line!r} is not in what `poolsplit demo` prints"


def test_chinese_demo_shows_the_fair_baseline_too():
    from poolsplit_core.demo_zh import (
        DEMO_QUERIES_ZH,
        READERS,
        format_report_zh,
        load_sample_store_zh,
        run_demo_zh,
    )
    from poolsplit_core.multilingual import cjk_token_counter

    report, store, n = run_demo_zh(burst=20), load_sample_store_zh(), len(DEMO_QUERIES_ZH)
    for reader, scorer in READERS.items():
        counts = dict.fromkeys(TYPES, 0)
        for query in DEMO_QUERIES_ZH:
            for kind in {e["type"] for e in retrieve(store, SINGLE_POOL, query, now=DEMO_NOW,
                                                      scorer=scorer,
                                                      token_counter=cjk_token_counter)}:
                counts[kind] += 1
        assert {k: v[f"one_pool_{reader}"] for k, v in report["types"].items()} == counts
    assert report["types"]["correction"]["one_pool_unicode"] == n
    assert report["types"]["growth"]["one_pool_unicode"] < n
    lines = format_report_zh(report).splitlines()
    assert any(line.split() == ["growth", *(f"{report['types']['growth'][f'{m}_{r}']}/{n}"
                                            for m in ("single", "one_pool", "split")
                                            for r in READERS)] for line in lines)
