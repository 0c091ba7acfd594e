"""Imports point one way: the core never imports the adapters, and no two modules import each other.

Every module of ``poolsplit_core`` and ``poolsplit_integrations`` is read with
``ast`` (not imported), so an import inside a function, an ``if``, a ``try``
or ``TYPE_CHECKING`` counts like one at the top; ``importlib.import_module``
with a literal name counts too. The command line reaches the optional
PostgreSQL demo through the ``poolsplit.demos`` entry point, not an import.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("poolsplit_core", "poolsplit_integrations")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def project_modules() -> dict[str, Path]:
    return {module_name(path): path
            for package in PACKAGES for path in sorted((ROOT / package).rglob("*.py"))}


def imported_names(path: Path, module: str) -> set[str]:
    """Every dotted name ``path`` imports from, at any depth of its syntax tree.

    ``import a.b`` gives ``a.b``; ``from a import b`` gives ``a.b`` when that
    is a module of the project, else ``a`` (``b`` is a name in it); a relative
    import is resolved against the module's package.
    """
    modules = project_modules()
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            source = node.module or ""
            if node.level:
                parts = package.split(".")
                base = parts[: len(parts) - node.level + 1]
                source = ".".join([*base, *([node.module] if node.module else [])])
            for alias in node.names:
                submodule = f"{source}.{alias.name}"
                names.add(submodule if submodule in modules else source)
        elif (isinstance(node, ast.Call) and node.args
              and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)
              and _called(node.func) in ("import_module", "importlib.import_module")):
            names.add(node.args[0].value)
    return names


def _called(func: ast.expr) -> str:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
        return f"{func.value.id}.{func.attr}"
    return ""


def import_graph() -> dict[str, set[str]]:
    """Module -> the project modules it imports (:func:`imported_names`).

    The packages above a module, whose ``__init__`` Python runs first, are not
    edges: ``from poolsplit_core import poolsplit`` depends on the module
    ``poolsplit_core.poolsplit``, not on the package that re-exports it.
    """
    modules = project_modules()
    return {module: {name for name in imported_names(path, module)
                     if name in modules and name != module}
            for module, path in modules.items()}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph`` as a path that returns to its start, or None (depth-first search)."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done (no cycle through it)
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for child in sorted(graph.get(node, ())):
            if state.get(child) == 1:
                return [*path[path.index(child):], child]
            if child not in state:
                found = visit(child)
                if found:
                    return found
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def test_the_scan_sees_every_module_of_both_packages():
    modules = project_modules()
    assert {"poolsplit_core.cli", "poolsplit_core.poolsplit", "poolsplit_integrations",
            "poolsplit_integrations._entries", "poolsplit_integrations.langgraph"} <= set(modules)
    assert "poolsplit_core._plain" in import_graph()["poolsplit_core.cli"]


@pytest.mark.parametrize("module", sorted(m for m in project_modules()
                                          if m.startswith("poolsplit_core")))
def test_no_core_module_imports_the_integrations(module):
    path = project_modules()[module]
    wrong = sorted(name for name in imported_names(path, module)
                   if name.split(".")[0] == "poolsplit_integrations")
    assert not wrong, f"{module} imports {wrong}: the core must never import the adapters"


def test_no_two_project_modules_import_each_other():
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_the_cycle_search_finds_a_cycle_and_the_scan_reads_imports_in_functions(tmp_path):
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set(), "c": {"a", "b"}}) is None
    probe = tmp_path / "probe.py"
    probe.write_text("def f():\n    if True:\n        from poolsplit_integrations import _entries\n"
                     "    from . import sibling\n", encoding="utf-8")
    assert imported_names(probe, "pkg.probe") == {"poolsplit_integrations._entries", "pkg"}
