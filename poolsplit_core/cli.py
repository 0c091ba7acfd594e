"""The ``poolsplit`` command: the demo, and pool-split retrieval on your own store.

Standard library only (``argparse``, ``json``); the engine is
:mod:`poolsplit_core.poolsplit`. Three commands::

    poolsplit demo [--json]
    poolsplit retrieve STORE (--pool SPEC [--pool SPEC ...] | --pools FILE.json)
                       --message TEXT [--project P] [--tag T ...] [--now ISO] [--json]
    poolsplit explain  STORE (same pool and context options) [--id ID] [--json]

``demo`` runs :mod:`poolsplit_core.demo` on the sample store shipped with the
package: per entry type, on how many of its queries the type loaded at all
under one shared budget and under pool-split, then whether each behavioural
correction still loads after a burst of fresh entries. The "single budget" is
the naive method poolsplit replaces -- one scorer, one budget, no always tier
-- so the corrections' ``scope`` is ignored there.

``retrieve`` fills the pools from ``STORE`` and prints, per pool, the loaded
entries (id, type, score, cost, always) in load order; ``explain`` prints each
pool's ledger, then why each entry (or only ``--id ID``) was or was not loaded.

Inputs:

- ``STORE``: a JSON file holding a list of objects, or JSON Lines (one object
  per line, blank lines skipped); the format is told from the first character.
- ``--pool NAME:MAX_TOKENS:MAX_ENTRIES[:TYPE,TYPE...]``, repeatable, in fill
  order; without types the pool takes every type. Example:
  ``--pool work:800:6:task,procedure,correction --pool skills:200:2:skill``.
- ``--pools FILE.json``: a JSON list of objects with the keys ``name``,
  ``max_tokens``, ``max_entries`` and, optionally, ``types`` (a list of
  strings, or null for every type).
- ``--now``: ISO-8601 (``2026-11-01``, ``2026-11-01T09:30:00Z``, an offset);
  a time without an offset is UTC; the default is the current time.

Bad input (a missing or unreadable file, a malformed JSON Lines line -- with
its line number --, an entry that is not an object, a bad pool spec, duplicate
pool names, an unparseable ``--now``, an unknown ``--id``, or anything the
core rejects) prints one line ``poolsplit: error: ...`` on stderr, writes
nothing on stdout and exits with status 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, NoReturn

from poolsplit_core.demo import format_report, run_demo
from poolsplit_core.poolsplit import Decision, Explanation, Ledger, Pool, __version__, explain_pools

__all__ = [
    "UsageError", "load_store", "main", "parse_now", "parse_pool_spec", "read_pools_file", "reason",
]


class UsageError(Exception):
    """Bad input from the command line; ``main`` prints it as one line, exit 2."""


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``poolsplit`` command with ``argv`` (default: ``sys.argv[1:]``).

    Args:
        argv: the arguments after the program name.

    Returns:
        The exit status: 0 on success, 2 on bad input (one line on stderr).
    """
    parser = _build_parser()
    try:
        args = parser.parse_args(argv)
        output = args.handler(args)
    except UsageError as exc:
        print(f"poolsplit: error: {exc}", file=sys.stderr)
        return 2
    except SystemExit as exc:  # --help and --version end here
        return exc.code if isinstance(exc.code, int) else 0
    sys.stdout.write(output)
    return 0


# --------------------------------------------------------------------------
# Parsing inputs
# --------------------------------------------------------------------------


