"""How many passes a run will record, from a dry walk of its pipeline.

The walk follows what `Sequential.apply` does under the run's PassContext: a
child runs when the context enables it (not disabled; required or within
opt_level), preceded by each pass its `info.required` names (resolved through
the registry, run whatever the context says), and nested Sequentials run their
own children one level deeper. The count is of *leaf* passes, the ones the
timeline counts as done: a Sequential with children that run is a container,
one whose children are all skipped shows up as a leaf itself.

Passes that call other passes from inside their own body are not visible to a
dry walk; the pipelines the explorer builds do not do that.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from explorer.compiler import PassContext, transform


def children_of(pipeline: Any, ctx: PassContext) -> list[Any] | None:
    """The passes a Sequential will run under `ctx`, required ones included, in order;
    None for a pass that is not a container."""
    passes = getattr(pipeline, "passes", None)
    if not isinstance(passes, Sequence):
        return None
    run: list[Any] = []
    for child in passes:
        info = child.info
        if not ctx.pass_enabled(info):
            continue
        run.extend(transform.get_pass(name) for name in info.required)
        run.append(child)
    return run


def count_leaves(pipeline: Any, ctx: PassContext) -> int:
    """Leaf passes `pipeline` runs under `ctx` (iterative: deep nesting is fine)."""
    total = 0
    stack = [pipeline]
    while stack:
        node = stack.pop()
        children = children_of(node, ctx)
        if not children:  # a plain pass, or a Sequential that runs nothing
            total += 1
            continue
        stack.extend(children)
    return total


def count_planned(pipeline: Any, ctx: PassContext) -> int | None:
    """The exact number of leaf pass events the run will publish, or None when the plan
    cannot be worked out (a required pass that is not registered fails the run anyway)."""
    try:
        return count_leaves(pipeline, ctx)
    except transform.PassNotFoundError:
        return None


def leaf_plan(pipeline: Any, ctx: PassContext) -> list[dict[str, Any]]:
    """The leaf passes `pipeline` runs under `ctx`, in order: {name, depth, opt_level}."""
    out: list[dict[str, Any]] = []
    stack: list[tuple[Any, int]] = [(pipeline, 0)]
    while stack:
        node, depth = stack.pop()
        children = children_of(node, ctx)
        if not children:
            out.append({"name": str(node.info.name), "depth": depth,
                        "opt_level": int(node.info.opt_level)})
            continue
        stack.extend((child, depth + 1) for child in reversed(children))
    return out
