"""An MCP memory server: pool-split recall for any MCP host, one command away.

``poolsplit mcp --store memory.sqlite --user ana`` serves one user's memory
over stdio (``--http 127.0.0.1:8765`` over streamable HTTP; ``--postgres URI``
keeps it in PostgreSQL). The host's model sees four tools and one resource:

=============  ==========================================================
``remember``   write a memory (content, type, scope, tags, project),
               refused with the checks every write through
               :class:`~poolsplit_integrations.langgraph.PoolSplitStore` gets,
               the field named
``forget``     delete a memory by id (destructive); ``retire=True`` marks it
               retired instead (``status``, and ``superseded_by`` when given),
               so it stops loading but stays readable
``recall``     the memories for a query: the always tier first, then each
               pool's entries within its budget; the ledger (what each pool
               spent and left out) is the structured content
``explain``    every memory's outcome and the reason for it (``id``: one
               memory's)
resource       ``poolsplit://always``: the always tier, for a host to load at
               session start (also the prompt ``session_start``)
=============  ==========================================================

The rules are the store's and the core's, never copied here: writes are
checked by :func:`~poolsplit_core.checks.entry_problems` (worded for the
caller) and again by ``PoolSplitStore.put``, reads are its ``explain_pools`` (every
active correction loads, ``max_always_tokens`` raises
:class:`~poolsplit_core.poolsplit.AlwaysScopeOverflowError` rather than drop
one), tenancy is its filter on ``user_id``, prompt text is
:func:`~poolsplit_core.render.render_pools`. A recall's ``budget`` scales the
pools' token budgets down to fit it (:func:`fit_pools`), so what a recall
returns costs at most ``budget`` tokens plus the always tier.

The user is the server's configuration (``--user`` or ``POOLSPLIT_MCP_USER``),
never a tool argument: a model cannot read or write another user's memory.

Storage: an SQLite file (LangGraph's ``SqliteStore``) opened in WAL mode with
``synchronous=FULL`` and a busy timeout, so a write is on disk before its tool
call answers and several servers may share one file; every recall reads the
file afresh. Needs ``pip install 'poolsplit[mcp]'``.
"""

# The imports below must follow the require() calls, which turn a missing
# package into an ImportError naming the extra to install.
# ruff: noqa: E402

from __future__ import annotations

from poolsplit_integrations._extras import require

require("mcp.server.mcpserver", "mcp", "langgraph.store.sqlite", what="poolsplit mcp")

import argparse
import os
import sqlite3
import sys
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, TextContent, ToolAnnotations

from poolsplit_core.checks import entry_problems
from poolsplit_core.cli import reason
from poolsplit_core.demo import SINGLE_POOL, SPLIT_POOLS
from poolsplit_core.plan import load_pools
from poolsplit_core.poolsplit import Decision, Ledger, Pool
from poolsplit_core.render import render_pools
from poolsplit_integrations._options import check_max_always_tokens, check_pools_arg
from poolsplit_integrations._tenancy import USER_KEY, check_user
from poolsplit_integrations.langgraph import PoolSplitStore, StoreExplanation

__all__ = ["ALWAYS_URI", "PRESETS", "USER_ENV", "build_server", "fit_pools", "main",
           "open_sqlite_store"]

#: The environment variable naming the user when ``--user`` is not given.
USER_ENV = "POOLSPLIT_MCP_USER"
#: The resource carrying the always tier.
ALWAYS_URI = "poolsplit://always"
#: The namespace a user's memories live under: ``("memories", user)``.
NAMESPACE_ROOT = "memories"
#: Named pool sets (``--preset``): ``default`` is one pool per type, as in
#: ``poolsplit demo``; ``single`` is one pool for every type.
PRESETS: dict[str, tuple[Pool, ...]] = {
    "default": tuple(SPLIT_POOLS),
    "single": (SINGLE_POOL,),
}
#: How long a write waits for another server's write on the same SQLite file.
BUSY_TIMEOUT_MS = 30_000


# --------------------------------------------------------------------------
# Budgets
# --------------------------------------------------------------------------


