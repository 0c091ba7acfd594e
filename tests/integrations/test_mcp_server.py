"""The MCP memory server, through a real MCP client session of the SDK.

In memory (``Client(server)``, the SDK's in-process transport) and over stdio
with the server as a subprocess (``python -m poolsplit_integrations.mcp_server``,
what ``poolsplit mcp`` runs). The store is an SQLite file in ``tmp_path``.
"""

from __future__ import annotations

import json
import os
import random
import signal
import socket
import sqlite3
import subprocess
import sys
import textwrap
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters

from poolsplit_core.cli import main as cli_main
from poolsplit_core.poolsplit import Pool, default_token_counter
from poolsplit_integrations.mcp_server import (
    ALWAYS_URI,
    build_server,
    fit_pools,
    main,
    open_sqlite_store,
)

POOLS = [Pool("tasks", 120, 4, ("task",)), Pool("facts", 80, 3, ("fact",)),
         Pool("notes", 60, 3)]


def run(body: Callable[[Client], Awaitable[Any]], server: Any) -> Any:
    async def go() -> Any:
        async with Client(server) as client:
            return await body(client)
    return anyio.run(go)


def with_server(path: Path, body: Callable[[Client], Awaitable[Any]], *, user: str = "ana",
                **options: Any) -> Any:
    with open_sqlite_store(path) as store:
        return run(body, build_server(store, user=user, pools=POOLS, **options))


def stdio(path: Path, *extra: str, user: str = "ana") -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "poolsplit_integrations.mcp_server", "--store", str(path), "--user", user,
              *extra])


def recalled_ids(result: Any) -> list[str]:
    data = result.structured_content
    return [m["id"] for m in data["always"]] + [
        m["id"] for got in data["pools"].values() for m in got]


async def every_tool(client: Client) -> dict[str, Any]:
    """remember -> recall -> explain -> forget -> recall, through one session."""
    fix = await client.call_tool("remember", {"content": "Staging runs on pg-2.",
                                              "type": "correction", "scope": "always"})
    task = await client.call_tool("remember", {"content": "deploy the billing api",
                                               "type": "task", "tags": ["ops"]})
    assert not fix.is_error and not task.is_error
    fix_id, task_id = fix.structured_content["id"], task.structured_content["id"]
    first = await client.call_tool("recall", {"query": "deploy billing"})
    why = await client.call_tool("explain", {"query": "deploy billing"})
    one = await client.call_tool("explain", {"query": "deploy billing", "id": fix_id})
    gone = await client.call_tool("forget", {"id": task_id})
    second = await client.call_tool("recall", {"query": "deploy billing"})
    return {"fix": fix_id, "task": task_id, "first": first, "why": why, "one": one,
            "gone": gone, "second": second}


def check_every_tool(got: dict[str, Any]) -> None:
    first = got["first"]
    assert not first.is_error
    assert [m["id"] for m in first.structured_content["always"]] == [got["fix"]]
    assert got["task"] in recalled_ids(first)
    # The text the model reads: the correction first, then the task under its pool.
    text = first.content[0].text
    assert text.index("Staging runs on pg-2.") < text.index("## tasks") < text.index("billing")
    reasons = {m["id"]: m for m in got["why"].structured_content["memories"]}
    assert reasons[got["fix"]]["outcome"] == "always"
    assert reasons[got["task"]]["reason"].startswith("selected")
    assert [m["id"] for m in got["one"].structured_content["memories"]] == [got["fix"]]
    assert not got["gone"].is_error
    assert got["task"] not in recalled_ids(got["second"])
    assert got["fix"] in recalled_ids(got["second"])


# --------------------------------------------------------------------------
# In memory
# --------------------------------------------------------------------------


def test_every_tool_in_memory(tmp_path: Path) -> None:
    check_every_tool(with_server(tmp_path / "m.sqlite", every_tool))


def test_annotations_say_which_tools_only_read_and_which_destroy(tmp_path: Path) -> None:
    async def body(client: Client) -> dict[str, Any]:
        return {t.name: t.annotations for t in (await client.list_tools()).tools}

    tools = with_server(tmp_path / "m.sqlite", body)
    assert set(tools) == {"remember", "forget", "recall", "explain"}
    assert tools["recall"].read_only_hint and tools["explain"].read_only_hint
    assert tools["forget"].destructive_hint and not tools["forget"].read_only_hint
    assert not tools["remember"].read_only_hint and not tools["remember"].destructive_hint


