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
