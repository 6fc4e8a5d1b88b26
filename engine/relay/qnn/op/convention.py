"""Requantize like a given runtime: which scale product, multiplier and rounding it uses.

An importer that wants its integer outputs bit-exact with the runtime the model was made
for asks for that runtime's convention instead of picking requantize attributes:

    relay.qnn.op.requantize_as("onnxruntime", acc, [x_scale, w_scale], 0, y_scale, y_zp,
                               axis=1, out_dtype="uint8")

- "onnxruntime" (MLAS on x86, QLinearConv / QLinearMatMul): the input scale is the
  float32 product `x_scale * w_scale[c]`, the multiplier `that / y_scale` in float32,
  `float(acc) * multiplier` rounded half to even (compute_dtype="float32").
- "tflite" (reference and optimized int8/uint8 kernels): the multiplier
  `double(x_scale) * double(w_scale[c]) / double(y_scale)`; the product of two float32
  values is exact in float64, so it travels as a float64 input scale; then TFLite's
  QuantizeMultiplier and MultiplyByQuantizedMultiplier (rounding="TFLITE").
- "tflite_int16" (TFLite's int16x8 conv / fully connected): the same multiplier reduced
  to 16 bits on an int64 accumulator (rounding="TFLITE_INT16").
- "tvm": TVM's own default (float32 product, UPWARD fixed point).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from engine.ir.expr import Call, Constant, Expr
from engine.relay.qnn.op.qnn import requantize
from engine.runtime.ndarray import NDArray


@dataclass(frozen=True, slots=True)
class RequantizeConvention:
    """How one runtime requantizes: the dtype its scale product is computed in and the
    requantize attributes that reproduce its multiply."""

    name: str
    product_dtype: str
    rounding: str
    compute_dtype: str

    def input_scale(self, scales: Sequence[Any]) -> np.ndarray:
        """The product of `scales` (float32 values, each a scalar or per channel) the way
        the runtime computes it, left to right."""
        if not scales:
            raise ValueError(f"{self.name}: requantize needs at least one input scale")
        product = np.asarray(scales[0], dtype="float32").astype(self.product_dtype)
        for scale in scales[1:]:
            factor = np.asarray(scale, dtype="float32").astype(self.product_dtype)
            product = (product * factor).astype(self.product_dtype)
        return product


CONVENTIONS = {
    "onnxruntime": RequantizeConvention("onnxruntime", "float32", "TONEAREST", "float32"),
    "tflite": RequantizeConvention("tflite", "float64", "TFLITE", "int64"),
    "tflite_int16": RequantizeConvention("tflite_int16", "float64", "TFLITE_INT16", "int64"),
    "tvm": RequantizeConvention("tvm", "float32", "UPWARD", "int64"),
}


def convention(name: str) -> RequantizeConvention:
    try:
        return CONVENTIONS[name]
    except KeyError:
        raise ValueError(f"unknown requantize convention {name!r} "
                         f"(one of {', '.join(CONVENTIONS)})") from None


def as_expr(value: Any, dtype: str) -> Expr:
    if isinstance(value, Expr):
        return value
    return Constant(NDArray(np.asarray(value, dtype=dtype)))


def requantize_as(runtime: str, data: Expr, input_scales: Sequence[Any],
                  input_zero_point: Any, output_scale: Any, output_zero_point: Any,
                  axis: int = -1, out_dtype: str = "int8") -> Call:
    """A qnn.requantize that computes what `runtime` ("onnxruntime", "tflite",
    "tflite_int16", "tvm")
    computes: `input_scales` are the float32 factors of the input scale (one for a plain
    requantize, [input, weight] after a conv or matmul), values rather than expressions
    because the runtime folds them into its multiplier ahead of time."""
    conv = convention(runtime)
    in_scale = conv.input_scale(input_scales)
    return requantize(data, as_expr(in_scale, conv.product_dtype),
                      as_expr(input_zero_point, "int32"), as_expr(output_scale, "float32"),
                      as_expr(output_zero_point, "int32"), axis=axis, rounding=conv.rounding,
                      compute_dtype=conv.compute_dtype, out_dtype=out_dtype)


__all__ = ["CONVENTIONS", "RequantizeConvention", "convention", "requantize_as"]
