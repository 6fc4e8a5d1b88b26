"""ONNX image ops: GridSample (through TVM's `image.grid_sample`)."""

from __future__ import annotations

import engine.relay as relay
from engine.relay.frontend.onnx.table import ConvertResult, NodeContext, converter

MODES = {"linear": "bilinear", "bilinear": "bilinear", "cubic": "bicubic", "bicubic": "bicubic",
         "nearest": "nearest"}


@converter("GridSample", since=16)
def grid_sample(ctx: NodeContext) -> ConvertResult:
    """ONNX's grid is (N, *out, k) with x first; TVM's is (N, k, *out)."""
    mode = str(ctx.attr("mode", "bilinear" if ctx.opset < 20 else "linear"))
    if mode not in MODES:
        raise ctx.fail(f"unknown mode {mode!r}")
    rank = ctx.rank(0)
    if rank not in (4, 5):
        raise ctx.fail(f"{rank - 2}-D sampling is not supported (2-D and 3-D are)")
    grid = relay.transpose(ctx.input(1), axes=[0, rank - 1, *range(1, rank - 1)])
    return relay.image.grid_sample(
        ctx.input(0), grid, method=MODES[mode], layout="NCHW" if rank == 4 else "NCDHW",
        padding_mode=str(ctx.attr("padding_mode", "zeros")),
        align_corners=bool(ctx.attr("align_corners", 0)))