def load_store(path: str) -> list[dict[str, Any]]:
    """Read a store: a JSON list of objects, or JSON Lines with one object per line.

    Args:
        path: the file to read (UTF-8).

    Returns:
        The entries, in file order.

    Raises:
        UsageError: the file is missing or unreadable, a line or the document
            is not valid JSON, or an entry is not a JSON object.
    """
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UsageError(f"store file not found: {path}") from None
    except IsADirectoryError:
        raise UsageError(f"store is a directory, not a file: {path}") from None
    except UnicodeDecodeError as exc:
        raise UsageError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    except OSError as exc:
        raise UsageError(f"cannot read store {path}: {exc.strerror}") from None

    if text.lstrip().startswith("["):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise UsageError(
                f"{path}: invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"
            ) from None
        if not isinstance(data, list):  # e.g. "[1] 2" is not even JSON; kept for safety
            raise UsageError(f"{path}: a JSON store must be a list of objects")
        for i, entry in enumerate(data):
            if not isinstance(entry, dict):
                raise UsageError(
                    f"{path}: entry {i} (0-based) must be a JSON object, got {_json_type(entry)}"
                )
        return data

    entries: list[dict[str, Any]] = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
        except json.JSONDecodeError as exc:
            if entries == [] and _is_one_json_value(text):
                raise UsageError(
                    f"{path}: holds a single JSON value over several lines; a store is a JSON"
                    " list of objects or JSON Lines (one object per line)"
                ) from None
            raise UsageError(
                f"{path} line {lineno}: invalid JSON: {exc.msg} (column {exc.colno})"
            ) from None
        if not isinstance(entry, dict):
            raise UsageError(
                f"{path} line {lineno}: an entry must be a JSON object, got {_json_type(entry)}"
            )
        entries.append(entry)
    return entries


def parse_pool_spec(spec: str) -> Pool:
    """Turn ``NAME:MAX_TOKENS:MAX_ENTRIES[:TYPE,TYPE...]`` into a :class:`Pool`.

    >>> parse_pool_spec("skills:200:2:skill,growth")
    Pool(name='skills', max_tokens=200, max_entries=2, types=('skill', 'growth'))
    >>> parse_pool_spec("all:1000:8").types is None
    True

    Args:
        spec: the text given to ``--pool``.

    Returns:
        The pool.

    Raises:
        UsageError: naming the part of the spec that is wrong.
    """
    bad = f"bad pool spec {spec!r}"
    parts = spec.split(":")
    if len(parts) not in (3, 4):
        raise UsageError(
            f"{bad}: expected NAME:MAX_TOKENS:MAX_ENTRIES[:TYPE,TYPE...],"
            f" got {len(parts)} part(s) separated by ':'"
        )
    name = parts[0].strip()
    if not name:
        raise UsageError(f"{bad}: NAME is empty")
    max_tokens = _count(parts[1], f"{bad}: MAX_TOKENS")
    max_entries = _count(parts[2], f"{bad}: MAX_ENTRIES")
    types = None
    if len(parts) == 4:
        types = tuple(t.strip() for t in parts[3].split(","))
        if not parts[3].strip():
            raise UsageError(
                f"{bad}: TYPES is empty; leave out the last ':' for a pool of every type"
            )
        if any(not t for t in types):
            raise UsageError(f"{bad}: TYPES has an empty type name in {parts[3]!r}")
    return Pool(name, max_tokens, max_entries, types)


def read_pools_file(path: str) -> list[Pool]:
    """Read ``--pools FILE.json``: a list of ``{name, max_tokens, max_entries, types?}``.

    Args:
        path: the JSON file.

    Returns:
        The pools, in file order.

    Raises:
        UsageError: the file is missing or unreadable, is not such a list, or
            describes an invalid pool.
    """
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UsageError(f"pools file not found: {path}") from None
    except json.JSONDecodeError as exc:
        raise UsageError(
            f"{path}: invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read pools file {path}: {exc}") from None
    if not isinstance(data, list) or not data:
        raise UsageError(f"{path}: expected a non-empty JSON list of pool objects")
    pools = []
    allowed = {"name", "max_tokens", "max_entries", "types"}
    for i, item in enumerate(data):
        where = f"{path}: pool {i}"
        if not isinstance(item, dict):
            raise UsageError(f"{where} must be a JSON object, got {_json_type(item)}")
        missing = sorted({"name", "max_tokens", "max_entries"} - set(item))
        if missing:
            raise UsageError(f"{where} lacks {', '.join(missing)}")
        unknown = sorted(set(item) - allowed)
        if unknown:
            raise UsageError(f"{where} has unknown key(s) {', '.join(unknown)}")
        types = item.get("types")
        if types is not None and not (
            isinstance(types, list) and all(isinstance(t, str) for t in types)
        ):
            raise UsageError(f"{where}: types must be a list of strings or null, got {types!r}")
        try:
            pools.append(Pool(item["name"], item["max_tokens"], item["max_entries"],
                              None if types is None else tuple(types)))
        except (TypeError, ValueError) as exc:
            raise UsageError(f"{where}: {exc}") from None
    return pools


