"""ONNX ScatterElements (and the older Scatter), ScatterND and Einsum, through TVM's
`scatter_elements`, `scatter_nd` and `einsum`."""

from __future__ import annotations

import engine.relay as relay
from engine.relay.frontend.onnx.table import ConvertResult, NodeContext, converter

REDUCTIONS = {"none": "update", "add": "add", "mul": "mul", "min": "min", "max": "max"}


def _reduction(ctx: NodeContext) -> str:
    reduction = str(ctx.attr("reduction", "none"))
    if reduction not in REDUCTIONS:
        raise ctx.fail(f"unknown reduction {reduction!r}")
    return REDUCTIONS[reduction]


@converter("Scatter", "ScatterElements", since=9)
def scatter_elements(ctx: NodeContext) -> ConvertResult:
    return relay.scatter_elements(ctx.input(0), ctx.input(1), ctx.input(2),
                                  axis=int(ctx.attr("axis", 0)), reduction=_reduction(ctx))


@converter("ScatterND", since=11)
def scatter_nd(ctx: NodeContext) -> ConvertResult:
    """ONNX indices are (Y0, ..., Yk, M); TVM's put M first."""
    rank = ctx.rank(1)
    indices = relay.transpose(ctx.input(1), axes=[rank - 1, *range(rank - 1)])
    return relay.scatter_nd(ctx.input(0), indices, ctx.input(2), mode=_reduction(ctx))


@converter("Einsum", since=12)
def einsum(ctx: NodeContext) -> ConvertResult:
    equation = str(ctx.attr("equation")).replace(" ", "")
    return relay.einsum([ctx.input(i) for i in range(len(ctx.inputs))], equation)
