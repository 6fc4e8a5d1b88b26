"""Pass plans: which leaf passes a pipeline will run under a context, without running it.

The walk is `Sequential.run_order`, the same generator `Sequential.apply` runs:
a child runs when the context enables it, preceded by the passes its
`info.required` names (resolved through the registry), and a nested Sequential
runs its own children one level deeper. A *leaf* is a pass that is not a
container: a plain pass, or a Sequential none of whose children run.

Passes that call other passes from inside their own body are not visible to a
dry walk.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.transform.context import PassContext
from engine.transform.pass_info import PassInfo
from engine.transform.passes import Pass
from engine.transform.sequential import Sequential

__all__ = ["PlannedPass", "children_of", "count_leaves", "plan"]


@dataclass(frozen=True, slots=True)
class PlannedPass:
    """One leaf pass of a plan: its info and its nesting depth (`PassContext.pass_depth`
    while it runs: 0 for the pipeline itself, 1 for its children, ...)."""

    info: PassInfo
    depth: int

    @property
    def name(self) -> str:
        return self.info.name

    @property
    def opt_level(self) -> int:
        return self.info.opt_level


def children_of(pipeline: Pass, ctx: PassContext) -> list[Pass] | None:
    """The passes a Sequential will run under `ctx`, required ones included, in order;
    None for a pass that is not a container."""
    if not isinstance(pipeline, Sequential):
        return None
    return list(pipeline.run_order(ctx))


def plan(pipeline: Pass, ctx: PassContext) -> list[PlannedPass]:
    """The leaf passes `pipeline` runs under `ctx`, in run order (iterative: any depth)."""
    out: list[PlannedPass] = []
    stack: list[tuple[Pass, int]] = [(pipeline, 0)]
    while stack:
        node, depth = stack.pop()
        children = children_of(node, ctx)
        if not children:  # a plain pass, or a Sequential that runs nothing
            out.append(PlannedPass(node.info, depth))
            continue
        stack.extend((child, depth + 1) for child in reversed(children))
    return out


def count_leaves(pipeline: Pass, ctx: PassContext) -> int:
    """How many leaf passes `pipeline` runs under `ctx`."""
    return len(plan(pipeline, ctx))
