"""The packages form layers and every import points down, an import inside a function and one
only for type checking included: a module may import its own layer and those below it, never
one above. Entry points (``__main__`` modules) belong to the command line, the top layer.

Where a new module goes: the lowest layer whose modules are all it needs. A new package or
top-level module must be given a layer here (the last test says so)."""

from __future__ import annotations

import pytest

from tests.test_import_cycles import cycles, import_graph

# lowest first; each: (name, the packages and top-level modules of tritongate in it)
LAYERS: list[tuple[str, set[str]]] = [
    ("documents", {"errors", "stats", "schema", "model", "validation", "markers", "atomicio"}),
    ("files and text", {"safefs", "yamlsafe", "rundir", "runlog", "argtypes", "sharding", "report", "overlay",
                        "identity", "childenv", "linepipe", "recorded", "workdir"}),
    ("measuring", {"harness", "ops", "suites", "autotune", "ir", "rowcase", "backends",
                   "preflight", "interpreter_cost", "progress", "runner"}),
    ("judging and the gate pipeline", {"gate"}),
    ("pairing", {"pair"}),
    ("tools", {"prescreen", "baselines", "history", "dashboard", "calibrate", "batch", "github"}),
    ("command line", {"cli", "__main__"}),
]
RANK = {unit: i for i, (_, units) in enumerate(LAYERS) for unit in units}


def unit(module: str) -> str:
    """``tritongate.gate.rule`` -> ``gate``; an entry point (``tritongate.batch.__main__``) -> ``__main__``."""
    parts = module.split(".")
    if parts[-1] == "__main__":
        return "__main__"
    return parts[1] if len(parts) > 1 else "tritongate"


def upward_imports() -> list[str]:
    found = []
    for module, targets in import_graph().items():
        if module == "tritongate":
            continue
        for target in targets:
            here, there = RANK[unit(module)], RANK.get(unit(target), -1)
            if there > here:
                found.append(f"{module} ({LAYERS[here][0]}) imports {target} ({LAYERS[there][0]})")
    return sorted(found)


def test_every_package_and_top_level_module_has_a_layer() -> None:
    units = {unit(m) for m in import_graph()} - {"tritongate"}
    assert units <= set(RANK), f"give these a layer in tests/test_layers.py: {sorted(units - set(RANK))}"


def test_every_import_points_to_its_own_layer_or_below() -> None:
    assert upward_imports() == []


@pytest.mark.parametrize("layer", [name for name, _ in LAYERS])
def test_a_layer_imports_nothing_from_the_layers_above(layer: str) -> None:
    """The same rule, a layer at a time, so a failure names the layer it broke."""
    assert [line for line in upward_imports() if f"({layer}) imports" in line] == []


def package_cycles() -> list[list[str]]:
    """The cycles among packages and top-level modules (each a strongly connected set of two
    or more), imports inside functions and for type checking included."""
    edges: dict[str, set[str]] = {}
    for module, targets in import_graph().items():
        for target in targets:
            a, b = unit(module), unit(target)
            if a != b and "tritongate" not in (a, b):
                edges.setdefault(a, set()).add(b)
                edges.setdefault(b, set())
    return cycles(edges)


def test_no_two_packages_import_each_other_even_through_others() -> None:
    """Within a layer too, packages form an order: a package can be read, moved or tested with
    what it imports and never the other way round."""
    assert package_cycles() == []


def test_the_cycle_finder_finds_a_cycle(monkeypatch) -> None:
    import tests.test_layers as layers

    graph = {"tritongate.ir.a": {"tritongate.autotune.b"}, "tritongate.autotune.b": {"tritongate.ir.c"}}
    monkeypatch.setattr(layers, "import_graph", lambda: graph)
    assert layers.package_cycles() == [["autotune", "ir"]]


MAX_MODULE_LINES = 400  # past it a module does two things: split it by responsibility


def test_no_module_is_past_its_line_limit() -> None:
    from pathlib import Path

    package = Path(__file__).resolve().parents[1] / "tritongate"
    long = {str(p.relative_to(package)): n for p in sorted(package.rglob("*.py"))
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES}
    assert long == {}, f"split these modules (lines each, at most {MAX_MODULE_LINES}): {long}"
