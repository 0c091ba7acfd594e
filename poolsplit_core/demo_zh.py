"""The demo in Chinese: ``poolsplit demo --lang zh`` and ``notebooks/06_multilingual.ipynb``.

The experiment of :mod:`poolsplit_core.demo` (one shared budget against
pool-split, then a burst of fresh entries) on a Chinese personal-agent store
shipped in ``poolsplit_core/data/sample_store_zh.jsonl``, scored with the
opt-in Unicode reader (``make_scorer(words=unicode_words)``) and measured
with :func:`~poolsplit_core.multilingual.cjk_token_counter`. A third part shows
what the reader changes: for each query, whether the entry most relevant to
it loads, with the Unicode reader and with the default ASCII-only one.

>>> store = load_sample_store_zh()
>>> report = run_demo_zh(burst=20)
>>> report["relevance"]["message_only"]["unicode"] > report["relevance"]["message_only"]["ascii"]
True
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from poolsplit_core._text import plural, shorten, table
from poolsplit_core.demo import (
    DEMO_NOW,
    METHODS,
    TYPES,
    _loaded_from,
    _q,
    fresh_entries,
    prepare,
    read_shipped_store,
)
from poolsplit_core.multilingual import cjk_token_counter, unicode_words
from poolsplit_core.poolsplit import Scorer, default_scorer, make_scorer
from poolsplit_core.prepared import PreparedStore

__all__ = [
    "CORRECTION_QUERIES_ZH",
    "DEMO_QUERIES_ZH",
    "READERS",
    "format_report_zh",
    "fresh_entries_zh",
    "load_sample_store_zh",
    "most_relevant",
    "run_demo_zh",
    "type_load_counts_zh",
]

#: The scorer of each reader the demo compares: the Unicode one, and the default.
READERS: Mapping[str, Scorer] = {"unicode": make_scorer(words=unicode_words),
                                 "ascii": default_scorer}


#: The demo's queries in Chinese; the first ten are the corrections' situations.
DEMO_QUERIES_ZH: Sequence[Mapping[str, Any]] = (
    _q("把发票四舍五入缺陷的紧急修复直接推到主分支", "atlas", "发布", "git"),
    _q("限流修复做完了吗？可以告诉团队已经完成了吗？", "atlas", "测试"),
    _q("今晚在生产环境跑发票表的数据库迁移", "atlas", "数据库"),
    _q("清理笔记本电脑磁盘上的旧构建文件", "home", "杂事"),
    _q("在聊天里把预发环境的API密钥发给外包人员", "harbor", "安全"),
    _q("给会计写邮件说季度税款的事", "home", "财务"),
    _q("和设计团队约个会议讨论引导页面", "lumen", "会议"),
    _q("下周和里斯本的玛雅约个通话时间", None, "出行"),
    _q("写限流修复的提交信息", "atlas", "git"),
    _q("磁盘使用率告警停了，告诉值班同事故障已解决", "harbor", "值班"),
    _q("2.4版的发布说明还剩什么？", "atlas", "发布"),
    _q("CI上的集成测试为什么又不稳定了？", "atlas", "ci", "测试"),
    _q("规划Postgres升级到16版", "atlas", "数据库", "postgres"),
    _q("把发票导出成CSV给财务团队", "atlas", "账单", "导出"),
    _q("用新的Helm配置把API部署到预发环境", "harbor", "部署", "kubernetes"),
    _q("检查每晚的数据库备份能不能正常恢复", "harbor", "备份"),
    _q("故障复盘会议前看一下延迟监控的Grafana看板", "harbor", "监控"),
    _q("Xcode Cloud上的iOS构建失败了", "lumen", "ios", "移动端"),
    _q("汇总TestFlight的崩溃报告", "lumen", "移动端"),
    _q("和设计师一起定深色模式的配色", "lumen", "设计"),
    _q("整理增值税申报要用的单据", "home", "财务"),
    _q("把牙医预约改到下个月", "home", "健康"),
    _q("长跑之后调整马拉松训练计划", "home", "健康"),
    _q("给安娜找一份生日礼物", "home", "杂事"),
    _q("订去柏林的火车票参加团建", None, "出行"),
    _q("谁负责这个迭代积压的代码评审？", "atlas", "评审"),
)

#: Each correction, and the index of the query it exists for.
CORRECTION_QUERIES_ZH: Mapping[str, int] = {f"correction-{n:03d}": n - 1 for n in range(1, 11)}


def load_sample_store_zh() -> list[dict[str, Any]]:
    """Return the entries of the Chinese sample store shipped in ``poolsplit_core/data``.

    >>> len(load_sample_store_zh()) >= 500
    True
    """
    return read_shipped_store("sample_store_zh.jsonl")


def fresh_entries_zh(n: int, now: datetime = DEMO_NOW) -> list[dict[str, Any]]:
    """Return ``n`` fresh, high-priority entries that repeat the demo's queries.

    >>> [(e["id"], e["type"]) for e in fresh_entries_zh(2)]
    [('fresh-001', 'task'), ('fresh-002', 'note')]
    """
    return fresh_entries(n, now, queries=DEMO_QUERIES_ZH, update="今天同步会的更新：")


def _prepare(entries: Sequence[Mapping[str, Any]], method: str, reader: str) -> PreparedStore:
    return prepare(entries, method, scorer=READERS[reader], token_counter=cjk_token_counter)


def _loaded(store: PreparedStore, query: Mapping[str, Any], method: str) -> list[Mapping[str, Any]]:
    return _loaded_from(store, query, method, DEMO_NOW)


def type_load_counts_zh(entries: Sequence[Mapping[str, Any]], method: str,
                        reader: str = "unicode") -> dict[str, int]:
    """Count, per type, the queries on which that type loaded at all."""
    store = _prepare(entries, method, reader)
    counts = {kind: 0 for kind in TYPES}
    for query in DEMO_QUERIES_ZH:
        for kind in {entry.get("type", "note") for entry in _loaded(store, query, method)}:
            counts[kind] = counts.get(kind, 0) + 1
    return counts


def most_relevant(entries: Sequence[Mapping[str, Any]],
                  query: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The active contextual entries sharing the most of the query's words (ties all kept).

    Words are read with :func:`~poolsplit_core.multilingual.unicode_words`.
    Empty when no entry shares a word.
    """
    wanted = unicode_words(str(query.get("message") or ""))
    best: list[Mapping[str, Any]] = []
    best_shared = 0
    for entry in entries:
        if (entry.get("status", "active") != "active" or entry.get("superseded_by")
                or entry.get("scope") == "always"):
            continue
        shared = len(wanted & unicode_words(str(entry.get("content", ""))))
        if shared > best_shared:
            best, best_shared = [entry], shared
        elif shared == best_shared and shared:
            best.append(entry)
    return best