@pytest.mark.parametrize(("tool", "arguments", "field"), [
    ("remember", {"content": "x", "scope": "sometimes"}, "scope"),
    ("remember", {"content": "x", "tags": "ops"}, "tags"),
    ("remember", {"content": "x", "type": ""}, "type"),
    ("remember", {"content": "   "}, "content"),
    ("remember", {"type": "note"}, "content"),
    ("recall", {"query": "x", "budget": -1}, "budget"),
    ("recall", {"query": 5}, "query"),
    ("explain", {"query": "x", "budget": "lots"}, "budget"),
    ("forget", {"id": "m-nope"}, "id"),
    ("explain", {"query": "x", "id": "m-nope"}, "id"),
    ("forget", {"id": "m-nope", "retire": "maybe"}, "retire"),
])
def test_bad_arguments_are_tool_errors_naming_the_field_and_the_server_keeps_serving(
        tmp_path: Path, tool: str, arguments: dict[str, Any], field: str) -> None:
    async def body(client: Client) -> tuple[Any, Any, Any]:
        bad = await client.call_tool(tool, arguments)
        after = await client.call_tool("remember", {"content": "still here", "type": "fact"})
        return bad, after, await client.call_tool("recall", {"query": "still here"})

    bad, after, recalled = with_server(tmp_path / "m.sqlite", body)
    assert bad.is_error
    assert field in bad.content[0].text
    assert not after.is_error
    assert after.structured_content["id"] in recalled_ids(recalled)


def test_a_refused_write_writes_nothing(tmp_path: Path) -> None:
    async def body(client: Client) -> None:
        await client.call_tool("remember", {"content": "x", "scope": "Always"})

    with_server(tmp_path / "m.sqlite", body)
    with open_sqlite_store(tmp_path / "m.sqlite") as store:
        assert store.search(("memories",), limit=100) == []


def test_recall_never_exceeds_its_budget_plus_the_always_tier(tmp_path: Path) -> None:
    rng = random.Random(39)
    words = ["deploy", "api", "billing", "db", "cache", "review", "lunch", "tea", "docs"]
    types = ["task", "fact", "note", "preference"]
    always: set[str] = set()

    async def body(client: Client) -> list[tuple[int, Any]]:
        for i in range(80):
            scope = "always" if i % 13 == 0 else None
            args = {"content": " ".join(rng.choices(words, k=rng.randint(2, 30))),
                    "type": "correction" if scope else rng.choice(types)}
            if scope:
                args["scope"] = scope
            got = await client.call_tool("remember", args)
            if scope:
                always.add(got.structured_content["id"])
        return [(budget, await client.call_tool("recall", {"query": " ".join(
            rng.choices(words, k=3)), "budget": budget})) for budget in (0, 7, 40, 100, 260)]

    for budget, result in with_server(tmp_path / "m.sqlite", body):
        data = result.structured_content
        contextual = [m for got in data["pools"].values() for m in got]
        spent = sum(default_token_counter(m["content"]) for m in contextual)
        assert spent <= budget
        if budget == 0:
            assert contextual == []
        assert {m["id"] for m in data["always"]} == always  # every correction, whatever the budget


def test_fit_pools_keeps_every_pool_and_fits_the_budget() -> None:
    rng = random.Random(7)
    for _ in range(200):
        pools = [Pool(f"p{i}", rng.randint(0, 500), rng.randint(0, 5))
                 for i in range(rng.randint(1, 6))]
        budget = rng.randint(0, 1500)
        fitted = fit_pools(pools, budget)
        assert [(p.name, p.max_entries, p.types) for p in fitted] == [
            (p.name, p.max_entries, p.types) for p in pools]
        assert sum(p.max_tokens for p in fitted) <= max(budget, 0)
        assert all(f.max_tokens <= p.max_tokens for f, p in zip(fitted, pools))
        if sum(p.max_tokens for p in pools) <= budget:
            assert fitted == pools


