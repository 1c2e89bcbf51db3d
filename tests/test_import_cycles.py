"""No two tritongate modules depend on each other, even through an import inside a function:
a cycle makes import order matter and the layers (schema, rundir, report, gate, cli) blur."""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import tritongate

PACKAGE = Path(tritongate.__file__).parent


def _modules() -> dict[str, Path]:
    mods = {}
    for path in PACKAGE.rglob("*.py"):
        parts = ("tritongate",) + path.relative_to(PACKAGE).with_suffix("").parts
        mods[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return mods


@functools.cache  # parsed once for the tests below
def import_graph() -> dict[str, set[str]]:
    """Module -> the tritongate modules it imports anywhere in its body (absolute imports)."""
    mods = _modules()
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for name, path in mods.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for alias in node.names:  # `from pkg import module` imports the module
                    target = f"{node.module}.{alias.name}"
                    graph[name].add(target if target in mods else node.module)
            elif isinstance(node, ast.Import):
                graph[name].update(a.name for a in node.names)
        graph[name] = {t for t in graph[name] if t in mods and t != name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_cycle_finder_finds_a_lazy_cycle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_the_graph_sees_imports_inside_functions():
    graph = import_graph()
    assert "tritongate.report.export" in graph["tritongate.rundir"]  # Run.to_pandas imports it lazily
    assert "tritongate.cli.inspect" in graph["tritongate.cli.parser"]  # `from tritongate.cli import inspect`


def test_no_import_cycles():
    assert cycles(import_graph()) == []