def relevance_hits(entries: Sequence[Mapping[str, Any]], reader: str,
                   message_only: bool = False) -> int:
    """On how many queries pool-split loads one of the query's most relevant entries.

    With ``message_only`` the queries keep their message and drop their
    project and tags, so that the words are the only thing the query says.
    """
    store = _prepare(entries, "split", reader)
    hits = 0
    for query in DEMO_QUERIES_ZH:
        targets = {id(entry) for entry in most_relevant(entries, query)}
        asked = {"message": query["message"]} if message_only else query
        if any(id(entry) in targets for entry in _loaded(store, asked, "split")):
            hits += 1
    return hits


def on_topic_counts(entries: Sequence[Mapping[str, Any]], reader: str) -> dict[str, list[int]]:
    """Per type, ``[on topic, loaded]``: pool-split's contextual loads over the queries.

    An entry is on topic when its content holds over 15% of the query's words
    (read with :func:`~poolsplit_core.multilingual.unicode_words`): the share at
    which the message factor starts to raise a score.
    """
    store = _prepare(entries, "split", reader)
    counts = {kind: [0, 0] for kind in TYPES}
    for query in DEMO_QUERIES_ZH:
        wanted = unicode_words(str(query["message"]))
        for entry in _loaded(store, query, "split"):
            if entry.get("scope") == "always":
                continue
            shared = len(wanted & unicode_words(str(entry.get("content", ""))))
            tally = counts.setdefault(str(entry.get("type", "note")), [0, 0])
            tally[0] += shared / len(wanted) > 0.15
            tally[1] += 1
    return counts


def _correction_loads(entries: Sequence[Mapping[str, Any]], method: str) -> dict[str, bool]:
    store = _prepare(entries, method, "unicode")
    return {cid: cid in {e.get("id") for e in _loaded(store, DEMO_QUERIES_ZH[i], method)}
            for cid, i in CORRECTION_QUERIES_ZH.items()}