def test_max_always_tokens_raises_and_never_drops_a_correction(tmp_path: Path) -> None:
    path = tmp_path / "m.sqlite"

    async def write(client: Client) -> None:
        for i in range(3):
            await client.call_tool("remember", {"content": f"Correction {i}: never skip the"
                                                " tests before a release.", "scope": "always"})

    async def recall(client: Client) -> Any:
        return await client.call_tool("recall", {"query": "release"})

    with_server(path, write)
    roomy = with_server(path, recall, max_always_tokens=1000)
    assert len(roomy.structured_content["always"]) == 3
    tight = with_server(path, recall, max_always_tokens=10)
    assert tight.is_error and tight.structured_content is None
    assert "max_always_tokens" in tight.content[0].text


def test_the_always_tier_is_a_resource_and_a_prompt(tmp_path: Path) -> None:
    async def body(client: Client) -> tuple[Any, Any]:
        await client.call_tool("remember", {"content": "Answer in Portuguese.",
                                            "type": "preference", "scope": "always"})
        await client.call_tool("remember", {"content": "The api lives in repo atlas.",
                                            "type": "fact"})
        return await client.read_resource(ALWAYS_URI), await client.get_prompt("session_start")

    resource, prompt = with_server(tmp_path / "m.sqlite", body)
    text = resource.contents[0].text
    assert "Answer in Portuguese." in text and "atlas" not in text
    said = prompt.messages[0].content.text
    assert "Answer in Portuguese." in said and "atlas" not in said


def test_retire_stops_a_memory_loading_and_keeps_it(tmp_path: Path) -> None:
    async def body(client: Client) -> tuple[str, str, Any, Any]:
        old = (await client.call_tool("remember", {"content": "deploys go through jenkins",
                                                   "type": "fact"})).structured_content["id"]
        new = (await client.call_tool("remember", {"content": "deploys go through argo",
                                                   "type": "fact"})).structured_content["id"]
        retired = await client.call_tool("forget", {"id": old, "retire": True,
                                                    "superseded_by": new})
        return old, new, retired, await client.call_tool("recall", {"query": "deploys"})

    old, new, retired, recalled = with_server(tmp_path / "m.sqlite", body)
    assert not retired.is_error
    assert new in recalled_ids(recalled) and old not in recalled_ids(recalled)
    with open_sqlite_store(tmp_path / "m.sqlite") as store:
        kept = store.get(("memories", "ana"), old)
        assert kept is not None
        assert (kept.value["status"], kept.value["superseded_by"]) == ("retired", new)


def test_the_user_is_the_servers_never_a_tool_argument(tmp_path: Path) -> None:
    path = tmp_path / "m.sqlite"

    async def ana(client: Client) -> Any:
        # An argument naming another user does not make the memory theirs.
        return await client.call_tool("remember", {"content": "ana's deploy key is in vault",
                                                   "type": "fact", "user_id": "bob"})

    async def bob(client: Client) -> Any:
        return await client.call_tool("recall", {"query": "deploy key vault"})

    written = with_server(path, ana)
    assert recalled_ids(with_server(path, bob, user="bob")) == []
    assert written.structured_content["id"] in recalled_ids(with_server(path, bob, user="ana"))
    with open_sqlite_store(path) as store:
        (item,) = store.search(("memories",), limit=10)
        assert item.namespace == ("memories", "ana") and item.value["user_id"] == "ana"


def test_a_blank_user_is_refused_before_serving(tmp_path: Path) -> None:
    with open_sqlite_store(tmp_path / "m.sqlite") as store, pytest.raises(ValueError,
                                                                         match="user_id"):
        build_server(store, user="  ")