def check_budget(value: Any, name: str = "budget") -> int:
    """``value`` if it is a token budget: an int >= 0 (a bool is not)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int number of tokens, got {value!r}")
    if value < 0:
        raise ValueError(f"{name} must be >= 0, got {value}")
    return value


def fit_pools(pools: Sequence[Pool], budget: int) -> list[Pool]:
    """The pools, their token budgets scaled down together so that they sum to <= ``budget``.

    >>> [p.max_tokens for p in fit_pools([Pool("a", 300, 3), Pool("b", 100, 1)], 200)]
    [150, 50]
    >>> [p.max_tokens for p in fit_pools([Pool("a", 300, 3)], 1000)]
    [300]

    Pools that already fit are returned as they are; otherwise each keeps
    its share (rounded down), so no pool starves another. The always tier
    is outside every budget and is not counted.
    """
    check_budget(budget)
    total = sum(pool.max_tokens for pool in pools)
    if total <= budget:
        return list(pools)
    return [replace(pool, max_tokens=pool.max_tokens * budget // total) for pool in pools]


# --------------------------------------------------------------------------
# Storage
# --------------------------------------------------------------------------


@contextmanager
def open_sqlite_store(path: str | os.PathLike[str]) -> Iterator[PoolSplitStore]:
    """A PoolSplitStore over LangGraph's ``SqliteStore`` in the file ``path``, closed on exit.

    The file is created when missing and opened in WAL mode with
    ``synchronous=FULL`` (a committed write survives the process being
    killed) and a busy timeout (a second server's write waits rather than
    fails). The index is read afresh on every pool-split read, so another
    server's writes are in the next recall.
    """
    from langgraph.store.sqlite import SqliteStore

    conn = sqlite3.connect(os.fspath(path), check_same_thread=False, isolation_level=None,
                           timeout=BUSY_TIMEOUT_MS / 1000)
    try:
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = FULL")
        inner = SqliteStore(conn)
        _set_up(inner)
        yield PoolSplitStore(inner, refresh_interval=0.0, reconcile_interval=0.0)
    finally:
        conn.close()


def _set_up(inner: Any, attempts: int = 5) -> None:
    """Run the SQLite store's migrations; two servers starting at once may race, so retry."""
    for attempt in range(attempts):
        try:
            inner.setup()
            return
        except sqlite3.DatabaseError:  # the other server applied the migration first
            if attempt == attempts - 1:
                raise
            inner.is_setup = False
            time.sleep(0.2 * (attempt + 1))


# --------------------------------------------------------------------------
# The server
# --------------------------------------------------------------------------


@contextmanager
def _as_tool_error() -> Iterator[None]:
    """Bad arguments and refused writes answer as MCP tool errors carrying their message."""
    try:
        yield
    except (ValueError, TypeError, LookupError) as exc:
        raise ToolError(str(exc)) from exc


def _shown(decision: Decision) -> dict[str, Any]:
    """One loaded memory as the structured content lists it."""
    entry = decision.entry
    shown = {"id": entry.get("id"), "content": entry.get("content"),
             "type": entry.get("type", "note"), "tokens": decision.cost}
    for key in ("scope", "tags", "project"):
        if entry.get(key) is not None:
            shown[key] = list(entry[key]) if key == "tags" else entry[key]
    if decision.score is not None:
        shown["score"] = decision.score
    return shown


def _ledger(ledger: Ledger) -> dict[str, int]:
    """One pool's ledger as the structured content lists it: its counts (the pool is the key)."""
    return {field: value for field, value in asdict(ledger).items() if field != "pool"}


