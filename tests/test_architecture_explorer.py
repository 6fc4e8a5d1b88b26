"""The explorer reaches the engine through one module (explorer/compiler.py), and the
engine never imports the explorer: an AST scan of every import, function-level ones
included."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOOR = "explorer/compiler.py"


def imported_modules(path: Path) -> list[str]:
    names: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
    return names


def _top(name: str) -> str:
    return name.split(".")[0]


def test_the_explorer_imports_the_engine_only_through_its_compiler_module() -> None:
    offenders = {}
    for path in sorted((ROOT / "explorer").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        engine = [n for n in imported_modules(path) if _top(n) == "engine"]
        if engine and rel != DOOR:
            offenders[rel] = engine
    assert offenders == {}, f"import these through {DOOR}: {offenders}"
    assert any(_top(n) == "engine" for n in imported_modules(ROOT / DOOR))


def test_the_engine_never_imports_the_explorer() -> None:
    offenders = {path.relative_to(ROOT).as_posix(): names
                 for path in sorted((ROOT / "engine").rglob("*.py"))
                 if (names := [n for n in imported_modules(path) if _top(n) == "explorer"])}
    assert offenders == {}


def test_the_readmes_table_lists_every_package_folder() -> None:
    """README.md's "What is inside" names each package folder down to engine/relay/X/."""
    text = (ROOT / "README.md").read_text()
    table = text[text.index("## What is inside"):text.index("## The CLI")]
    named = {cell.strip("`").rstrip("/") for row in table.splitlines() if row.startswith("| `")
             for cell in row.split("|")[1].replace(",", " ").split()}
    packages = {init.parent.relative_to(ROOT).as_posix()
                for top in ("engine", "explorer") for init in (ROOT / top).rglob("__init__.py")
                if len(init.parent.relative_to(ROOT).parts) <= 3}
    packages -= {"engine"}  # the facade: the table's rows are its subpackages
    assert packages - named == set(), "add these folders to README.md's table"
    assert {n for n in named if "/" in n or n in ("engine", "explorer")} - packages - {
        "templates", "static", "tests", "bench"} == set(), "README names folders that are gone"


def _explorer_modules() -> dict[str, Path]:
    modules = {}
    for path in (ROOT / "explorer").rglob("*.py"):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


def _explorer_edges(modules: dict[str, Path]) -> dict[str, set[str]]:
    """Module -> the explorer modules it imports (`from explorer.x import y` counts as
    explorer.x.y when that is a module); a package its submodules load first is no edge."""
    edges: dict[str, set[str]] = {}
    for name, path in modules.items():
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                found.update(a.name for a in node.names if a.name in modules)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module in modules:
                for alias in node.names:
                    sub = f"{node.module}.{alias.name}"
                    found.add(sub if sub in modules else node.module)
        edges[name] = {t for t in found if t != name and not name.startswith(t + ".")}
    return edges


def test_the_explorers_modules_import_each_other_without_cycles() -> None:
    edges = _explorer_edges(_explorer_modules())
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(edges[node]):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt):], nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        path.pop()
        state[node] = 2
        return None

    cycles = [c for start in sorted(edges) if start not in state and (c := visit(start))]
    assert cycles == [], " -> ".join(cycles[0])
