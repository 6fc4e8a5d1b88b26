"""Quantization parameters in the printed text: scales and zero points of `qnn.*` calls.

A scalar scale or zero point already prints as its value (`0.0235f`, `-128`). A tensor one
(per-channel, or a one-element array) prints as `meta[relay.Constant][k]` followed by a
short note of its values, which the parser skips (TVM's parser skips every comment):

    qnn.requantize(%3, meta[relay.Constant][0] /* values=f32[64] 0.0012..0.031 */, 0, ...)

The source map carries the full values of each such operand (`qparam_of`), for the
explorer's hover card.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from engine.ir.expr import Call
from engine.ir.op import Op
from engine.relay.printer.format import VALUES_NOTE

QPARAM_WORDS = ("scale", "zero_point")

SHORT_DTYPE = {"float32": "f32", "float16": "f16", "float64": "f64", "int8": "i8",
               "uint8": "u8", "int16": "i16", "uint16": "u16", "int32": "i32",
               "int64": "i64", "uint32": "u32", "uint64": "u64", "bool": "bool"}


def qparam_roles(call: Call) -> tuple[str | None, ...]:
    """For each argument of `call`, its role name if it is a scale or zero point of a
    `qnn.*` op (`input_scale`, `output_zero_point`...), else None; () for any other call."""
    op = call.op
    if not isinstance(op, Op) or not op.name.startswith("qnn."):
        return ()
    names = op.info.arg_names
    return tuple(names[i] if i < len(names) and any(w in names[i] for w in QPARAM_WORDS)
                 else None for i in range(len(call.args)))


def _number(value: Any, is_float: bool) -> str:
    return f"{float(value):.4g}" if is_float else str(int(value))


def values_summary(array: np.ndarray) -> str:
    """`f32[64] 0.0012..0.031`, `i32[64] 0`, `f32[2] 0.5, 0.25`: dtype, shape and the
    values (up to 4 written out, else their range)."""
    dtype = SHORT_DTYPE.get(str(array.dtype), str(array.dtype))
    head = f"{dtype}[{','.join(str(d) for d in array.shape)}]"
    if array.size == 0:
        return head
    is_float = array.dtype.kind == "f"
    flat = array.ravel()
    low, high = flat.min(), flat.max()
    if low == high:
        return f"{head} {_number(low, is_float)}"
    if flat.size <= 4:
        return f"{head} " + ", ".join(_number(v, is_float) for v in flat)
    return f"{head} {_number(low, is_float)}..{_number(high, is_float)}"


def values_note(array: np.ndarray) -> str:
    """` /* values=... */` (with its leading space) of a tensor constant."""
    return f" /* {VALUES_NOTE}{values_summary(array)} */"


def _plain_values(array: np.ndarray) -> list[Any]:
    if array.dtype.kind == "f":
        # The shortest decimal that reads back to the same value at its own precision.
        return [float(str(v)) for v in array.ravel()]
    return [int(v) for v in array.ravel()]


def qparam_of(role: str, array: np.ndarray) -> dict[str, Any]:
    """The source map's `qparam` of an operand: role, dtype, shape and every value."""
    return {"role": role, "dtype": str(array.dtype), "shape": list(array.shape),
            "values": _plain_values(array)}