def build_server(
    store: PoolSplitStore,
    *,
    user: str,
    pools: Sequence[Pool] | None = None,
    budget: int | None = None,
    max_always_tokens: int | None = None,
    name: str = "poolsplit-memory",
) -> MCPServer:
    """The MCP server of ``user``'s memory in ``store``: tools, the always-tier resource, a prompt.

    ``pools`` default to the ``default`` preset (:data:`PRESETS`); ``budget``
    is a recall's default token budget (None: the pools' own budgets, summed);
    ``max_always_tokens`` caps the always tier (over it, a recall is an error
    saying so, never a silently dropped correction).
    """
    user = check_user(user, "poolsplit mcp --user")
    chosen = check_pools_arg(PRESETS["default"] if pools is None else pools)
    default_budget = (sum(pool.max_tokens for pool in chosen) if budget is None
                      else check_budget(budget, "the default budget"))
    ceiling = check_max_always_tokens(max_always_tokens)
    namespace = (NAMESPACE_ROOT, user)
    mine = {USER_KEY: user}
    server = MCPServer(
        name, log_level="WARNING",
        instructions=(
            "Long-term memory for this user. Read the resource " + ALWAYS_URI + " (or the prompt"
            " session_start) at the start of a session: its corrections always apply. Call"
            " recall with the task at hand before answering; remember what the user will want"
            " next time; forget what is wrong or obsolete."),
    )

    def explained(query: str, budget: int | None) -> tuple[StoreExplanation, int]:
        spend = default_budget if budget is None else check_budget(budget)
        why = store.explain_pools(namespace, fit_pools(chosen, spend), {"message": query},
                                  filter=mine, max_always_tokens=ceiling)
        return why, spend

    def always_tier() -> str:
        why, _ = explained("", 0)
        return render_pools(why.loaded())

    @server.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False,
                                             idempotent_hint=False, open_world_hint=False))
    def remember(content: str, type: str = "note", scope: str | None = None,
                 tags: list[str] | None = None, project: str | None = None) -> dict[str, Any]:
        """Store one memory for later sessions; answers with its id.

        type: what kind of memory (e.g. note, fact, task, preference, procedure,
        correction). scope: "always" for a correction that must load in every
        session, outside every budget; leave it out otherwise. tags: short
        labels; project: the project it belongs to.
        """
        with _as_tool_error():
            if not content.strip():
                raise ValueError(f"content must be a non-empty text, got {content!r}")
            value: dict[str, Any] = {"content": content, "type": type}
            for key, given in (("scope", scope), ("tags", tags), ("project", project)):
                if given is not None:
                    value[key] = given
            value[USER_KEY] = user
            # The checks every write gets (the store runs them again), worded for the caller.
            problems = entry_problems(value, "remember")
            if problems:
                raise ValueError("; ".join(problems) + " (nothing was written)")
            key = f"m-{uuid.uuid4().hex[:16]}"
            store.put(namespace, key, value)
        return {"id": key}

    @server.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True,
                                             idempotent_hint=True, open_world_hint=False))
    def forget(id: str, retire: bool = False, superseded_by: str | None = None) -> dict[str, Any]:
        """Delete the memory with this id; retire=True keeps it but stops it loading.

        superseded_by (with retire=True): the id of the memory that replaces it.
        """
        with _as_tool_error():
            item = store.get(namespace, id)
            if item is None:
                raise LookupError(f"id: no memory with the id {id!r}")
            if superseded_by is not None and not retire:
                raise ValueError("superseded_by: only with retire=True (a deleted memory"
                                 f" has no successor), got {superseded_by!r}")
            if not retire:
                store.delete(namespace, id)
                return {"id": id, "forgotten": "deleted"}
            if superseded_by is not None and store.get(namespace, superseded_by) is None:
                raise LookupError(f"superseded_by: no memory with the id {superseded_by!r}")
            value = {**item.value, "status": "retired"}
            if superseded_by is not None:
                value["superseded_by"] = superseded_by
            store.put(namespace, id, value)
        return {"id": id, "forgotten": "retired"}

    @server.tool(annotations=ToolAnnotations(read_only_hint=True, open_world_hint=False))
    def recall(query: str, budget: int | None = None) -> CallToolResult:
        """The memories for a query: corrections first, then each pool within its budget.

        budget: the most tokens the memories outside the always tier may cost
        (default: the server's). The structured content carries each pool's
        ledger: what it spent and what it left out.
        """
        with _as_tool_error():
            why, spend = explained(query, budget)
        loaded = why.loaded()
        always = [_shown(d) for picked in loaded.values() for d in picked
                  if d.outcome == "always"]
        by_pool = {name: [_shown(d) for d in picked if d.outcome != "always"]
                   for name, picked in loaded.items()}
        text = render_pools(loaded, ledgers=why.ledgers)
        data = {
            "user": user, "query": query, "budget": spend,
            "always": always, "pools": by_pool,
            "tokens": sum(entry["tokens"] or 0 for got in by_pool.values() for entry in got),
            "always_tokens": sum(entry["tokens"] or 0 for entry in always),
            "ledger": {name: _ledger(ledger) for name, ledger in why.ledgers.items()},
            "text": text,
        }
        return CallToolResult(content=[TextContent(type="text", text=text or "(no memories)")],
                              structured_content=data)

    @server.tool(annotations=ToolAnnotations(read_only_hint=True, open_world_hint=False))
    def explain(query: str, budget: int | None = None, id: str | None = None) -> dict[str, Any]:
        """Why each memory was or was not loaded for a query, one reason per memory.

        id: explain only the memory with this id.
        """
        with _as_tool_error():
            why, spend = explained(query, budget)
            decisions = [d for d in why.decisions if id is None or d.entry.get("id") == id]
            if id is not None and not decisions:
                raise LookupError(f"id: no memory with the id {id!r}")
        return {
            "budget": spend,
            "memories": [{"id": d.entry.get("id"), "outcome": d.outcome, "pool": d.pool,
                          "reason": reason(d, why.ledgers)} for d in decisions],
            "skipped": [{"id": key, "problem": problem} for key, problem in why.skipped],
        }

    @server.resource(ALWAYS_URI, name="always", mime_type="text/markdown",
                     description="The corrections that apply in every session (the always tier).")
    def always_resource() -> str:
        return always_tier()

    @server.prompt(name="session_start",
                   description="Start a session with the user's standing corrections loaded.")
    def session_start() -> str:
        tier = always_tier()
        if not tier:
            return "There are no standing corrections in memory for this user."
        return "These corrections from memory apply throughout this session:\n\n" + tier

    return server