def run_demo_zh(burst: int = 200) -> dict[str, Any]:
    """Run the Chinese experiment; return plain, JSON-ready data."""
    store = load_sample_store_zh()
    loud_store = store + fresh_entries_zh(burst)
    corrections = {e["id"]: e for e in store if e.get("type") == "correction"}
    quiet = {m: _correction_loads(store, m) for m in METHODS}
    loud = {m: _correction_loads(loud_store, m) for m in METHODS}
    counts = {(m, r): type_load_counts_zh(store, m, r) for m in METHODS for r in READERS}
    return {
        "now": DEMO_NOW.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "store_entries": len(store),
        "queries": len(DEMO_QUERIES_ZH),
        "types": {kind: {f"{m}_{r}": counts[m, r][kind] for m in METHODS for r in READERS}
                  for kind in TYPES},
        "relevance": {
            "context": {r: relevance_hits(store, r) for r in READERS},
            "message_only": {r: relevance_hits(store, r, message_only=True) for r in READERS},
        },
        "on_topic": {r: on_topic_counts(store, r) for r in READERS},
        "burst": {
            "fresh_entries": burst,
            "corrections": [{
                "id": cid, "content": corrections[cid]["content"],
                "query": DEMO_QUERIES_ZH[i]["message"],
                **{f"{m}_{when}": loads[m][cid] for m in METHODS
                   for when, loads in (("quiet", quiet), ("burst", loud))},
            } for cid, i in CORRECTION_QUERIES_ZH.items()],
        },
    }


def format_report_zh(report: Mapping[str, Any]) -> str:
    """Render :func:`run_demo_zh`'s data as the text ``poolsplit demo --lang zh`` prints."""
    n = report["queries"]
    lines = [
        f"poolsplit demo --lang zh: {report['store_entries']} entries of the Chinese sample"
        f" store, {n} queries, now = {report['now']}",
        "scored with make_scorer(words=unicode_words), measured with cjk_token_counter;"
        " pools as in 'poolsplit demo'",
        "",
        f"Queries on which each type loaded at all (of {n}); single budget: scope ignored,"
        " one pool: the",
        "same budget with the always tier kept (the fair baseline):",
        "",
    ]
    rows: list[tuple[str, ...]] = [
        ("type", "single budget", "", "one pool", "", "pool-split", ""),
        ("", "unicode", "ascii", "unicode", "ascii", "unicode", "ascii")]
    for kind, c in report["types"].items():
        rows.append((kind, *(f"{c[f'{m}_{r}']}/{n}" for m in METHODS for r in READERS)))
    lines += ["  " + line for line in table(rows, spans={1: 2, 3: 2, 5: 2})]
    rel, topic = report["relevance"], report["on_topic"]
    lines += [
        "",
        "Lexical relevance, pool-split. On how many queries does an entry sharing the most",
        "of the query's words (of those the store holds) load?",
        "",
        *("  " + line for line in table([
            ("word reader", "message, project, tags", "message only"),
            *((label, f"{rel['context'][r]}/{n}", f"{rel['message_only'][r]}/{n}")
              for r, label in (("unicode", "unicode_words"), ("ascii", "default (ASCII only)"))),
        ], right={1, 2})),
        "",
        "Loaded entries on topic (holding over 15% of the query's words), per type:",
        "",
        *("  " + line for line in table([
            ("type", "unicode_words", "default (ASCII only)"),
            *((kind, *(f"{topic[r][kind][0]}/{topic[r][kind][1]}" for r in ("unicode", "ascii")))
              for kind in TYPES if kind != "correction"),
        ], right={1, 2})),
    ]
    burst = report["burst"]
    lines += [
        "",
        f"Burst: {plural(burst['fresh_entries'], 'fresh entry', 'fresh entries')} arrive"
        " (created now, base_priority 9, matching the queries).",
        "Does each correction load on the query it exists for?",
        "",
    ]
    keys = [f"{m}_{when}" for m in METHODS for when in ("quiet", "burst")]
    rows = [("correction", "single budget", "", "one pool", "", "pool-split", ""),
            ("", *("quiet", "burst") * len(METHODS))]
    for c in burst["corrections"]:
        rows.append((shorten(c["content"], 30), *("yes" if c[key] else "NO" for key in keys)))
    count = len(burst["corrections"])
    loaded = {key: sum(c[key] for c in burst["corrections"]) for key in keys}
    rows.append(("loaded", *(f"{loaded[key]}/{count}" for key in keys)))
    lines += ["  " + line for line in table(rows, spans={1: 2, 3: 2, 5: 2})]
    lines += [
        "",
        f"One pool keeps {loaded['one_pool_burst']}/{count} corrections through the burst, as"
        f" pool-split keeps {loaded['split_burst']}/{count}:",
        "that is the always tier alone; what the pools add is the other types (first table).",
    ]
    return "\n".join(lines) + "\n"
