"""The demo's experiment: one shared budget against pool-split, on the shipped store.

``poolsplit demo`` and ``notebooks/01_starvation.ipynb`` both run what is
defined here, so the command line and the notebook can never disagree.

Three ways to assemble context for each of :data:`DEMO_QUERIES`, with the
same total budget (:data:`TOTAL_TOKENS` tokens, :data:`TOTAL_ENTRIES` entries),
named in :data:`METHODS`:

- ``"single"`` (**single budget**, scope ignored): one scorer, one budget, no
  always tier -- the naive approach. One pool takes every type, and every
  entry is contextual: the store is read through :func:`scope_blind`, which
  drops the ``scope`` key, because the core would otherwise load
  ``scope="always"`` entries outside the budget here too. Its correction
  numbers are low by construction;
- ``"one_pool"`` (**one pool**, always tier kept): the fair baseline, the
  core's own :meth:`~poolsplit_core.prepared.PreparedStore.retrieve_pools`
  with the same one pool (:data:`SINGLE_POOL`) on the store as it is, so
  corrections load first, outside the budget, exactly as under pool-split.
  Corrections load on every query by construction; what it shows is that
  the rest of the budget still starves skill and growth;
- ``"split"`` (**pool-split**): :data:`SPLIT_POOLS`, one pool per type whose
  budgets add up to the same totals, with corrections loaded first through
  their ``scope="always"``.

>>> store = load_sample_store()
>>> single = type_load_counts(store, "single")
>>> fair = type_load_counts(store, "one_pool")
>>> split = type_load_counts(store, "split")
>>> split["growth"] == len(DEMO_QUERIES) > fair["growth"] == single["growth"]
True
>>> fair["correction"] == len(DEMO_QUERIES) > single["correction"]
True

"Loaded at all" is not relevance: :func:`best_entry_counts` also counts, per
type, the queries on which the type's best entry for the query loaded (its
highest-scored active entry, see :func:`best_entries`).

The burst test adds :func:`fresh_entries` -- new, high-priority entries that
match the queries -- and checks each correction on the query it exists for
(:data:`CORRECTION_QUERIES`), under all three methods: the fair baseline
keeps every correction too, so that part is the always tier's, and what the
pools add shows in the other types' best entries, quiet and after the burst
(:func:`plan_comparison`). There the pools :func:`~poolsplit_core.plan.plan_pools`
chooses from the same total stand beside the hand-made ones, with whether
they reach :data:`PLAN_TARGETS` and, where not, why.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from importlib import resources
from typing import Any

from poolsplit_core._plain import pool_to_data
from poolsplit_core._text import plural, shorten, table
from poolsplit_core.plan import Rate, best_entry_coverage, coverage, plan_pools
from poolsplit_core.poolsplit import (
    ActivityTest,
    Pool,
    Scorer,
    TokenCounter,
    default_is_active,
    default_scorer,
    default_token_counter,
)
from poolsplit_core.prepared import PreparedStore

__all__ = [
    "BURST_SIZE",
    "CORRECTION_QUERIES",
    "DEMO_NOW",
    "DEMO_QUERIES",
    "METHODS",
    "PLAN_TARGETS",
    "SINGLE_POOL",
    "SPLIT_POOLS",
    "TOTAL_ENTRIES",
    "TOTAL_TOKENS",
    "TYPES",
    "best_entries",
    "best_entry_counts",
    "correction_loads",
    "format_report",
    "fresh_entries",
    "load_sample_store",
    "loaded",
    "plan_comparison",
    "run_demo",
    "scope_blind",
    "type_load_counts",
]

#: The fixed "now" of every demo run, so its output never changes.
DEMO_NOW = datetime(2026, 11, 1, tzinfo=timezone.utc)

#: The entry types of the sample store, in display order.
TYPES = ("correction", "task", "fact", "preference", "procedure", "note", "skill", "growth")

#: How many fresh entries the demo's burst test adds.
BURST_SIZE = 200

#: The three methods compared, as named in reports (and keys of its JSON):
#: the naive single budget (scope ignored), the fair one pool (always tier
#: kept), pool-split.
METHODS = ("single", "one_pool", "split")


#: What the planned pools should reach on the demo's queries, with the same total budget:
#: every type's best entry on this share of the queries, quiet and after the burst (and
#: every correction on all of them). The demo prints whether they do, and why not.
PLAN_TARGETS: Mapping[str, float] = {"quiet": 0.95, "burst": 0.9}


def _q(message: str, project: Any, *tags: str) -> dict[str, Any]:
    return {"message": message, "project": project, "tags": list(tags)}


#: The demo's queries: what the user says, with the project and tags at hand.
DEMO_QUERIES: Sequence[Mapping[str, Any]] = (
    _q("Push the hotfix for the invoice rounding bug straight to main", "atlas", "release", "git"),
    _q("Is the rate limit fix done? Can I tell the team it is finished?", "atlas", "testing"),
    _q("Run the invoices table migration on production tonight", "atlas", "database"),
    _q("Clean up old build files on the laptop disk to free space", "home", "errands"),
    _q("Send the staging API key to the contractor in chat", "harbor", "security"),
    _q("Draft the email to the accountant about the quarterly taxes", "home", "finance"),
    _q("Book a meeting with the design team about the onboarding screens", "lumen", "meetings"),
    _q("Propose a call time with Maya in Lisbon next week", None, "travel"),
    _q("Write the commit message for the rate limit fix", "atlas", "git"),
    _q("The disk usage alert stopped, tell on-call the incident is resolved", "harbor", "oncall"),
    _q("What is left on the release notes for version 2.4?", "atlas", "release"),
    _q("Why are the integration tests flaky on CI again?", "atlas", "ci", "testing"),
    _q("Plan the Postgres upgrade to version 16", "atlas", "database", "postgres"),
    _q("Export the invoices to CSV for the finance team", "atlas", "billing", "export"),
    _q("Deploy the API to staging with the new Helm chart", "harbor", "deploy", "kubernetes"),
    _q("Check that the nightly database backups restore cleanly", "harbor", "backups"),
    _q("Review the Grafana latency dashboard before the incident review", "harbor", "monitoring"),
    _q("Rotate the staging keys in the secrets manager", "harbor", "security"),
    _q("The iOS build is failing on Xcode Cloud", "lumen", "ios", "mobile"),
    _q("Summarise the crash reports from TestFlight", "lumen", "mobile"),
    _q("Prepare for the App Store review of the new version", "lumen", "ios"),
    _q("Pick the dark mode colours with the designer", "lumen", "design"),
    _q("Collect the receipts for the VAT return", "home", "finance"),
    _q("Move the dentist appointment to next month", "home", "health"),
    _q("Adjust the marathon training plan after the long run", "home", "health"),
    _q("Add coffee and oats to the grocery list", "home", "errands"),
    _q("Find a birthday gift for Ana", "home", "errands"),
    _q("Book the train to Berlin for the offsite", None, "travel"),
    _q("Finish the slides for the conference talk in Lisbon", None, "travel"),
    _q("Who owns the code review backlog this sprint?", "atlas", "review"),
    _q("Upgrade the Kubernetes cluster on harbor", "harbor", "kubernetes"),
    _q("Send the invoice to the client in Lyon", "home", "finance"),
)

#: Each correction of the sample store, and the index of the demo query it
#: exists for -- the moment the agent is about to repeat the mistake.
CORRECTION_QUERIES: Mapping[str, int] = {
    "correction-001": 0,
    "correction-002": 1,
    "correction-003": 2,
    "correction-004": 3,
    "correction-005": 4,
    "correction-006": 5,
    "correction-007": 6,
    "correction-008": 7,
    "correction-009": 8,
    "correction-010": 9,
}

#: Pool-split: one pool per type. Corrections get no budget at all: they load
#: through ``scope="always"``, outside every budget.
SPLIT_POOLS: Sequence[Pool] = (
    Pool("corrections", max_tokens=0, max_entries=0, types=("correction",)),
    Pool("tasks", max_tokens=300, max_entries=3, types=("task",)),
    Pool("facts", max_tokens=250, max_entries=3, types=("fact",)),
    Pool("preferences", max_tokens=150, max_entries=2, types=("preference",)),
    Pool("procedures", max_tokens=250, max_entries=2, types=("procedure",)),
    Pool("notes", max_tokens=250, max_entries=2, types=("note",)),
    Pool("skills", max_tokens=100, max_entries=1, types=("skill",)),
    Pool("growth", max_tokens=100, max_entries=1, types=("growth",)),
)

#: The shared total both methods get.
TOTAL_TOKENS = sum(pool.max_tokens for pool in SPLIT_POOLS)
TOTAL_ENTRIES = sum(pool.max_entries for pool in SPLIT_POOLS)

#: The single budget: one pool, every type, the same totals. The naive
#: ``"single"`` method and the fair ``"one_pool"`` method both use it.
SINGLE_POOL = Pool("all", max_tokens=TOTAL_TOKENS, max_entries=TOTAL_ENTRIES)


def load_sample_store() -> list[dict[str, Any]]:
    """Return the entries of the sample store shipped in ``poolsplit_core/data``.

    >>> len(load_sample_store()) >= 300
    True
    """
    return read_shipped_store("sample_store.jsonl")


def read_shipped_store(name: str) -> list[dict[str, Any]]:
    """Read a JSON Lines store shipped in ``poolsplit_core/data``."""
    path = resources.files("poolsplit_core") / "data" / name
    text = path.read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def scope_blind(entries: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Copy entries without their ``scope``: how a single-scorer system sees them.

    >>> scope_blind([{"id": "c", "scope": "always"}])
    [{'id': 'c'}]

    The input entries are not changed.
    """
    return [{k: v for k, v in entry.items() if k != "scope"} for entry in entries]


