"""engine.ir.dtype: TVM's dtype names for ml_dtypes' low-precision types, and the facts
about a dtype the engine asks (float or not, bit width, range)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from engine.ir.dtype import (
    LOW_PRECISION_FLOATS,
    SUB_BYTE_INTS,
    bit_width,
    dtype_name,
    finfo,
    iinfo,
    is_float,
    is_inexact,
)
from engine.ir.type import TensorType


@pytest.mark.parametrize("name", [*LOW_PRECISION_FLOATS, *SUB_BYTE_INTS])
def test_every_low_precision_name_is_a_numpy_dtype(name: str) -> None:
    assert dtype_name(name) == name
    assert dtype_name(np.dtype(name)) == name
    assert TensorType((2,), getattr(ml_dtypes, name)).dtype == name


@pytest.mark.parametrize(("name", "bits"), [
    ("int4", 4), ("uint2", 2), ("float4_e2m1fn", 4), ("float8_e5m2", 8), ("bfloat16", 16),
    ("bool", 8), ("float32", 32), ("uint64", 64), ("complex64", 64),
])
def test_bit_width(name: str, bits: int) -> None:
    assert bit_width(name) == bits


def test_float_and_integer_facts() -> None:
    assert is_float("bfloat16") and is_float("float8_e4m3fnuz") and is_float("float16")
    assert not is_float("int4") and not is_float("bool")
    assert is_inexact("complex128") and is_inexact("float8_e8m0fnu") and not is_inexact("int8")
    assert float(finfo("float8_e4m3fn").max) == 448.0
    assert float(finfo("float8_e5m2").max) == 57344.0
    assert (int(iinfo("int4").min), int(iinfo("int4").max)) == (-8, 7)
    assert (int(iinfo("uint2").min), int(iinfo("uint2").max)) == (0, 3)
    assert int(iinfo("int16").max) == 32767
