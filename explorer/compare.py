"""Compare two runs pass by pass: their leaf passes aligned by name.

The runs may be of one session (other options: opt level, disabled passes), of two
sessions, or one imported from another engine version (explorer/exchange.py): only the
stored events and snapshots are read. A leaf pass is known by its path (the Sequentials it
ran in, then its name: `FoldScaleAxis › BackwardFoldScaleAxis`), and the alignment is the
longest matching of the two ordered path lists (difflib's), so the passes one run disabled
show as rows with one side empty and the passes after them line up again. Each side of a row carries what the
timeline shows of that pass (changed, time, node count, numerics) and its snapshots,
so the page can diff the same pass's after-module across the two runs with its diff view.
"""

from __future__ import annotations

from difflib import SequenceMatcher
from typing import Any

from explorer.protocol import (
    PASS_FAILED,
    PASS_FINISHED,
    PASS_STARTED,
    ComparedPass,
    ComparisonRow,
    RunComparison,
)
from explorer.store import Store

Leaf = tuple[tuple[str, ...], ComparedPass]  # (the Sequentials around it..., its name), it


def leaf_passes(store: Store, run_id: str) -> list[Leaf]:
    """The run's leaf passes in order (and any that failed), each with its path: the names
    of the Sequentials it ran in, then its own."""
    store.run(run_id)  # 404 for an unknown run
    started: dict[int, tuple[str, int | None]] = {}
    found: list[Leaf] = []

    def path(index: int) -> tuple[str, ...]:
        names: list[str] = []
        at: int | None = index
        while at is not None and at in started:
            names.append(started[at][0])
            at = started[at][1]
        return tuple(reversed(names))

    for event in store.events(run_id):
        data = event["data"]
        if event["type"] == PASS_STARTED:
            started[data["pass_index"]] = (str(data["name"]), data["parent_index"])
        elif event["type"] == PASS_FINISHED and data["leaf"]:
            found.append((path(data["pass_index"]), _finished(data)))
        elif event["type"] == PASS_FAILED and not any(p["failed"] for _, p in found):
            found.append((path(data["pass_index"]), _failed(data)))  # not its Sequentials
    return found


def _finished(data: dict[str, Any]) -> ComparedPass:
    return ComparedPass(pass_index=data["pass_index"], changed=bool(data["changed"]),
                        failed=False, elapsed_ms=data["elapsed_ms"],
                        nodes=(data.get("stats") or {}).get("nodes"), before=data["before"],
                        after=data["after"], numerics=data.get("numerics"))


def _failed(data: dict[str, Any]) -> ComparedPass:
    return ComparedPass(pass_index=data["pass_index"], changed=False, failed=True,
                        elapsed_ms=None, nodes=None, before=data.get("before"), after=None,
                        numerics=None)


class _Texts:
    """Whether two snapshots print the same text (by the store's content hash)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._hashes: dict[int, str] = {}

    def same(self, a: int | None, b: int | None) -> bool | None:
        if a is None or b is None:
            return None
        return self._hash(a) == self._hash(b)

    def _hash(self, snapshot: int) -> str:
        if snapshot not in self._hashes:
            self._hashes[snapshot] = self.store.snapshot_text_hash(snapshot)
        return self._hashes[snapshot]


def compare_runs(store: Store, run_a: str, run_b: str) -> RunComparison:
    a, b = leaf_passes(store, run_a), leaf_passes(store, run_b)
    texts = _Texts(store)
    matcher = SequenceMatcher(a=[p for p, _ in a], b=[p for p, _ in b], autojunk=False)
    rows: list[ComparisonRow] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            rows += [_row(path, side_a, side_b, texts)
                     for (path, side_a), (_, side_b) in zip(a[i1:i2], b[j1:j2], strict=True)]
            continue
        rows += [_row(path, side, None, texts) for path, side in a[i1:i2]]
        rows += [_row(path, None, side, texts) for path, side in b[j1:j2]]
    final_a, final_b = store.run(run_a)["final_snapshot"], store.run(run_b)["final_snapshot"]
    return RunComparison(a=run_a, b=run_b, rows=rows, same_final=texts.same(final_a, final_b))


def _row(path: tuple[str, ...], a: ComparedPass | None, b: ComparedPass | None,
         texts: _Texts) -> ComparisonRow:
    same = texts.same(a["after"], b["after"]) if a is not None and b is not None else None
    return ComparisonRow(name=path[-1], path=list(path[:-1]), a=a, b=b, same_after=same)


# --- the terminal's table (`explorer compare A B`) ----------------------------------------
def _side_text(side: ComparedPass | None) -> str:
    if side is None:
        return "not run"
    if side["failed"]:
        return "failed"
    what = "changed" if side["changed"] else "-"
    numerics = side["numerics"]
    mark = "" if numerics is None else (" ok" if numerics["ok"] else " DRIFT")
    return f"{what:<8}{side['elapsed_ms'] or 0:>9.2f} ms {side['nodes'] or 0:>7}{mark}"


def comparison_text(comparison: RunComparison, differ_only: bool = False) -> str:
    """The comparison as a table: pass, run A, run B (changed, time, nodes, numerics), and
    whether the two after-modules are the same."""
    rows = [r for r in comparison["rows"] if not differ_only or r["same_after"] is not True]
    width = max([len(" > ".join([*r["path"][1:], r["name"]])) for r in rows] + [4])
    lines = [f"{'pass':<{width}}  {'run A ' + comparison['a']:<30}  "
             f"{'run B ' + comparison['b']:<30}  after"]
    for row in rows:
        name = " > ".join([*row["path"][1:], row["name"]])
        same = {True: "same", False: "differs", None: ""}[row["same_after"]]
        lines.append(f"{name:<{width}}  {_side_text(row['a']):<30}  {_side_text(row['b']):<30}"
                     f"  {same}".rstrip())
    final = {True: "identical", False: "differ", None: "?"}[comparison["same_final"]]
    lines.append(f"final modules: {final}")
    return "\n".join(lines)