def fresh_entries(
    n: int,
    now: datetime = DEMO_NOW,
    *,
    queries: Sequence[Mapping[str, Any]] = DEMO_QUERIES,
    update: str = "Update from today's sync: ",
) -> list[dict[str, Any]]:
    """Return ``n`` fresh, high-priority entries that match the demo's queries.

    >>> [(e["id"], e["type"], e["base_priority"]) for e in fresh_entries(2)]
    [('fresh-001', 'task', 9), ('fresh-002', 'note', 9)]

    Entry ``k`` repeats the words of query ``k mod len(queries)`` after
    ``update``, with its project and tags, created at ``now``: the kind of
    burst a meeting transcript import or a busy morning produces.
    """
    stamp = now.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    out = []
    for k in range(n):
        query = queries[k % len(queries)]
        out.append({
            "id": f"fresh-{k + 1:03d}",
            "type": "task" if k % 2 == 0 else "note",
            "content": f"{update}{query['message']}",
            "base_priority": 9,
            "project": query["project"],
            "tags": list(query["tags"]),
            "created": stamp,
        })
    return out


def loaded(
    entries: Sequence[Mapping[str, Any]],
    query: Mapping[str, Any],
    method: str,
    now: datetime = DEMO_NOW,
) -> list[Mapping[str, Any]]:
    """Return the entries one method loads for one query, in load order.

    ``method`` is ``"single"`` (one scorer, one budget, no always tier),
    ``"one_pool"`` (the same one pool, corrections always first) or
    ``"split"`` (:data:`SPLIT_POOLS`, corrections always first).
    """
    return _loaded_from(prepare(entries, method), query, method, now)