# --------------------------------------------------------------------------
# The command
# --------------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="poolsplit mcp",
        description="Serve one user's memory to MCP hosts: remember, forget, recall and"
        " explain tools, and the always tier as the resource " + ALWAYS_URI + ".")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--store", metavar="FILE.sqlite", default="memory.sqlite",
                       help="the SQLite file holding the memory (default: memory.sqlite;"
                       " created when missing)")
    where.add_argument("--postgres", metavar="URI",
                       help="keep the memory in PostgreSQL at URI instead (needs"
                       " 'poolsplit[mcp,postgres]')")
    parser.add_argument("--user", default=None,
                        help=f"whose memory this server serves (default: ${USER_ENV})")
    parser.add_argument("--http", metavar="HOST:PORT",
                        help="serve streamable HTTP at http://HOST:PORT/mcp instead of stdio")
    pools = parser.add_mutually_exclusive_group()
    pools.add_argument("--pools", metavar="FILE.json",
                       help="the pools, as poolsplit plan --out writes them")
    pools.add_argument("--preset", choices=sorted(PRESETS), default="default",
                       help="a named pool set (default: default, one pool per type)")
    parser.add_argument("--budget", type=int, default=None,
                        help="a recall's default token budget (default: the pools' budgets,"
                        " summed); a recall may pass its own")
    parser.add_argument("--max-always-tokens", type=int, default=None,
                        help="the always tier's ceiling: a recall over it is an error")
    return parser


def _address(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"--http must be HOST:PORT such as 127.0.0.1:8765, got {text!r}")
    return host.strip("[]"), int(port)


@contextmanager
def _opened(args: argparse.Namespace) -> Iterator[PoolSplitStore]:
    if args.postgres:
        with PoolSplitStore.from_conn_string(args.postgres) as store:
            yield store
    else:
        with open_sqlite_store(Path(args.store)) as store:
            yield store


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``poolsplit mcp`` with ``argv``; returns the exit status (2: bad arguments)."""
    try:
        args = _parser().parse_args(argv)
    except SystemExit as exc:  # --help, or arguments argparse refused (its message printed)
        return exc.code if isinstance(exc.code, int) else 0
    user = args.user if args.user is not None else os.environ.get(USER_ENV)
    try:
        if user is None:
            raise ValueError(f"name the user whose memory this serves: --user NAME or ${USER_ENV}")
        check_user(user, "--user")
        address = _address(args.http) if args.http else None
        chosen = load_pools(args.pools) if args.pools else list(PRESETS[args.preset])
        with _opened(args) as store:
            server = build_server(store, user=user, pools=chosen, budget=args.budget,
                                  max_always_tokens=args.max_always_tokens)
            if address is None:
                server.run("stdio")
            else:
                server.run("streamable-http", host=address[0], port=address[1])
    except (ValueError, TypeError, OSError, ImportError) as exc:
        print(f"poolsplit mcp: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