def test_the_command_needs_a_user(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("POOLSPLIT_MCP_USER", raising=False)
    assert cli_main(["mcp", "--store", str(tmp_path / "m.sqlite")]) == 2
    assert "--user" in capsys.readouterr().err
    assert main(["--store", str(tmp_path / "m.sqlite"), "--user", "ana",
                 "--http", "localhost"]) == 2
    assert "HOST:PORT" in capsys.readouterr().err


# --------------------------------------------------------------------------
# Over stdio, the server a subprocess
# --------------------------------------------------------------------------


def test_every_tool_over_stdio(tmp_path: Path) -> None:
    check_every_tool(run(every_tool, stdio(tmp_path / "m.sqlite")))


def test_the_user_may_come_from_the_environment(tmp_path: Path) -> None:
    path = tmp_path / "m.sqlite"
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "poolsplit_integrations.mcp_server", "--store",
                                      str(path)],
        env={**os.environ, "POOLSPLIT_MCP_USER": "carla"})

    async def body(client: Client) -> Any:
        return await client.call_tool("remember", {"content": "likes green tea"})

    assert not run(body, params).is_error
    with open_sqlite_store(path) as store:
        (item,) = store.search(("memories",), limit=10)
        assert item.value["user_id"] == "carla"


#: A client process: its own stdio server on the shared file, remembering
#: memories one by one and printing each acknowledged id at once.
WRITER = textwrap.dedent("""
    import sys, anyio
    from mcp.client import Client
    from mcp.client.stdio import StdioServerParameters

    tag, count, where = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
    params = StdioServerParameters(command=sys.executable, args=[
        "-m", "poolsplit_integrations.mcp_server", *where])

    async def remember(client, i):
        got = await client.call_tool("remember", {
            "content": f"{tag} memory {i} " + "padding " * 40, "type": "note"})
        if got.is_error:
            print("ERROR", got.content[0].text.replace(chr(10), " "), flush=True)
        else:
            print(got.structured_content["id"], flush=True)

    async def main():
        async with Client(params) as client:
            for start in range(0, count, 8):  # eight calls in flight at a time
                async with anyio.create_task_group() as group:
                    for i in range(start, min(start + 8, count)):
                        group.start_soon(remember, client, i)

    anyio.run(main)
""")


def writer(path: Path, tag: str, count: int, where: list[str] | None = None
           ) -> subprocess.Popen[str]:
    """A client process; its server serves ana from ``path`` (or from ``where``'s arguments)."""
    where = where or ["--store", str(path), "--user", "ana"]
    return subprocess.Popen([sys.executable, "-c", WRITER, tag, str(count), *where],
                            stdout=subprocess.PIPE, text=True, start_new_session=True)


def stored_ids(path: Path) -> set[str]:
    with open_sqlite_store(path) as store:
        return {item.key for item in store.search(("memories", "ana"), limit=10_000)}


def test_two_client_processes_writing_at_once_lose_nothing(tmp_path: Path) -> None:
    path = tmp_path / "shared.sqlite"
    procs = [writer(path, tag, 80) for tag in ("left", "right")]
    outs = [proc.communicate(timeout=240)[0] for proc in procs]
    assert [proc.returncode for proc in procs] == [0, 0]
    assert "ERROR" not in "".join(outs), outs
    acked = [line for out in outs for line in out.split()]
    assert len(acked) == 160
    assert stored_ids(path) == set(acked)


def test_a_server_killed_mid_remember_keeps_every_acknowledged_write(tmp_path: Path) -> None:
    path = tmp_path / "killed.sqlite"
    proc = writer(path, "burst", 10_000)
    assert proc.stdout is not None
    acked = []
    deadline = time.monotonic() + 120
    while len(acked) < 25 and time.monotonic() < deadline:
        line = proc.stdout.readline().strip()
        assert line and not line.startswith("ERROR"), line
        acked.append(line)
    # The client and its server, at once, while the next remember is in flight.
    os.killpg(proc.pid, signal.SIGKILL)
    acked += proc.stdout.read().split()  # what was acknowledged before the kill landed
    proc.wait(timeout=30)
    assert len(acked) >= 25
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    finally:
        conn.close()
    assert set(acked) <= stored_ids(path)


def test_a_pools_file_and_a_budget_from_the_command_line(tmp_path: Path) -> None:
    pools = tmp_path / "pools.json"
    pools.write_text(json.dumps([{"name": "only", "max_tokens": 500, "max_entries": 5}]))

    async def body(client: Client) -> Any:
        await client.call_tool("remember", {"content": "one two three four five", "type": "x"})
        return await client.call_tool("recall", {"query": "one"})

    got = run(body, stdio(tmp_path / "m.sqlite", "--pools", str(pools), "--budget", "3"))
    data = got.structured_content
    assert list(data["ledger"]) == ["only"] and data["budget"] == 3
    assert data["ledger"]["only"]["max_tokens"] == 3 and data["pools"]["only"] == []


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_every_tool_over_streamable_http_on_loopback(tmp_path: Path) -> None:
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "poolsplit_integrations.mcp_server", "--store",
         str(tmp_path / "m.sqlite"), "--user", "ana", "--http", f"127.0.0.1:{port}"],
        stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while True:  # until the server listens
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        got = run(every_tool, f"http://127.0.0.1:{port}/mcp")
        check_every_tool(got)
    finally:
        server.terminate()
        server.communicate(timeout=30)