def as_seen(entries: Sequence[Mapping[str, Any]], method: str) -> Sequence[Mapping[str, Any]]:
    """The entries as one method sees them: :func:`scope_blind` copies for ``"single"``."""
    if method == "single":
        return scope_blind(entries)
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    return list(entries)


def prepare(
    entries: Sequence[Mapping[str, Any]],
    method: str,
    *,
    scorer: Scorer = default_scorer,
    token_counter: TokenCounter = default_token_counter,
) -> PreparedStore:
    """The store one method queries, prepared once for all the demo's queries."""
    return PreparedStore(as_seen(entries, method), scorer=scorer, token_counter=token_counter)


def _loaded_from(
    store: PreparedStore, query: Mapping[str, Any], method: str, now: datetime
) -> list[Mapping[str, Any]]:
    return _loaded_with(store, query, SPLIT_POOLS if method == "split" else [SINGLE_POOL], now)


def _loaded_with(
    store: PreparedStore, query: Mapping[str, Any], pools: Sequence[Pool], now: datetime
) -> list[Mapping[str, Any]]:
    picked = store.retrieve_pools(pools, query, now=now)
    return [entry for pool in pools for entry in picked[pool.name]]


def type_load_counts(
    entries: Sequence[Mapping[str, Any]], method: str, now: datetime = DEMO_NOW
) -> dict[str, int]:
    """Count, per type, the demo queries on which that type loaded at all."""
    store = prepare(entries, method)
    counts = {kind: 0 for kind in TYPES}
    for query in DEMO_QUERIES:
        picked = _loaded_from(store, query, method, now)
        for kind in {entry.get("type", "note") for entry in picked}:
            counts[kind] = counts.get(kind, 0) + 1
    return counts