def parse_now(text: str) -> datetime:
    """Parse ``--now``: ISO-8601, ``Z`` or an offset allowed, no offset meaning UTC.

    >>> parse_now("2026-11-01T09:30:00Z").isoformat()
    '2026-11-01T09:30:00+00:00'

    Args:
        text: the text given to ``--now``.

    Returns:
        An aware datetime.

    Raises:
        UsageError: the text is not an ISO-8601 date or time.
    """
    value = text.strip()
    if value[-1:] in ("Z", "z"):
        value = value[:-1] + "+00:00"
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise UsageError(
            f"--now must be an ISO-8601 time such as 2026-11-01T00:00:00Z, got {text!r}"
        ) from None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=timezone.utc)


# --------------------------------------------------------------------------
# Commands
# --------------------------------------------------------------------------


def _cmd_demo(args: argparse.Namespace) -> str:
    report = run_demo()
    if args.json:
        return json.dumps(report, indent=2, ensure_ascii=False) + "\n"
    return format_report(report)


def _cmd_retrieve(args: argparse.Namespace) -> str:
    request = _Request.from_args(args)
    explanation = request.explain()
    loaded = explanation.loaded()
    pools = {pool.name: pool for pool in request.pools}
    if args.json:
        return _dump({
            **request.header(),
            "pools": {
                name: [_loaded_data(d) for d in decisions] for name, decisions in loaded.items()
            },
        })
    lines = []
    for name, decisions in loaded.items():
        ledger = explanation.ledgers[name]
        lines.append(
            f"pool {name!r} ({_pool_terms(pools[name])}): {len(decisions)} loaded"
            f" ({ledger.always} always-scope), {ledger.tokens_used} of {ledger.max_tokens}"
            " tokens used"
        )
        if not decisions:
            lines += ["  (nothing loaded)", ""]
            continue
        rows: list[tuple[str, ...]] = [("id", "type", "score", "cost", "always", "content")]
        for d in decisions:
            rows.append((
                _id(d.entry), str(d.entry.get("type", "note")),
                "-" if d.score is None else f"{d.score:.3f}", str(d.cost),
                "always" if d.outcome == "always" else "", _short(d.entry.get("content"), 60),
            ))
        lines += ["  " + row for row in _table(rows, right={2, 3})] + [""]
    return "\n".join(lines)


def _cmd_explain(args: argparse.Namespace) -> str:
    request = _Request.from_args(args)
    explanation = request.explain()
    decisions = _ordered(explanation, request.pools)
    if args.id is not None:
        decisions = [d for d in decisions if _id(d.entry) == args.id]
        if not decisions:
            raise UsageError(f"no entry with id {args.id!r} in {args.store}")
    if args.json:
        return _dump({
            **request.header(),
            "ledgers": [_ledger_data(led) for led in explanation.ledgers.values()],
            "decisions": [
                {**_decision_data(d), "reason": reason(d, explanation.ledgers)}
                for d in decisions
            ],
        })
    lines = ["Ledger (always-scope entries are counted but not charged to the budget)", ""]
    rows: list[tuple[str, ...]] = [("pool", "tokens used", "left", "entries",
                                    "always (tokens)", "skipped: tokens", "skipped: cap")]
    for led in explanation.ledgers.values():
        rows.append((
            led.pool, f"{led.tokens_used}/{led.max_tokens}", str(led.tokens_left),
            f"{led.selected}/{led.max_entries}", f"{led.always} ({led.always_tokens})",
            str(led.skipped_tokens), str(led.skipped_entries),
        ))
    lines += ["  " + row for row in _table(rows, right={1, 2, 3, 5, 6})]
    rows = []
    lines += ["", "Why each entry was or was not loaded" if args.id is None
              else f"Why {args.id!r} was or was not loaded", ""]
    rows += [(_id(d.entry), str(d.entry.get("type", "note")), reason(d, explanation.ledgers))
             for d in decisions]
    lines += ["  " + row for row in _table(rows)]
    return "\n".join(lines) + "\n"


