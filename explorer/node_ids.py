"""Give a re-imported module the node ids of the same module imported elsewhere.

The server prints the imported module once, at upload; a run's worker process
imports the model again, and its nodes get other ids. When both print to the
same text, the printer visits the nodes in the same order, so the two source
maps pair the worker's ids with the server's row by row. `adopt_node_ids`
renames the worker's nodes accordingly and moves the id counter past every
adopted id, so snapshots of the run match nodes with the upload's snapshot.
"""

from __future__ import annotations

import numpy as np

from engine.ir import IRModule
from engine.ir.expr import Expr, reserve_node_ids
from engine.relay.expr_functor import post_order
from engine.relay.printer import forget_printed
from engine.relay.printer_table import NODE, SourceMapTable


def id_pairs(mine: SourceMapTable, theirs: SourceMapTable) -> dict[int, int] | None:
    """mine node id -> their node id, row by row; None when the maps do not pair up
    (another row count, or one id paired with two)."""
    if len(mine.rows) != len(theirs.rows):
        return None
    pairs = np.unique(np.stack([mine.rows[:, NODE], theirs.rows[:, NODE]], axis=1), axis=0)
    if len(np.unique(pairs[:, 0])) != len(pairs) or len(np.unique(pairs[:, 1])) != len(pairs):
        return None
    return dict(zip(pairs[:, 0].tolist(), pairs[:, 1].tolist(), strict=True))


def adopt_node_ids(mod: IRModule, mapping: dict[int, int]) -> int:
    """Rename the module's nodes by `mapping`; returns how many were renamed. Nodes built
    afterwards get ids above every id of the mapping."""
    renamed = 0
    for gv, func in mod.items():
        before = renamed
        for node in (gv, *post_order(func)):
            new = mapping.get(node.node_id)
            if new is not None and new != node.node_id:
                _set_id(node, new)
                renamed += 1
        if renamed != before:
            forget_printed(func)  # its cached text carries the old ids
    if mapping:
        reserve_node_ids(max(max(mapping.values()), max(mapping)))
    return renamed


def _set_id(node: Expr, node_id: int) -> None:
    object.__setattr__(node, "node_id", node_id)  # ids are metadata, as checked_type is