def best_entries(
    entries: Sequence[Mapping[str, Any]],
    query: Mapping[str, Any] | None,
    now: datetime = DEMO_NOW,
    *,
    scorer: Scorer = default_scorer,
    is_active: ActivityTest = default_is_active,
) -> dict[str, int]:
    """Per type, the index in ``entries`` of its best entry for ``query``.

    The best entry is the type's highest-scored active entry (``scope`` plays
    no part), ties broken as retrieval breaks them: older ``created``, then
    smaller ``id``, then input order.

    >>> store = [{"id": "a", "type": "skill", "content": "xcode build"},
    ...          {"id": "b", "type": "skill", "content": "tax return"}]
    >>> best_entries(store, {"message": "the tax return"})
    {'skill': 1}
    """
    best: dict[str, tuple[Any, ...]] = {}
    for i, entry in enumerate(entries):
        if not is_active(entry):
            continue
        key = (-scorer(entry, query, now=now), _sort_text(entry, "created"),
               _sort_text(entry, "id"), i)
        kind = str(entry.get("type", "note"))
        if kind not in best or key < best[kind]:
            best[kind] = key
    return {kind: key[-1] for kind, key in best.items()}


def _sort_text(entry: Mapping[str, Any], key: str) -> str:
    value = entry.get(key)
    if value is None:
        return ""
    return value.isoformat() if isinstance(value, datetime) else str(value)


def best_entry_counts(
    entries: Sequence[Mapping[str, Any]],
    method: str,
    now: datetime = DEMO_NOW,
    *,
    queries: Sequence[Mapping[str, Any]] = DEMO_QUERIES,
) -> dict[str, int]:
    """Count, per type, the queries on which the type's best entry loaded.

    The best entry is :func:`best_entries`' (default scorer, at ``now``); a
    type that loads some other entry of its type does not count.
    """
    seen = as_seen(entries, method)
    store = PreparedStore(seen)
    counts = {kind: 0 for kind in TYPES}
    for query in queries:
        picked = {id(entry) for entry in _loaded_from(store, query, method, now)}
        for kind, i in best_entries(entries, query, now).items():
            counts[kind] = counts.get(kind, 0) + (id(seen[i]) in picked)
    return counts


def correction_loads(
    entries: Sequence[Mapping[str, Any]], method: str, now: datetime = DEMO_NOW
) -> dict[str, bool]:
    """Say, per correction, whether it loads on the query it exists for."""
    return _corrections_loaded(prepare(entries, method),
                               SPLIT_POOLS if method == "split" else [SINGLE_POOL], now)


def _corrections_loaded(store: PreparedStore, pools: Sequence[Pool],
                        now: datetime = DEMO_NOW) -> dict[str, bool]:
    out = {}
    for cid, index in CORRECTION_QUERIES.items():
        picked = _loaded_with(store, DEMO_QUERIES[index], pools, now)
        out[cid] = cid in {entry.get("id") for entry in picked}
    return out