def reason(decision: Decision, ledgers: Mapping[str, Ledger]) -> str:
    """Say in words why an entry was or was not loaded, starting with its outcome.

    Args:
        decision: one record of :func:`~poolsplit_core.poolsplit.explain_pools`.
        ledgers: that call's ledgers, for the pool's entry cap.

    Returns:
        One line, e.g. ``over_tokens: needed 120 tokens, 35 were left in pool 'skills'``.
    """
    d, entry = decision, decision.entry
    score = "" if d.score is None else f"score {d.score:.3f}"
    if d.outcome == "always":
        return (f"always: scope=always, loaded first in pool {d.pool!r} outside its budget"
                f" ({d.cost} tokens, not charged)")
    if d.outcome == "selected":
        return (f"selected: #{(d.rank or 0) + 1} in pool {d.pool!r}, {score},"
                f" cost {d.cost} tokens")
    if d.outcome == "over_tokens":
        return (f"over_tokens: needed {d.cost} tokens, {d.tokens_left} were left in pool"
                f" {d.pool!r} ({score})")
    if d.outcome == "over_entries":
        cap = ledgers[d.pool].max_entries if d.pool is not None and d.pool in ledgers else "its"
        return (f"over_entries: pool {d.pool!r} already held its {cap} entries when its turn"
                f" came ({score}, cost {d.cost} tokens)")
    if d.outcome == "no_pool":
        return f"no_pool: its type {entry.get('type', 'note')!r} is in no pool"
    why = []
    status = entry.get("status", "active")
    if status != "active":
        why.append(f"its status is {status!r}")
    if entry.get("superseded_by"):
        why.append(f"it is superseded by {entry['superseded_by']!r}")
    return "inactive: " + (" and ".join(why) or "the activity test rejected it")


# --------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------


class _Request:
    """A parsed retrieve/explain call: store, pools, context, now."""

    def __init__(self, store: str, entries: list[dict[str, Any]], pools: list[Pool],
                 context: dict[str, Any], now: datetime | None) -> None:
        self.store, self.entries, self.pools = store, entries, pools
        self.context, self.now = context, now

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> _Request:
        pools = ([parse_pool_spec(spec) for spec in args.pool] if args.pool
                 else read_pools_file(args.pools))
        seen = set()
        for pool in pools:
            if pool.name in seen:
                raise UsageError(f"duplicate pool name {pool.name!r}: each pool needs its own name")
            seen.add(pool.name)
        now = None if args.now is None else parse_now(args.now)
        context = {"message": args.message, "project": args.project, "tags": args.tag or []}
        return cls(args.store, load_store(args.store), pools, context, now)

    def explain(self) -> Explanation:
        try:
            return explain_pools(self.entries, self.pools, self.context, now=self.now)
        except (TypeError, ValueError) as exc:
            raise UsageError(f"{self.store}: {exc}") from None

    def header(self) -> dict[str, Any]:
        return {
            "store": self.store,
            "now": None if self.now is None else self.now.isoformat(),
            "context": self.context,
        }


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see '{self.prog} --help')")


def _build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="poolsplit",
        description="Pool-split retrieval for agent memory: reserved budgets per entry type,"
        " corrections first.",
    )
    parser.add_argument("--version", action="version", version=f"poolsplit {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    demo = commands.add_parser(
        "demo", help="single budget vs pool-split on the shipped sample store",
        description="Single budget (one scorer, one budget, no always tier) vs pool-split on"
        " the sample store shipped with poolsplit, then a burst of fresh entries.",
    )
    demo.add_argument("--json", action="store_true", help="print machine-readable JSON")
    demo.set_defaults(handler=_cmd_demo)

    retrieve = commands.add_parser(
        "retrieve", help="fill pools from a store and print what loads",
        description="Run retrieve_pools on STORE and print, per pool, the loaded entries.",
    )
    _add_request_options(retrieve)
    retrieve.set_defaults(handler=_cmd_retrieve)

    explain = commands.add_parser(
        "explain", help="per pool the ledger, then why each entry was or was not loaded",
        description="Run explain_pools on STORE: the ledger of each pool, then the reason"
        " for every entry's outcome.",
    )
    _add_request_options(explain)
    explain.add_argument("--id", help="explain only the entry with this id")
    explain.set_defaults(handler=_cmd_explain)
    return parser


