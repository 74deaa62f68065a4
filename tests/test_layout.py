"""The house is the pipeline: every module of a stage imports only modules of its own stage
(with no cycle among them) or of earlier stages, function-level imports included."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import symgraph

PACKAGE = Path(symgraph.__file__).resolve().parent

# Data-flow order. A folder is a stage; so is each public top-level module.
STAGES = ["version", "ir", "frontends", "ad", "pictures", "lower", "backends", "runtime", "api",
          "optimize", "integrate",
          "graphs", "cli", "static", "dynamic", "__init__", "__main__"]


def _modules() -> dict[str, Path]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
        if parts[-1] == "__init__" and len(parts) > 1:
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def _stage(module: str) -> str:
    return module.split(".")[0]


def _imports(module: str, path: Path, known: set[str]) -> set[str]:
    """The package's modules that `module` imports anywhere in its text."""
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[:len(package) - node.level + 1] if node.level > 1 else package
                target = ".".join([*base, *(node.module.split(".") if node.module else [])])
            elif node.module and node.module.startswith("symgraph"):
                target = node.module.removeprefix("symgraph").lstrip(".")
            else:
                continue
            for alias in node.names:  # `from . import x`: x may be a module
                sub = f"{target}.{alias.name}" if target else alias.name
                found.add(sub if sub in known else target)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("symgraph."):
                    found.add(alias.name.removeprefix("symgraph."))
    return {m for m in found if m in known and m != module and m != ""}


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    known = set(modules)
    return {m: _imports(m, p, known) for m, p in modules.items()}


def test_every_module_belongs_to_a_stage():
    unknown = sorted(m for m in _modules() if _stage(m) not in STAGES)
    assert not unknown, f"modules outside the stage list {STAGES}: {unknown}"


def test_no_module_imports_against_the_stage_order():
    order = {s: i for i, s in enumerate(STAGES)}
    against = [f"{m} -> {t}" for m, targets in _graph().items() for t in sorted(targets)
               if order[_stage(t)] > order[_stage(m)] and not t.endswith("__init__")]
    assert not against, "imports against the data flow:\n" + "\n".join(against)


def test_modules_import_no_cycle():
    graph = _graph()
    # A package's __init__ re-exporting its modules is no cycle of theirs.
    for m in graph:
        if _modules()[m].name == "__init__.py":
            for t in graph:
                graph[t].discard(m)
    state: dict[str, int] = {}
    for root in sorted(graph):
        if root in state:
            continue
        stack = [(root, iter(sorted(graph[root])))]
        path = [root]
        state[root] = 1
        while stack:
            module, targets = stack[-1]
            target = next(targets, None)
            if target is None:
                stack.pop()
                path.pop()
                state[module] = 2
            elif state.get(target) == 1:
                cycle = path[path.index(target):] + [target]
                pytest.fail("import cycle: " + " -> ".join(cycle))
            elif target not in state:
                state[target] = 1
                stack.append((target, iter(sorted(graph[target]))))
                path.append(target)


def test_the_layout_test_sees_function_level_imports():
    # ir.traversal imports ir.node for type checking only; a real cycle would be caught.
    graph = _graph()
    assert "backends.tape.builder" in graph["runtime.build"]  # imported inside a function