def run_demo(
    burst: int = BURST_SIZE, store: Sequence[Mapping[str, Any]] | None = None
) -> dict[str, Any]:
    """Run the whole experiment on the sample store; return plain, JSON-ready data.

    ``store`` replaces the shipped sample store's entries (``poolsplit demo
    --postgres`` passes them as read back from PostgreSQL).
    """
    store = load_sample_store() if store is None else [dict(entry) for entry in store]
    burst_store = store + fresh_entries(burst)
    corrections = {e["id"]: e for e in store if e.get("type") == "correction"}
    quiet = {m: correction_loads(store, m) for m in METHODS}
    loud = {m: correction_loads(burst_store, m) for m in METHODS}
    loads = {m: type_load_counts(store, m) for m in METHODS}
    best = {m: best_entry_counts(store, m) for m in METHODS}
    return {
        "now": DEMO_NOW.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "store_entries": len(store),
        "queries": len(DEMO_QUERIES),
        "budget": {"tokens": TOTAL_TOKENS, "entries": TOTAL_ENTRIES},
        "methods": list(METHODS),
        "single_pool": pool_to_data(SINGLE_POOL),
        "split_pools": [pool_to_data(pool) for pool in SPLIT_POOLS],
        "types": {kind: {m: loads[m][kind] for m in METHODS} for kind in TYPES},
        "best_entry": {kind: {m: best[m][kind] for m in METHODS} for kind in TYPES},
        "plan": plan_comparison(store, burst_store),
        "burst": {
            "fresh_entries": burst,
            "corrections": [
                {
                    "id": cid,
                    "content": corrections[cid]["content"],
                    "query": DEMO_QUERIES[index]["message"],
                    **{f"{m}_{when}": loads[m][cid] for m in METHODS
                       for when, loads in (("quiet", quiet), ("burst", loud))},
                }
                for cid, index in CORRECTION_QUERIES.items()
            ],
        },
    }


def plan_comparison(store: Sequence[Mapping[str, Any]],
                    burst_store: Sequence[Mapping[str, Any]] | None = None) -> dict[str, Any]:
    """The hand-made :data:`SPLIT_POOLS` against :func:`~poolsplit_core.plan.plan_pools`' pools.

    The planner gets :data:`TOTAL_TOKENS` with the always tier *inside* it
    (the hand-made split loads its corrections on top), plans on three
    quarters of :data:`DEMO_QUERIES` and keeps every fourth aside. Both, and
    the fair baseline's one pool, are then measured on all the queries: per
    type, on how many its best-ranked entry for the query loaded; with
    ``burst_store`` (the store after the burst) also there, with the same
    pools. ``target`` says whether the planned pools reach
    :data:`PLAN_TARGETS`, and where they do not, why: per type short of it,
    how its best entries missed (:func:`~poolsplit_core.plan.coverage`), and
    the smallest total with which one pool per type reaches it on these
    queries (``tokens_needed``, the planner's ``tokens_for_target``).
    """
    plan = plan_pools(store, DEMO_QUERIES, TOTAL_TOKENS, target=PLAN_TARGETS["quiet"],
                      now=DEMO_NOW)
    stores = {"quiet": store, **({"burst": burst_store} if burst_store is not None else {})}
    pools = {"one_pool": [SINGLE_POOL], "hand": list(SPLIT_POOLS), "planned": list(plan.pools)}
    prepared = {when: PreparedStore(entries) for when, entries in stores.items()}
    rates = {(name, when): best_entry_coverage(prepared[when], chosen, DEMO_QUERIES,
                                               now=DEMO_NOW)
             for name, chosen in pools.items() for when in stores}
    suffix = {"quiet": "", "burst": "_burst"}
    kinds = list(rates["hand", "quiet"])
    return {
        "total_tokens": TOTAL_TOKENS,
        "always_tokens": plan.always_tokens,
        "planning_queries": plan.planning_queries,
        "held_out_queries": plan.held_out_queries,
        "planned_pools": [pool_to_data(pool) for pool in plan.pools],
        "best_entry": {kind: {f"{name}{suffix[when]}": rates[name, when][kind].hits
                              for name in pools for when in stores} for kind in kinds},
        "target": {when: _target_check(stores[when], prepared[when], plan.pools,
                                       rates["planned", when], PLAN_TARGETS[when])
                   for when in stores},
    }


