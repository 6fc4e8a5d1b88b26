"""The engine's layering, checked on its source: no import cycle between subpackages.

An AST scan of every module under engine/ (module-level, function-level and
TYPE_CHECKING imports alike: a lazy import is still a dependency) builds the
graph of imports between the subpackages below, and of the modules inside one
subpackage. A failure prints each edge of the cycle with the files that make it.
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ENGINE = ROOT / "engine"

SUBPACKAGES = (
    "engine.ir", "engine.transform", "engine.instrument", "engine.relay", "engine.te",
    "engine.tir", "engine.target", "engine.runtime", "engine.driver", "engine.contrib",
)

# Edges allowed although they close a cycle: (from subpackage, to subpackage, file). None
# are: keep it empty (a stale entry fails `test_known_build_edges_are_still_there`).
KNOWN_BUILD_EDGES: frozenset[tuple[str, str, str]] = frozenset()

Edge = tuple[str, str]
_MODULE_PATH = re.compile(r"(engine|explorer)(\.[A-Za-z_][A-Za-z0-9_]*)+")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imported(module: str, is_package: bool, node: ast.Import | ast.ImportFrom) -> Iterator[str]:
    """Every module an import statement may load (`from a import b` may load `a.b`)."""
    if isinstance(node, ast.Import):
        yield from (alias.name for alias in node.names)
        return
    base = node.module or ""
    if node.level:
        parts = module.split(".")
        parts = parts if is_package else parts[:-1]
        parts = parts[: len(parts) - node.level + 1]
        base = ".".join([*parts, *([node.module] if node.module else [])])
    yield base
    yield from (f"{base}.{alias.name}" for alias in node.names)


def _imports(path: Path) -> Iterator[tuple[str, int]]:
    """Import statements, and string constants naming an engine module (the lazy tables
    and `import_module` calls: a module loaded by name is a dependency too)."""
    module = _module_name(path)
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for name in _imported(module, path.name == "__init__.py", node):
                yield name, node.lineno
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and _MODULE_PATH.fullmatch(node.value) and _existing_module(node.value):
            yield node.value, node.lineno


def _engine_files() -> list[Path]:
    return sorted(ENGINE.rglob("*.py"))


def _owner(name: str) -> str | None:
    """The subpackage a module belongs to ("engine" for the facade itself)."""
    for sub in SUBPACKAGES:
        if name == sub or name.startswith(sub + "."):
            return sub
    return "engine" if name == "engine" else None


def _existing_module(name: str) -> str | None:
    """`name` if it is an engine module or package, else its parent (an imported name)."""
    parts = name.split(".")
    while parts:
        path = ROOT.joinpath(*parts)
        if path.with_suffix(".py").is_file() or (path / "__init__.py").is_file():
            return ".".join(parts)
        parts.pop()
    return None


def _graph(level: str) -> dict[Edge, set[str]]:
    """Edges between subpackages (`level="package"`) or between the modules of one
    subpackage (`level="module"`), each with the files (and lines) that make it."""
    edges: dict[Edge, set[str]] = defaultdict(set)
    for path in _engine_files():
        source = _module_name(path)
        where = f"{path.relative_to(ROOT)}:"
        for name, line in _imports(path):
            if name != "engine" and not name.startswith("engine."):
                continue
            target = _existing_module(name)
            if target is None or target == source:
                continue
            a, b = _owner(source), _owner(target)
            if level == "package" and a != b and a is not None and b is not None:
                edges[(a, b)].add(f"{where}{line}")
            elif level == "module" and a == b and a != "engine" and not _is_parent(target, source):
                edges[(source, target)].add(f"{where}{line}")
    return edges


def _is_parent(package: str, module: str) -> bool:
    """Importing a module runs its packages' __init__ first; that is not an edge."""
    return module.startswith(package + ".")


def _find_cycle(edges: dict[Edge, set[str]]) -> list[str] | None:
    succ: dict[str, list[str]] = defaultdict(list)
    for a, b in sorted(edges):
        succ[a].append(b)
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in succ[node]:
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        path.pop()
        state[node] = 2
        return None

    for start in sorted(succ):
        if start not in state:
            found = visit(start)
            if found:
                return found
    return None


def _describe(cycle: list[str], edges: dict[Edge, set[str]]) -> str:
    lines = ["import cycle: " + " -> ".join(cycle)]
    for a, b in zip(cycle, cycle[1:]):
        lines.append(f"  {a} -> {b}: " + ", ".join(sorted(edges[(a, b)])))
    return "\n".join(lines)


def _without_known(edges: dict[Edge, set[str]]) -> dict[Edge, set[str]]:
    out: dict[Edge, set[str]] = {}
    for (a, b), files in edges.items():
        rest = {f for f in files if (a, b, f.rsplit(":", 1)[0]) not in KNOWN_BUILD_EDGES}
        if rest:
            out[(a, b)] = rest
    return out


def test_no_cycle_between_subpackages() -> None:
    edges = _without_known(_graph("package"))
    cycle = _find_cycle(edges)
    assert cycle is None, _describe(cycle, edges)


def test_no_cycle_between_modules_of_a_subpackage() -> None:
    edges = _without_known(_graph("module"))
    cycle = _find_cycle(edges)
    assert cycle is None, _describe(cycle, edges)


def test_engine_never_imports_its_facade() -> None:
    """`import engine` / `from engine import x` inside engine/ goes through the facade;
    engine modules import the subpackage that owns the name."""
    edges = _without_known(_graph("package"))
    users = sorted(f for (a, b), files in edges.items() if b == "engine" for f in files)
    assert not users, "engine modules importing the engine facade:\n  " + "\n  ".join(users)


def test_engine_never_imports_the_explorer() -> None:
    users = [f"{path.relative_to(ROOT)}:{line}" for path in _engine_files()
             for name, line in _imports(path)
             if name == "explorer" or name.startswith("explorer.")]
    assert not users, "engine imports explorer:\n  " + "\n  ".join(users)


def test_ir_core_imports_no_dialect() -> None:
    users = sorted(files for (a, b), files in _graph("package").items()
                   if a == "engine.ir" and b == "engine.relay")
    assert not users, f"engine.ir imports engine.relay: {users}"


def test_known_build_edges_are_still_there() -> None:
    """An allow-listed edge that is gone must leave the list, so it cannot hide a new one."""
    edges = _graph("package")
    present = {(a, b, f.rsplit(":", 1)[0]) for (a, b), files in edges.items() for f in files}
    stale = sorted(KNOWN_BUILD_EDGES - present)
    assert not stale, f"remove from KNOWN_BUILD_EDGES: {stale}"
