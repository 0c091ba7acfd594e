"""A graph node's ``store: BaseStore`` type-checks as a PoolSplitStore through ``as_poolsplit``.

mypy (strict) checks two user files in one run: a node calling
``as_poolsplit(store).retrieve_pools(...)`` passes, the same node calling
``store.retrieve_pools(...)`` on the plain ``BaseStore`` fails. The cache
lives under ``.mypy_cache/`` (git-ignored), so only the first run pays for
reading LangGraph's and LangChain's types.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore

from poolsplit_integrations.langgraph import PoolSplitStore, as_poolsplit

pytest.importorskip("mypy")

ROOT = Path(__file__).parents[2]

NODE = textwrap.dedent("""\
    from typing import Any, TypedDict

    from langgraph.store.base import BaseStore

    from poolsplit_core import Pool
    from poolsplit_integrations.langgraph import as_poolsplit

    POOLS = [Pool("work", 300, 2, ("task",))]


    class State(TypedDict):
        message: str


    def node(state: State, *, store: BaseStore) -> dict[str, Any]:
        got = {STORE}.retrieve_pools(("memories", "ana"), POOLS, {{"message": state["message"]}})
        return {{"memories": [item.key for items in got.values() for item in items]}}
""")


def test_a_node_typed_base_store_checks_through_as_poolsplit_and_not_without(tmp_path):
    typed = tmp_path / "typed_node.py"
    typed.write_text(NODE.format(STORE="as_poolsplit(store)"))
    plain = tmp_path / "plain_node.py"
    plain.write_text(NODE.format(STORE="store").replace(
        "from poolsplit_integrations.langgraph import as_poolsplit\n", ""))
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-error-summary",
         "--cache-dir", str(ROOT / ".mypy_cache" / "user-node"), str(typed), str(plain)],
        capture_output=True, text=True, cwd=ROOT, timeout=120)
    errors = done.stdout.splitlines()
    assert not [line for line in errors if "typed_node.py" in line], done.stdout + done.stderr
    assert len(errors) == 1 and "plain_node.py:15: error:" in errors[0], done.stdout
    assert '"BaseStore" has no attribute "retrieve_pools"' in errors[0]


def test_as_poolsplit_returns_the_store_a_node_was_given():
    store: BaseStore = PoolSplitStore(InMemoryStore())
    assert as_poolsplit(store) is store


@pytest.mark.parametrize(("store", "got"), [(InMemoryStore(), "got InMemoryStore; wrap"),
                                            (None, "got None: the graph was compiled without")])
def test_as_poolsplit_refuses_another_store_naming_its_type_and_the_fix(store, got):
    with pytest.raises(TypeError, match="as_poolsplit needs a PoolSplitStore") as info:
        as_poolsplit(store)
    assert got in str(info.value)
    assert "builder.compile(store=PoolSplitStore(" in str(info.value)