def test_every_tool_over_stdio_with_the_memory_in_postgresql(postgres_ready: str) -> None:
    user = f"mcp-{os.getpid()}-{time.monotonic_ns()}"  # a namespace no other test writes
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "poolsplit_integrations.mcp_server", "--postgres", postgres_ready,
              "--user", user])
    check_every_tool(run(every_tool, params))
    from langgraph.store.postgres import PostgresStore

    with PostgresStore.from_conn_string(postgres_ready) as store:
        (item,) = store.search(("memories", user), limit=10)  # the task was forgotten
        assert item.value["scope"] == "always" and item.value["user_id"] == user


def test_without_the_extra_the_command_says_what_to_install(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from poolsplit_core import cli

    monkeypatch.setattr(cli, "_entry_points", lambda group: [])
    assert cli_main(["mcp", "--user", "ana"]) == 2
    assert "pip install 'poolsplit[mcp]'" in capsys.readouterr().err


def test_two_client_processes_writing_to_one_postgresql_lose_nothing(postgres_ready: str) -> None:
    user = f"mcp-{os.getpid()}-{time.monotonic_ns()}"
    where = ["--postgres", postgres_ready, "--user", user]
    procs = [writer(Path(), tag, 40, where) for tag in ("left", "right")]
    outs = [proc.communicate(timeout=240)[0] for proc in procs]
    assert [proc.returncode for proc in procs] == [0, 0]
    assert "ERROR" not in "".join(outs), outs
    acked = [line for out in outs for line in out.split()]
    assert len(acked) == 80
    from langgraph.store.postgres import PostgresStore

    with PostgresStore.from_conn_string(postgres_ready) as store:
        assert {item.key for item in store.search(("memories", user), limit=1000)} == set(acked)


def test_a_missing_sdk_is_one_line_naming_each_package_and_the_install() -> None:
    blocked = ("import sys; sys.modules['mcp'] = sys.modules['langgraph.store.sqlite'] = None\n"
               "from poolsplit_core.cli import main\n"
               "raise SystemExit(main(['mcp', '--user', 'ana']))\n")
    done = subprocess.run([sys.executable, "-c", blocked], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 2
    (line,) = done.stderr.splitlines()
    assert line.startswith("poolsplit: error: ")
    assert "mcp, langgraph-checkpoint-sqlite" in line
    assert line.endswith("pip install 'poolsplit[mcp]'")


def test_a_recall_reads_what_another_server_on_the_file_just_wrote_or_forgot(
        tmp_path: Path) -> None:
    path = tmp_path / "shared.sqlite"

    async def both(one: Client, other: Client) -> list[list[str]]:
        seen = [recalled_ids(await one.call_tool("recall", {"query": "tea"}))]
        fresh = await other.call_tool("remember", {"content": "ana drinks green tea",
                                                   "type": "preference"})
        seen.append(recalled_ids(await one.call_tool("recall", {"query": "tea"})))
        await other.call_tool("forget", {"id": fresh.structured_content["id"]})
        seen.append(recalled_ids(await one.call_tool("recall", {"query": "tea"})))
        return [seen[0], seen[1], seen[2], [fresh.structured_content["id"]]]

    async def go(first: Any, second: Any) -> list[list[str]]:
        async with Client(first) as one, Client(second) as other:
            return await both(one, other)

    with open_sqlite_store(path) as a, open_sqlite_store(path) as b:
        before, after, forgotten, (fresh,) = anyio.run(
            go, build_server(a, user="ana", pools=POOLS), build_server(b, user="ana", pools=POOLS))
    assert before == [] and after == [fresh] and forgotten == []