def _target_check(store: Sequence[Mapping[str, Any]], prepared: PreparedStore,
                  pools: Sequence[Pool], rates: Mapping[str, Rate],
                  share: float) -> dict[str, Any]:
    """Whether the planned pools reach ``share`` for every type and correction; why not."""
    n = len(DEMO_QUERIES)
    need = math.ceil(share * n - 1e-9)
    corrections = _corrections_loaded(prepared, pools)
    short = sorted((kind for kind, rate in rates.items() if rate.hits < need),
                   key=lambda kind: (rates[kind].hits, kind))
    out: dict[str, Any] = {
        "share": share, "need": need,
        "lowest": min(rate.hits for rate in rates.values()),
        "corrections": sum(corrections.values()), "of": len(corrections),
        "reached": not short and all(corrections.values()),
        "short": [], "tokens_needed": None,
    }
    if short:
        report = coverage(prepared, pools, DEMO_QUERIES, now=DEMO_NOW)
        out["short"] = [{"type": kind, "hits": rates[kind].hits,
                         "missed": dict(report.types[kind].missed),
                         "tokens_short": report.types[kind].tokens_short} for kind in short]
        out["tokens_needed"] = plan_pools(prepared, DEMO_QUERIES, TOTAL_TOKENS, target=share,
                                          holdout=0, now=DEMO_NOW).tokens_for_target
    return out


def format_plan_comparison(data: Mapping[str, Any], n: int,
                           hand_pools: Sequence[Mapping[str, Any]] = (),
                           burst: int | None = None) -> list[str]:
    """The demo's lines comparing one pool, the hand-made split and the planned pools.

    A table of each type's best entry loaded under the three (quiet, and
    after the burst when the data has it), then, with ``hand_pools`` (the
    report's ``split_pools``), a sentence saying what the planner changed,
    and whether the planned pools reach :data:`PLAN_TARGETS`, or why not.
    """
    best = data["best_entry"]
    whens = ("quiet", "burst") if "target" in data and "burst" in data["target"] else ("quiet",)
    suffix = {"quiet": "", "burst": "_burst"}
    after = f"after the burst of {burst} fresh entries" if burst is not None else "after the burst"
    title = (f"Best entry loaded (of {n}), quiet" + (f" and {after}" if len(whens) > 1 else "")
             + f": one pool, the hand-made split, and the pools plan_pools chooses (planned:"
             f" the same {data['total_tokens']} tokens with the {data['always_tokens']}-token"
             f" always tier inside, planned on the quiet store, on {data['planning_queries']}"
             f" of the queries, {data['held_out_queries']} held out):")
    lines = ["", *_wrap("", title), ""]
    names = (("one_pool", "one pool"), ("hand", "hand-made"), ("planned", "planned"))
    rows: list[tuple[str, ...]] = [("type", *(c for _, label in names
                                              for c in (label, *[""] * (len(whens) - 1))))]
    if len(whens) > 1:
        rows.append(("", *(when for _ in names for when in whens)))
    for kind, c in best.items():
        rows.append((kind, *(f"{c[name + suffix[w]]}/{n}" for name, _ in names for w in whens)))
    rows.append(("lowest", *(f"{min(c[name + suffix[w]] for c in best.values())}/{n}"
                             for name, _ in names for w in whens)))
    spans = {1 + len(whens) * i: len(whens) for i in range(len(names))} if len(whens) > 1 else None
    lines += ["  " + line for line in table(rows, spans=spans)]
    if hand_pools:
        lines += ["", *_wrap("", _plan_sentence(data, hand_pools))]
    if "target" in data:
        lines += ["", *_target_lines(data["target"], n)]
    return lines


def _target_lines(target: Mapping[str, Mapping[str, Any]], n: int) -> list[str]:
    """Whether the planned pools reach :data:`PLAN_TARGETS`; where not, why."""
    quiet = target["quiet"]
    goal = (f"Target for the planned pools: every type's best entry on at least"
            f" {quiet['share']:.0%} of the queries ({quiet['need']} of {n})")
    if "burst" in target:
        goal += (f", {target['burst']['share']:.0%} after the burst ({target['burst']['need']}"
                 f" of {n})")
    lines = _wrap("", goal + ", every correction on its own query.")
    for when, t in target.items():
        said = "quiet" if when == "quiet" else "after the burst"
        fixes = f"corrections {t['corrections']}/{t['of']}"
        if t["reached"]:
            lines += _wrap("  ", f"{said}: reached (lowest type {t['lowest']}/{n}, {fixes}).")
            continue
        if not t["short"]:
            lines += _wrap("  ", f"{said}: not reached: {fixes}.")
            continue
        missed = ", ".join(f"{s['type']} {s['hits']}/{n}" for s in t["short"])
        why = "; ".join(_miss_reason(s) for s in t["short"])
        lines += _wrap("  ", f"{said}: not reached ({missed}; {fixes}). Why: {why}. With one"
                       f" pool per type the target needs {t['tokens_needed']} tokens in total"
                       f" (plan_pools' smallest total on these {n} queries), not"
                       f" {TOTAL_TOKENS}.")
    return lines


