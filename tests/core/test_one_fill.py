"""The fill is written once, and the file a user copies stays the spec's size.

Every engine finds candidates; only ``fill_pools`` spends a pool's room. So no
other function of the package counts tokens or entries down, and every engine
class reaches the fill through ``fill_pools`` (``test_engine_conformance.py``
checks what they hand it).
"""

from __future__ import annotations

import ast
from pathlib import Path

import poolsplit_core
import poolsplit_core.poolsplit as core
import poolsplit_integrations

#: Every package of the project: the core's engines and the adapters' (the database's) alike.
PACKAGES = [Path(poolsplit_core.__file__).parent, Path(poolsplit_integrations.__file__).parent]
ROOM = ("tokens", "slots", "entries", "room")


def room_spenders(path: Path) -> list[str]:
    """The functions of ``path`` that subtract from a name or attribute about a pool's room."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for function in ast.walk(tree):
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for node in ast.walk(function):
            if isinstance(node, ast.AugAssign) and isinstance(node.op, ast.Sub):
                target = ast.unparse(node.target)
                if any(word in target for word in ROOM):
                    found.append(f"{path.name}:{function.name}: {target}")
    return found


def test_only_fill_pools_spends_a_pools_room():
    paths = sorted(path for package in PACKAGES for path in package.rglob("*.py"))
    assert any(path.name == "_pgengine.py" for path in paths)  # the database engine is read
    spenders = [found for path in paths for found in room_spenders(path)]
    assert spenders == ["poolsplit.py:fill_pools: room.tokens",
                        "poolsplit.py:fill_pools: room.entries"]


def test_the_check_sees_a_second_fill(tmp_path):
    second = tmp_path / "second.py"
    second.write_text("def fill(pool):\n    tokens_left = pool.max_tokens\n"
                      "    for cost in (1, 2):\n        tokens_left -= cost\n")
    assert room_spenders(second) == ["second.py:fill: tokens_left"]


def test_the_vendorable_core_stays_at_most_2150_lines():
    # 1,800 for the spec's engine, and about 320 for the strict reading (strict=True):
    # the rules of poolsplit_core.checks live in this file so that it can apply them alone.
    lines = Path(core.__file__).read_text(encoding="utf-8").count("\n")
    assert lines <= 2150, lines
