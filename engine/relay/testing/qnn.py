"""Small helpers for building and inspecting QNN graphs in tests."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from engine.ir.expr import Call, Constant, Expr
from engine.ir.module import IRModule
from engine.ir.traversal import post_order
from engine.runtime.ndarray import NDArray


def f32(value: Any) -> Constant:
    """A float32 constant (a scale)."""
    return Constant(NDArray(np.asarray(value, "float32")))


def i32(value: Any) -> Constant:
    """An int32 constant (a zero point)."""
    return Constant(NDArray(np.asarray(value, "int32")))


def op_names(expr: IRModule | Expr) -> list[str]:
    """The op names of every call, in post order."""
    body = expr["main"].body if isinstance(expr, IRModule) else expr
    return [n.op.name for n in post_order(body) if isinstance(n, Call) and hasattr(n.op, "name")]




def quantize_onnx_static(float_path: Path, out_path: Path, per_channel: bool = False,
                         seed: int = 0, samples: int = 4) -> Path:
    """A QDQ model made by onnxruntime.quantization.quantize_static from `float_path`,
    calibrated on `samples` seeded standard-normal inputs (uint8 activations, int8
    weights), written to `out_path` unless it is there already (written under another
    name first, then renamed, so a concurrent reader never sees half a file)."""
    if out_path.exists():
        return out_path
    import onnx
    from onnxruntime import quantization as q

    model = onnx.load(str(float_path))
    graph_inputs = {i.name for i in model.graph.initializer}
    feeds = [i for i in model.graph.input if i.name not in graph_inputs]
    rng = np.random.default_rng(seed)
    batches = [{i.name: rng.standard_normal(
        [d.dim_value for d in i.type.tensor_type.shape.dim]).astype("float32") for i in feeds}
        for _ in range(samples)]

    class Reader(q.CalibrationDataReader):
        def __init__(self) -> None:
            self.items = iter(batches)

        def get_next(self) -> dict[str, np.ndarray] | None:
            return next(self.items, None)

    partial = out_path.with_suffix(f".{os.getpid()}.partial")
    q.quantize_static(str(float_path), str(partial), Reader(), quant_format=q.QuantFormat.QDQ,
                      per_channel=per_channel, activation_type=q.QuantType.QUInt8,
                      weight_type=q.QuantType.QInt8)
    os.replace(partial, out_path)
    return out_path


__all__ = ["f32", "i32", "op_names", "quantize_onnx_static"]