def _miss_reason(short: Mapping[str, Any]) -> str:
    """Why one type's best entry missed: for lack of tokens (by how much), a full pool, no pool."""
    missed = short["missed"]
    parts = []
    if missed.get("over_tokens"):
        parts.append(f"did not fit on {plural(missed['over_tokens'], 'query', 'queries')}"
                     + (f" (short by {short['tokens_short']} tokens, median)"
                        if short["tokens_short"] is not None else ""))
    if missed.get("over_entries"):
        parts.append(f"found its pool full on {plural(missed['over_entries'], 'query', 'queries')}")
    if missed.get("no_pool"):
        parts.append(f"had no pool on {plural(missed['no_pool'], 'query', 'queries')}")
    return f"{short['type']}'s best entry " + ", ".join(parts)


def _plan_sentence(data: Mapping[str, Any], hand_pools: Sequence[Mapping[str, Any]]) -> str:
    def tokens(pools: Sequence[Mapping[str, Any]]) -> dict[str, int]:
        return {t: p["max_tokens"] for p in pools if len(p.get("types") or ()) == 1
                for t in p["types"]}

    def listed(kinds: list[str]) -> str:
        return ", ".join(kinds[:-1]) + " and " + kinds[-1] if len(kinds) > 1 else "".join(kinds)

    hand, planned = tokens(hand_pools), tokens(data["planned_pools"])
    kinds = [k for k in data["best_entry"] if k in hand and k in planned]
    more = [k for k in kinds if planned[k] > hand[k]]
    less = [k for k in kinds if planned[k] < hand[k]]
    up = [k for k, c in data["best_entry"].items() if c["planned"] > c["hand"]]
    down = [k for k, c in data["best_entry"].items() if c["planned"] < c["hand"]]
    said = (f"Why planned and hand-made differ: plan_pools moved tokens from"
            f" {listed(less) or 'no type'}"
            f" (and counted the {data['always_tokens']}-token always tier inside the same"
            f" {data['total_tokens']}) to {listed(more) or 'no type'}")
    if up:
        said += f", so best entries load more often for {listed(up)}"
        if down:
            said += f" and less often for {listed(down)}"
    return said + "."


