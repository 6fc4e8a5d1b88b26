"""`dyn.image.resize2d(data, roi, size)` (TVM's): the output height and width are a 1-D
tensor of 2 known at run time; the kernel is `image.resize2d`'s.

With the `onnx_kind` attr ("scales" or "sizes") the operands are ONNX Resize's instead: `size`
holds the scales or sizes of each axis in `axes` (default: every axis), `roi` their starts
then ends, and `keep_aspect_ratio_policy` applies to sizes (see `image.resize.onnx_plan`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from engine.ir.attrs import Attrs
from engine.ir.expr import Call, Expr
from engine.ir.type import AnyDim, TensorType, Type
from engine.relay.op._typing import check_arity, tensor_arg
from engine.relay.op.dyn._common import int_values, static_length
from engine.relay.op.image.resize import RESIZE_KEY, onnx_plan, resize_nchw
from engine.relay.op.nn._layout import dims, from_canonical, to_canonical
from engine.relay.op.op import OPAQUE, TypeRelationError, define_op, make_call


def _resize_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    check_arity(arg_types, 3)
    data = tensor_arg(arg_types, 0)
    count = static_length(arg_types, 2, "size")
    if attrs.get("onnx_kind"):
        want = len(attrs.get("axes") or ()) or data.ndim
        if count != want:
            raise TypeRelationError(f"{attrs.onnx_kind} must hold one value per resized axis "
                                    f"({want})", arg=2, actual=str(count))
    elif count != 2:
        raise TypeRelationError("size must hold (height, width)", arg=2)
    n, c = dims(data, attrs.layout, "NC", 0)
    new = {"N": n, "C": c, "H": AnyDim(), "W": AnyDim()}
    return TensorType([new[ch] for ch in attrs.layout], attrs.get("out_dtype") or data.dtype)


def _resize_compute(xs: list[np.ndarray], attrs: Attrs) -> np.ndarray:
    data, roi, size = xs
    x = to_canonical(data, attrs.layout, "NCHW")
    box = [float(v) for v in np.asarray(roi).reshape(-1)] or [0.0, 0.0, 1.0, 1.0]
    sizes, scales = int_values(size), None
    if attrs.get("onnx_kind"):
        hw = (attrs.layout.index("H"), attrs.layout.index("W"))
        sizes, scales, box = onnx_plan(  # type: ignore[assignment]
            data.shape, size, attrs.onnx_kind, attrs.get("axes") or (),
            attrs.get("keep_aspect_ratio_policy") or "stretch", roi, hw)
    out = resize_nchw(x, sizes, attrs.method, attrs.coordinate_transformation_mode,
                      attrs.rounding_method, attrs.cubic_alpha, bool(attrs.cubic_exclude), box,
                      attrs.extrapolation_value, scales, bool(attrs.get("antialias")))
    dtype = attrs.get("out_dtype") or data.dtype
    if np.dtype(dtype).kind in "iu":
        out = np.round(out)
    return np.ascontiguousarray(from_canonical(out, "NCHW", attrs.layout)).astype(dtype)


define_op("dyn.image.resize2d", ("data", "roi", "size"), _resize_rel, OPAQUE, _resize_compute,
          attrs_type_key=RESIZE_KEY)


def resize2d(data: Expr, roi: Expr, size: Expr, layout: str = "NCHW", method: str = "linear",
             coordinate_transformation_mode: str = "half_pixel", rounding_method: str = "",
             cubic_alpha: float = -0.5, cubic_exclude: int = 0,
             extrapolation_value: float = 0.0, out_dtype: str = "", onnx_kind: str = "",
             axes: Sequence[int] | None = None, keep_aspect_ratio_policy: str = "stretch",
             antialias: bool = False) -> Call:
    """image.resize2d with `size` (and `roi`) known at run time; with `onnx_kind` they are
    ONNX Resize's scales or sizes (and roi) per axis of `axes` (module docstring)."""
    attrs: dict[str, Any] = {
        "layout": layout, "method": method,
        "coordinate_transformation_mode": coordinate_transformation_mode,
        "rounding_method": rounding_method, "cubic_alpha": float(cubic_alpha),
        "cubic_exclude": int(cubic_exclude), "extrapolation_value": float(extrapolation_value),
        "out_dtype": out_dtype}
    if antialias:
        attrs["antialias"] = True
    if onnx_kind:
        attrs.update(onnx_kind=onnx_kind, axes=tuple(int(a) for a in axes or ()),
                     keep_aspect_ratio_policy=keep_aspect_ratio_policy)
    return make_call("dyn.image.resize2d", (data, roi, size), attrs, RESIZE_KEY)


__all__ = ["resize2d"]
