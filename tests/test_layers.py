"""The package's imports go down its layers: no circle, and no module importing one above it
(the façades ``__init__`` and ``asyncio`` re-export; ``_core``, the compiled core, is below
everything). Read from the source with ``ast``, every import counted: at the top, inside a
function, or for type checkers only. No server."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "python" / "redis_leaderboard"

# Bottom up; a module may import modules of its own layer or of layers below it.
LAYERS: list[set[str]] = [
    # types, and what needs nothing of the package: results, literals, the drivers, the
    # private server launcher, the log pump of the core's observations
    {"_types", "_drive", "_redis_server", "_logs"},
    # client options, URLs, hash-tag rules
    {"options"},
    # transports: no board logic
    {"client", "cluster", "_async_client"},
    # the boards' algorithms, each written once (events, the plain board, boards made of it)
    {"boards.__init__", "boards.events"},
    {"boards.plain"},
    {"boards.seasons", "boards.sharded"},
    {"boards.league", "boards.tournament", "boards.team"},
    # the public classes: algorithms + a driver + client types
    {"_sync", "_async"},
    # façades: re-exports only
    {"__init__", "asyncio", "leaderboard", "seasons", "sharded"},
    # on top: instrumentation of every method, the command line and the demo (its own façades
    # last)
    {"_redis_target", "cli", "demo.validation", "observability"},
    {"demo.server"},
    {"demo.cli"},
    {"__main__", "demo.__init__", "demo.__main__"},
]
LAYER = {name: i for i, layer in enumerate(LAYERS) for name in layer}


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE).with_suffix("").parts
    return ".".join(parts)


def package_of(module: str, path: Path) -> list[str]:
    """The package a module's relative imports start from, as name parts."""
    parts = module.split(".")
    return parts if path.name == "__init__.py" else parts[:-1]


def imports_of(path: Path) -> set[str]:
    """The package's modules ``path`` imports (``_core`` left out)."""
    module = module_name(path)
    base = package_of(module, path)
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        targets: list[list[str]] = []
        if isinstance(node, ast.ImportFrom):
            if node.level:
                anchor = base[: len(base) - (node.level - 1)] if node.level > 1 else base
                anchor = [p for p in anchor if p != "__init__"]
                origin = anchor + (node.module.split(".") if node.module else [])
            elif node.module and node.module.startswith("redis_leaderboard"):
                origin = node.module.split(".")[1:]
            else:
                continue
            if node.module is None or not node.module:
                # `from . import x`: x is a module of the package (or a name of __init__)
                for alias in node.names:
                    candidate = [*origin, alias.name]
                    targets.append(candidate if resolve(candidate) else origin)
            else:
                targets.append(origin)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("redis_leaderboard."):
                    targets.append(alias.name.split(".")[1:])
        for target in targets:
            name = resolve(target)
            if name is not None and name != "_core" and name != module:
                found.add(name)
    return found


def resolve(parts: list[str]) -> str | None:
    """The module ``parts`` names: ``[]`` is ``__init__``, a package its ``__init__``."""
    if not parts:
        return "__init__"
    joined = ".".join(parts)
    if (PACKAGE.joinpath(*parts).with_suffix(".py")).exists():
        return joined
    if (PACKAGE.joinpath(*parts) / "__init__.py").exists():
        return f"{joined}.__init__" if parts else "__init__"
    if (PACKAGE.joinpath(*parts).with_suffix(".pyi")).exists():
        return joined
    return None


def graph() -> dict[str, set[str]]:
    return {module_name(path): imports_of(path) for path in sorted(PACKAGE.rglob("*.py"))}


def test_every_module_has_a_layer() -> None:
    assert sorted(set(graph()) - set(LAYER)) == []


def test_imports_go_down() -> None:
    upward = [
        f"{module} (layer {LAYER[module]}) imports {target} (layer {LAYER[target]})"
        for module, targets in graph().items()
        for target in sorted(targets)
        if LAYER[target] > LAYER[module]
    ]
    assert upward == []


def test_no_import_circle() -> None:
    edges = graph()
    circles: list[list[str]] = []
    state: dict[str, int] = {}  # 1: on the path, 2: done
    path: list[str] = []

    def visit(module: str) -> None:
        state[module] = 1
        path.append(module)
        for target in sorted(edges.get(module, ())):
            if state.get(target) == 1:
                circles.append([*path[path.index(target) :], target])
            elif target not in state:
                visit(target)
        path.pop()
        state[module] = 2

    for module in sorted(edges):
        if module not in state:
            visit(module)
    assert circles == []


def test_the_checker_sees_a_circle() -> None:
    # The checker itself: the import graph it reads has the edges it should.
    edges = graph()
    assert "options" in edges["client"]
    assert "boards.plain" in edges["boards.sharded"]
    assert "boards.plain" in edges["boards.seasons"]
    assert "__init__" in edges["cli"]
