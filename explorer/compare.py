"""Compare two runs pass by pass: their leaf passes aligned by name.

The runs may be of one session (other options: opt level, disabled passes), of two
sessions, or one imported from another engine version (explorer/exchange.py): only the
stored events and snapshots are read. The alignment is the longest matching of the two
ordered pass-name lists (difflib's), so a pass one run disabled shows as a row with one
side empty and the passes after it line up again. Each side of a row carries what the
timeline shows of that pass (changed, time, node count, numerics) and its snapshots,
so the page can diff the same pass's after-module across the two runs with its diff view.
"""

from __future__ import annotations

from difflib import SequenceMatcher
from typing import Any

from explorer.protocol import (
    PASS_FAILED,
    PASS_FINISHED,
    ComparedPass,
    ComparisonRow,
    RunComparison,
)
from explorer.store import Store


def leaf_passes(store: Store, run_id: str) -> list[tuple[str, ComparedPass]]:
    """The run's leaf passes in order (and any that failed), each as (name, its side)."""
    store.run(run_id)  # 404 for an unknown run
    found: list[tuple[str, ComparedPass]] = []
    for event in store.events(run_id):
        data = event["data"]
        if event["type"] == PASS_FINISHED and data["leaf"]:
            found.append((str(data["name"]), _finished(data)))
        elif event["type"] == PASS_FAILED:
            found.append((str(data["name"]), _failed(data)))
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
    matcher = SequenceMatcher(a=[n for n, _ in a], b=[n for n, _ in b], autojunk=False)
    rows: list[ComparisonRow] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            rows += [_row(name, side_a, side_b, texts)
                     for (name, side_a), (_, side_b) in zip(a[i1:i2], b[j1:j2], strict=True)]
            continue
        rows += [_row(name, side, None, texts) for name, side in a[i1:i2]]
        rows += [_row(name, None, side, texts) for name, side in b[j1:j2]]
    final_a, final_b = store.run(run_a)["final_snapshot"], store.run(run_b)["final_snapshot"]
    return RunComparison(a=run_a, b=run_b, rows=rows, same_final=texts.same(final_a, final_b))


def _row(name: str, a: ComparedPass | None, b: ComparedPass | None, texts: _Texts
         ) -> ComparisonRow:
    same = texts.same(a["after"], b["after"]) if a is not None and b is not None else None
    return ComparisonRow(name=name, a=a, b=b, same_after=same)