def _add_request_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("store", metavar="STORE",
                        help="a JSON list of entry objects, or JSON Lines (one per line)")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--pool", action="append", metavar="NAME:MAX_TOKENS:MAX_ENTRIES[:TYPES]",
                        help="a pool, repeatable, in fill order; TYPES is a comma list")
    source.add_argument("--pools", metavar="FILE.json",
                        help="a JSON list of {name, max_tokens, max_entries, types}")
    parser.add_argument("--message", required=True, help="what the user said")
    parser.add_argument("--project", help="the current project")
    parser.add_argument("--tag", action="append", metavar="TAG", help="a context tag, repeatable")
    parser.add_argument("--now", metavar="ISO",
                        help="the time to score recency at (default: now), e.g. 2026-11-01")
    parser.add_argument("--json", action="store_true", help="print machine-readable JSON")


def _ordered(explanation: Explanation, pools: Sequence[Pool]) -> list[Decision]:
    """Decisions by pool (loaded in load order, then the rest by score), then the rest."""
    order = {pool.name: i for i, pool in enumerate(pools)}

    def key(d: Decision) -> tuple[Any, ...]:
        if d.pool is None:
            return (len(order), 0, 0.0, d.index)
        if d.loaded:
            return (order[d.pool], 0, float(d.rank or 0), d.index)
        return (order[d.pool], 1, -float(d.score or 0), d.index)

    return sorted(explanation.decisions, key=key)


def _loaded_data(d: Decision) -> dict[str, Any]:
    return {
        "id": d.entry.get("id"),
        "type": d.entry.get("type", "note"),
        "score": d.score,
        "cost": d.cost,
        "always": d.outcome == "always",
        "entry": dict(d.entry),
    }


def _decision_data(d: Decision) -> dict[str, Any]:
    return {
        "index": d.index,
        "id": d.entry.get("id"),
        "type": d.entry.get("type", "note"),
        "outcome": d.outcome,
        "pool": d.pool,
        "score": d.score,
        "cost": d.cost,
        "tokens_left": d.tokens_left,
        "rank": d.rank,
    }


def _ledger_data(led: Ledger) -> dict[str, Any]:
    return {
        "pool": led.pool,
        "max_tokens": led.max_tokens,
        "max_entries": led.max_entries,
        "tokens_used": led.tokens_used,
        "tokens_left": led.tokens_left,
        "selected": led.selected,
        "always": led.always,
        "always_tokens": led.always_tokens,
        "skipped_tokens": led.skipped_tokens,
        "skipped_entries": led.skipped_entries,
    }


def _dump(data: Any) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n"


def _pool_terms(pool: Pool) -> str:
    types = "every type" if pool.types is None else "types " + ",".join(pool.types)
    entries = "entry" if pool.max_entries == 1 else "entries"
    return f"{pool.max_tokens} tokens, {pool.max_entries} {entries}, {types}"


def _id(entry: Mapping[str, Any]) -> str:
    value = entry.get("id")
    return "(no id)" if value is None else str(value)


def _count(text: str, what: str) -> int:
    value = text.strip()
    if not value.isdigit() or not value.isascii():
        raise UsageError(f"{what} must be a non-negative integer, got {text!r}")
    return int(value)


def _json_type(value: Any) -> str:
    names = {dict: "an object", list: "an array", str: "a string", bool: "a boolean",
             int: "a number", float: "a number", type(None): "null"}
    return names.get(type(value), type(value).__name__)


def _is_one_json_value(text: str) -> bool:
    try:
        json.loads(text)
    except json.JSONDecodeError:
        return False
    return True


def _short(value: Any, width: int) -> str:
    text = "" if value is None else " ".join(str(value).split())
    return text if len(text) <= width else text[: width - 1].rstrip() + "…"


def _table(rows: Sequence[Sequence[str]], right: frozenset[int] | set[int] = frozenset()
           ) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    out = []
    for row in rows:
        cells = [
            cell.rjust(w) if i in right else cell.ljust(w)
            for i, (cell, w) in enumerate(zip(row, widths))
        ]
        out.append("  ".join(cells).rstrip())
    return out


if __name__ == "__main__":
    raise SystemExit(main())
