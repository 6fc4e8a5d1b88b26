"""Element types by TVM's names.

numpy knows the standard types. The low-precision ones (`bfloat16`, the float8 family,
`float4_e2m1fn`, `int4`/`uint4`, `int2`/`uint2`) are ml_dtypes' numpy types: importing
ml_dtypes registers their names with numpy, so `np.dtype("float8_e4m3fn")` resolves once this
module is loaded (engine.ir.type imports it). Sub-byte values are held one per byte, in the
low bits (`int4` -2 is the byte 0x0E).
"""

from __future__ import annotations

import contextlib
from typing import Any

import ml_dtypes
import numpy as np

LOW_PRECISION_FLOATS = ("bfloat16", "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2",
                        "float8_e5m2fnuz", "float8_e8m0fnu", "float4_e2m1fn")
SUB_BYTE_INTS = ("int4", "uint4", "int2", "uint2")
FLOAT8_WITH_FINITE_MAX = ("float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz")
"""The float8 types ONNX's `saturate` applies to (E8M0 has its own rounding rules)."""

_NAMES: dict[Any, str] = {"bool": "bool"}


def dtype_name(dtype: Any) -> str:
    """The canonical name of a dtype ("float32", "int64", "float8_e4m3fn", ...), memoized:
    types are built for every expression of every pass, and numpy's dtype parsing is slow."""
    try:
        return _NAMES[dtype]
    except (KeyError, TypeError):
        name = str(np.dtype(dtype))
        with contextlib.suppress(TypeError):  # an unhashable dtype-like is not memoized
            _NAMES[dtype] = name
        return name


def is_low_precision_float(dtype: Any) -> bool:
    return dtype_name(dtype) in LOW_PRECISION_FLOATS


def is_float(dtype: Any) -> bool:
    """numpy's floating types and ml_dtypes' (which numpy does not count as floating)."""
    return np.issubdtype(np.dtype(dtype), np.floating) or is_low_precision_float(dtype)


def is_inexact(dtype: Any) -> bool:
    """Floats (ml_dtypes' included) and complex: the types whose values may be NaN."""
    return np.dtype(dtype).kind == "c" or is_float(dtype)


def finfo(dtype: Any) -> Any:
    """`np.finfo` for every float type, ml_dtypes' included."""
    return ml_dtypes.finfo(np.dtype(dtype))  # type: ignore[no-untyped-call]


def iinfo(dtype: Any) -> Any:
    """`np.iinfo` for every integer type, the sub-byte ones included."""
    return ml_dtypes.iinfo(np.dtype(dtype))  # type: ignore[no-untyped-call]


def lowest(dtype: Any) -> Any:
    """What max pooling pads with: -inf for every float type (ml_dtypes' included, which
    numpy's kind "f" misses), an integer type's minimum."""
    return -np.inf if is_float(dtype) else iinfo(dtype).min


def bit_width(dtype: Any) -> int:
    """Bits of one element: 4 for `int4` and `float4_e2m1fn`, 8 for `bool`."""
    dt = np.dtype(dtype)
    if is_float(dt):
        return int(finfo(dt).bits)
    if np.issubdtype(dt, np.integer) or str(dt) in SUB_BYTE_INTS:
        return int(iinfo(dt).bits)
    return int(dt.itemsize) * 8