def _wrap(indent: str, text: str, width: int = 96) -> list[str]:
    lines, line = [], ""
    for word in text.split():
        if line and len(indent) + len(line) + 1 + len(word) > width:
            lines.append(indent + line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    return [*lines, indent + line] if line else lines


def _method_table(counts: Mapping[str, Mapping[str, int]], n: int) -> list[str]:
    rows: list[tuple[str, ...]] = [("type", "single budget", "one pool", "pool-split"),
                                   ("", "scope ignored", "always tier kept", "")]
    for kind, row in counts.items():
        rows.append((kind, *(f"{row[m]}/{n}" for m in METHODS)))
    return ["  " + line for line in table(rows)]


def format_report(report: Mapping[str, Any]) -> str:
    """Render :func:`run_demo`'s data as the aligned text ``poolsplit demo`` prints."""
    n = report["queries"]
    budget = report["budget"]
    lines = [
        f"poolsplit demo: {report['store_entries']} entries of the sample store,"
        f" {n} queries, now = {report['now']}",
        "",
        f"single budget  one scorer, one budget, no always tier: one pool of"
        f" {plural(budget['tokens'], 'token')} / {plural(budget['entries'], 'entry', 'entries')}",
        "               for every type; corrections ranked like any entry (scope ignored)",
        "one pool       the same one pool, always tier kept: corrections (scope=always) load",
        "               first, outside the budget, as under pool-split (the fair baseline)",
        "pool-split     one pool per type, same totals (tokens/entries):",
        "               " + ", ".join(
            f"{p['name']} {p['max_tokens']}/{p['max_entries']}"
            for p in report["split_pools"][:4]
        ) + ",",
        "               " + ", ".join(
            f"{p['name']} {p['max_tokens']}/{p['max_entries']}"
            for p in report["split_pools"][4:]
        ),
        "               corrections (scope=always) load first, outside every budget",
        "",
        f"Queries on which each type loaded at all (of {n}):",
        "",
    ]
    lines += _method_table(report["types"], n)
    if "best_entry" in report:
        lines += [
            "",
            f"Queries on which each type's best entry loaded (of {n}): its highest-scored"
            " active entry",
            "for the query (default scorer), not just any entry of the type:",
            "",
        ]
        lines += _method_table(report["best_entry"], n)
        lines += ["", *_wrap("", _parts_sentence(report["best_entry"], n))]

    burst = report["burst"]
    lines += [
        "",
        f"Burst: {plural(burst['fresh_entries'], 'fresh entry', 'fresh entries')} arrive"
        " (created now, base_priority 9, matching the queries).",
        "Does each correction load on the query it exists for?",
        "",
    ]
    keys = [f"{m}_{when}" for m in METHODS for when in ("quiet", "burst")]
    rows: list[tuple[str, ...]] = [
        ("correction", "single budget", "", "one pool", "", "pool-split", ""),
        ("", *("quiet", "burst") * len(METHODS))]
    for c in burst["corrections"]:
        rows.append((shorten(c["content"], 36), *("yes" if c[key] else "NO" for key in keys)))
    count = len(burst["corrections"])
    loaded = {key: sum(c[key] for c in burst["corrections"]) for key in keys}
    rows.append(("loaded", *(f"{loaded[key]}/{count}" for key in keys)))
    lines += ["  " + line for line in table(rows, spans={1: 2, 3: 2, 5: 2})]
    if "plan" in report and "one_pool_burst" in next(iter(report["plan"]["best_entry"].values())):
        lines += ["", *_wrap("", _burst_sentence(loaded, count, report["plan"]["best_entry"],
                                                  n))]
    if "plan" in report:
        lines += format_plan_comparison(report["plan"], n, report.get("split_pools", ()),
                                        burst["fresh_entries"])
    return "\n".join(lines) + "\n"


def _changes(before: Mapping[str, int], after: Mapping[str, int], n: int) -> str:
    """``kind a→b`` for each type whose count changed, largest change first."""
    moved = sorted((k for k in before if before[k] != after[k]),
                   key=lambda k: (-abs(after[k] - before[k]), list(before).index(k)))
    return ", ".join(f"{k} {before[k]}→{after[k]}" for k in moved) or "none"


def _parts_sentence(best: Mapping[str, Mapping[str, int]], n: int) -> str:
    """Which part of the best-entry table comes from the always tier, which from the pools."""
    single = {k: c["single"] for k, c in best.items()}
    fair = {k: c["one_pool"] for k, c in best.items()}
    split = {k: c["split"] for k, c in best.items()}
    rest = [k for k in best if k != "correction"]
    drift = max(abs(fair[k] - single[k]) for k in rest)
    return (f"What comes from where: from single budget to one pool only the always tier"
            f" changes (correction {single['correction']}→{fair['correction']}; every other"
            f" type moves by at most {plural(drift, 'query', 'queries')}, the budget the"
            f" corrections no longer take); from one pool to pool-split only the pools change"
            f" ({_changes({k: fair[k] for k in rest}, split, n)}).")


def _burst_sentence(loaded: Mapping[str, int], count: int,
                    best: Mapping[str, Mapping[str, int]], n: int) -> str:
    """What keeps the corrections through the burst (the always tier), and what the pools do."""
    fair = {k: c["one_pool_burst"] for k, c in best.items()}
    quiet = {k: c["one_pool"] for k, c in best.items()}
    lowest = {name: min(c[f"{name}_burst"] for c in best.values()) for name in ("hand", "planned")}
    return (f"What comes from where: one pool keeps {loaded['one_pool_burst']}/{count}"
            f" corrections through the burst, as pool-split keeps {loaded['split_burst']}/{count}:"
            f" that is the always tier alone. The pools keep the rest of the context: after the"
            f" burst one pool's best entries fall ({_changes(quiet, fair, n)}), while the lowest"
            f" type is at {lowest['hand']}/{n} under the hand-made split and"
            f" {lowest['planned']}/{n} under the planned pools (below).")
