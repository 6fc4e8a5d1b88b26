"""AlterOpLayout: let each op pick the layout its target runs best (TVM's
`relay.transform.AlterOpLayout`).

An op's `FTVMAlterOpLayout(attrs, inputs, input types, out type, target)`
returns the call to use instead (another op, or the same op with other
layouts), or None to keep it. The layout rewriter (layout_rewrite.py) then
inserts the `layout_transform`s the new call needs and lets following ops
that can (elementwise, broadcast, ...) run in its output layout.

Registered here: conv2d -> `nn.contrib_conv2d_NCHWc` (channels blocked by the
SIMD width) for CPU targets that name a vector ISA (`-mcpu=core-avx2`,
`skylake-avx512`, `+avx2`, `+neon`...). Plain "llvm" names none, so there
is no block size to choose and the pass leaves the module unchanged there.
The statistic `altered` counts the calls changed.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

from engine.ir.attrs import Attrs
from engine.ir.expr import Call, Expr, Function
from engine.ir.module import IRModule
from engine.ir.op import Op, register_op_attr
from engine.ir.type import TensorType, Type
from engine.relay.op.contrib_conv2d_nchwc import contrib_conv2d_nchwc
from engine.relay.si_builder import SIBuilder
from engine.relay.transform._rewrite import ensure_typed
from engine.relay.transform.layout_rewrite import LayoutMemorizer, rewrite_layouts
from engine.relay.transform.pass_infra import function_pass
from engine.transform import Pass, PassContext, allow_rewrite, register_pass
from engine.transform.remarks import APPLIED, op_name, remark

AlterFn = Callable[[Attrs, tuple[Expr, ...], list[Type], Type, str], "Expr | None"]

SIMD_LANES: tuple[tuple[str, int], ...] = (("avx512", 16), ("avx2", 8), ("avx", 8),
                                           ("neon", 4), ("sse", 4))
"""float32 lanes of a vector register, by the ISA a target string names (first match)."""


class AlterOpLayoutError(ValueError):
    """An FTVMAlterOpLayout function returned something other than a call."""


def simd_lanes(target: str) -> int:
    text = target.lower()
    return next((lanes for isa, lanes in SIMD_LANES if isa in text), 0)


def channel_block(channels: object, lanes: int) -> int:
    """The largest block of at most `lanes` channels that divides `channels` (0: none)."""
    if not isinstance(channels, int):
        return 0
    return next((b for b in range(min(lanes, channels), 1, -1) if channels % b == 0), 0)


def alter_conv2d_nchwc(attrs: Attrs, inputs: tuple[Expr, ...], types: list[Type],
                       out_type: Type, target: str) -> Expr | None:
    """NCHW conv2d -> contrib_conv2d_NCHWc with channels blocked by the SIMD width."""
    lanes = simd_lanes(target)
    if not lanes or int(attrs.groups) != 1 or str(attrs.data_layout) != "NCHW" \
            or str(attrs.kernel_layout) != "OIHW" or (attrs.get("out_layout") or "NCHW") != "NCHW":
        return None
    data = types[0]
    if not isinstance(data, TensorType) or not isinstance(out_type, TensorType):
        return None
    ic, oc = channel_block(data.shape[1], lanes), channel_block(out_type.shape[1], lanes)
    if not ic or not oc:
        return None
    return contrib_conv2d_nchwc(
        inputs[0], inputs[1], strides=attrs.strides, padding=attrs.padding,
        dilation=attrs.dilation, groups=1, channels=attrs.get("channels"),
        kernel_size=attrs.get("kernel_size"), data_layout=f"NCHW{ic}c",
        kernel_layout=f"OIHW{ic}i{oc}o", out_layout=f"NCHW{oc}c",
        out_dtype=str(attrs.get("out_dtype") or ""))


register_op_attr("nn.conv2d", "FTVMAlterOpLayout", alter_conv2d_nchwc, level=5)

TEMP_LEVEL = 1 << 30


def register_alter_op_layout(op_name: str, fn: Any = None, level: int = 10) -> Any:
    """Set an op's FTVMAlterOpLayout (TVM's `relay.op.register_alter_op_layout`); the
    function takes `(attrs, inputs, tinfos, out_type)` and optionally `target`."""
    return register_op_attr(op_name, "FTVMAlterOpLayout", fn, level)


@contextmanager
def temp_op_attr(op_name: str, attr_key: str, value: Any) -> Iterator[None]:
    """Set an op attribute for the `with` block, then restore it (TVM's TempOpAttr)."""
    from engine.ir import op as op_registry

    old = Op.get(op_name).get_attr(attr_key)
    register_op_attr(op_name, attr_key, value, TEMP_LEVEL)
    try:
        yield
    finally:
        if old is not None:
            register_op_attr(op_name, attr_key, old, TEMP_LEVEL)
        else:
            op_registry._ATTRS.get(attr_key, {}).pop(op_name, None)


def _call_alter(alter: Any, attrs: Attrs, args: tuple[Expr, ...], types: list[Type],
                out_type: Type, target: str) -> Any:
    params = inspect.signature(alter).parameters
    takes_target = len(params) >= 5 or any(p.kind == p.VAR_POSITIONAL for p in params.values())
    if takes_target:
        return alter(attrs, args, types, out_type, target)
    return alter(attrs, args, types, out_type)


class AlterMemorizer(LayoutMemorizer):
    """Asks each op's FTVMAlterOpLayout for the call to use."""

    def __init__(self, target: str) -> None:
        super().__init__()
        self.target = target

    def call_with_new_layouts(self, ref_call: Call, attrs: Attrs, args: tuple[Expr, ...],
                              types: list[Type]) -> Call:
        alter = ref_call.op.get_attr("FTVMAlterOpLayout")  # type: ignore[attr-defined]
        new = _call_alter(alter, attrs, args, types, ref_call.checked_type, self.target) \
            if alter else None
        if new is None or not allow_rewrite(ref_call):
            return replace(ref_call, args=args, attrs=attrs)
        if not isinstance(new, Call):
            raise AlterOpLayoutError(
                f"FTVMAlterOpLayout of {ref_call.op.name} must return a call, "  # type: ignore
                f"got {type(new).__name__}")
        filled = SIBuilder(ref_call.span).RecursivelyFillSpan(new, list(args))
        assert isinstance(filled, Call)
        self.changed_calls += 1
        remark(APPLIED, "FTVMAlterOpLayout", f"{ref_call.op.name} became "  # type: ignore
               f"{op_name(filled)} for {self.target}", ref_call, new_op=op_name(filled))
        return filled


def alter_op_layout(func: Function, target: str = "llvm") -> tuple[Function, int]:
    memorizer = AlterMemorizer(target)
    return rewrite_layouts(func, memorizer), memorizer.changed_calls


@register_pass
def AlterOpLayout(target: object = None) -> Pass:  # TVM's name
    """Alter op layouts for `target` (default "llvm"), at opt_level 3."""
    target_text = str(target or "llvm")

    def transform(func: Function, mod: IRModule, ctx: PassContext) -> Function:
        new, altered = alter_op_layout(ensure_typed(func, mod), target_text)
        ctx.add_stat("altered", altered)
        return new

    return function_pass(transform, opt_level=3, required=["InferType"])


__all__ = ["AlterMemorizer", "AlterOpLayout", "AlterOpLayoutError", "alter_conv2d_nchwc",
           "alter_op_layout", "channel_block", "register_alter_op_layout", "simd_lanes",
           "temp_op_attr"]
