"""No import cycle among nestor's modules, counting imports inside functions too.

Function-level imports hide a cycle from the interpreter but not from a reader: ``a`` needs ``b``
and ``b`` needs ``a`` is one module in two files. Imports under ``if TYPE_CHECKING:`` are type
hints only and are not counted (the layer contract allows them upward).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"


def module_names() -> dict[str, Path]:
    """Every module of ``nestor``: dotted name to file (a package is its ``__init__.py``)."""
    names: dict[str, Path] = {}
    for path in sorted((SRC / "nestor").rglob("*.py")):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        names[".".join(parts)] = path
    return names


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(nodes: Iterator[ast.AST] | list[ast.stmt]) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import in ``nodes``, at any depth, except in the body of ``if TYPE_CHECKING:``."""
    for node in nodes:
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            yield from _imports(node.orelse)
            continue
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        yield from _imports(ast.iter_child_nodes(node))


def imported_modules(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The nestor modules ``name`` imports (``from pkg import mod`` counts as ``pkg.mod``)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in _imports(ast.parse(path.read_text(encoding="utf-8")).body):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        else:
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            submodules = [f"{base}.{alias.name}" for alias in node.names]
            targets = [module if module in modules else base for module in submodules]
        for target in targets:
            while target and target not in modules:  # ``import nestor.a.b.attr`` style: the module part
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def import_graph() -> dict[str, set[str]]:
    """Each nestor module to the nestor modules it imports."""
    modules = module_names()
    return {name: imported_modules(name, path, modules) for name, path in modules.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle per strongly connected group of modules (Tarjan), as a path back to its start."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[set[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group: set[str] = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.add(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(group)

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return [_path_through(group, graph) for group in groups]


def _path_through(group: set[str], graph: dict[str, set[str]]) -> list[str]:
    """A shortest cycle through the group's first module, staying inside the group."""
    start = min(group)
    paths: dict[str, list[str]] = {start: [start]}
    frontier = [start]
    while frontier:
        following: list[str] = []
        for node in frontier:
            for target in sorted(graph[node] & group):
                if target == start:
                    return [*paths[node], start]
                if target not in paths:
                    paths[target] = [*paths[node], target]
                    following.append(target)
        frontier = following
    return sorted(group)


def test_the_graph_sees_function_level_imports_and_skips_type_checking_ones() -> None:
    graph = import_graph()
    assert "nestor.app" in graph["nestor.cli.headless"]  # ``from nestor.app import App`` inside a function
    assert "nestor.store.sessions" not in graph["nestor.app.conversation"]  # only under TYPE_CHECKING


def test_a_cycle_is_found_and_named() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c", "a"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_nestor_has_no_import_cycle() -> None:
    found = cycles(import_graph())
    assert not found, "import cycles (function-level imports included):\n" + "\n".join(
        " -> ".join(cycle) for cycle in found
    )
