"""Pool-split reads from LangGraph's PostgreSQL store: one snapshot per read, nothing kept.

:class:`PoolSplitStore` over LangGraph's ``PostgresStore`` or
``AsyncPostgresStore`` reads a namespace for a pool-split answer with
:func:`read_namespace` / :func:`aread_namespace`: every item under the
namespace in ONE SQL statement (one snapshot of the database: a write any
process committed before the statement is in it, an item no one touched is
never missing, a deleted item is never in it), ordered by namespace then key
in code-point order, which is the order the core sees them in. Nothing of
the namespace is kept between reads, so a worker's memory does not grow with
the namespaces it serves.

The statement goes through the wrapped store's own connection (or pool),
under its lock, the way the store's own ``search`` does; rows become
``SearchItem`` objects exactly as ``search`` makes them, and items past their
TTL are left out exactly when ``search`` leaves them out. Errors are the
driver's (the caller names them).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Sequence
from typing import Any, TypeVar

from poolsplit_integrations._extras import require

require("langgraph.store.postgres", "postgres", "psycopg", "psycopg_pool")

from langgraph.store.base import BaseStore, SearchItem  # noqa: E402
from langgraph.store.postgres import AsyncPostgresStore, PostgresStore  # noqa: E402
from langgraph.store.postgres import base as _lg  # noqa: E402
from psycopg import AsyncConnection, Connection  # noqa: E402
from psycopg_pool import AsyncConnectionPool, ConnectionPool  # noqa: E402

__all__ = ["aread_namespace", "is_database_store", "read_namespace", "run_in_loop"]

_T = TypeVar("_T")

# The store's own row decoding, so a pool-split read sees the very items its
# search returns (checked when this module loads: a LangGraph release without
# them fails here, loudly, not with wrong items later).
_row_to_search_item = _lg._row_to_search_item
_decode_ns_bytes = _lg._decode_ns_bytes
_namespace_prefix_condition = _lg._namespace_prefix_condition


class StaleReadings(RuntimeError):
    """A row's reading in ``poolsplit_v1.entry`` is not its row's: the read is answered from rows.

    Triggers keep every reading in its row's writing transaction; a write
    that bypassed them (``session_replication_role = replica``, a disabled
    trigger) leaves one behind until ``poolsplit-postgres recheck`` repairs it.
    """


def is_database_store(store: BaseStore) -> bool:
    """Whether pool-split reads of ``store`` go to its database (LangGraph's PostgreSQL stores).

    A ``PostgresStore`` or ``AsyncPostgresStore``, or a subclass of either (a
    hook, a serialisation of one's own), over the kind of connection its class
    takes: a psycopg connection or pool (async ones for the async store).
    """
    if isinstance(store, AsyncPostgresStore):
        return isinstance(store.conn, (AsyncConnection, AsyncConnectionPool))
    if isinstance(store, PostgresStore):
        return isinstance(store.conn, (Connection, ConnectionPool))
    return False


def _statement(store: Any, prefix: Sequence[str]) -> tuple[str, tuple[Any, ...]]:
    """Every item under ``prefix`` as ``search`` sees them, by namespace and key (code points)."""
    condition, params = _namespace_prefix_condition(tuple(prefix))
    expiry = ("AND (store.expires_at IS NULL OR store.expires_at > NOW())"
              if store._omit_expired else "")
    return (
        "SELECT store.prefix, store.key, store.value, store.created_at, store.updated_at,"
        f" NULL AS score FROM store WHERE {condition} {expiry}"
        ' ORDER BY store.prefix COLLATE "C", store.key COLLATE "C"',
        tuple(params),
    )


def _items(store: Any, rows: list[Any]) -> list[SearchItem]:
    loader = store._deserializer
    return [_row_to_search_item(_decode_ns_bytes(row["prefix"]), row, loader=loader)
            for row in rows]


def run_in_loop(store: Any, coroutine: Callable[[], Coroutine[Any, Any, _T]]) -> _T:
    """Run an ``AsyncPostgresStore``'s coroutine on its event loop, from another thread."""
    try:
        running = asyncio.get_running_loop()
    except RuntimeError:
        running = None
    if running is store.loop:
        raise RuntimeError(
            "a synchronous pool-split read of an AsyncPostgresStore cannot run in its event"
            " loop: await aretrieve_pools / aexplain_pools (or the retriever's ainvoke)"
        )
    return asyncio.run_coroutine_threadsafe(coroutine(), store.loop).result()


def read_namespace(store: Any, prefix: Sequence[str]) -> list[SearchItem]:
    """Every item under ``prefix`` now, in one statement (see the module docstring).

    Over an ``AsyncPostgresStore`` this runs on the store's event loop and
    must be called from another thread (as the store's own sync methods);
    in the loop, use :func:`aread_namespace`.
    """
    if isinstance(store, AsyncPostgresStore):
        return run_in_loop(store, lambda: aread_namespace(store, prefix))
    sql, params = _statement(store, prefix)
    with store._cursor(pipeline=True) as cur:
        cur.execute(sql, params)
        rows = cur.fetchall()
    return _items(store, rows)


async def aread_namespace(store: Any, prefix: Sequence[str]) -> list[SearchItem]:
    """The async twin of :func:`read_namespace` (an ``AsyncPostgresStore``, in its loop)."""
    if not isinstance(store, AsyncPostgresStore):
        return await asyncio.to_thread(read_namespace, store, prefix)
    sql, params = _statement(store, prefix)
    async with store._cursor(pipeline=True) as cur:
        await cur.execute(sql, params)
        rows = await cur.fetchall()
    return _items(store, rows)
