"""ConvertLayout: run chosen ops in chosen layouts (TVM's `relay.transform.ConvertLayout`).

    ConvertLayout({"nn.conv2d": ["NHWC", "default"]})

Each op named in `desired_layouts` is rebuilt in the desired data layout (and
kernel layout: "default" picks the usual one for the data layout: OIHW for
NCHW, HWIO for NHWC, HWOI for a depthwise NHWC conv); `layout_transform`s are
inserted where values enter and leave the converted region, which extends
through every op that can follow a layout (FInferCorrectLayout: elementwise,
broadcast, pooling, concatenate, reductions). The statistics
`converted` and `layout_transforms` count the rewritten ops and the inserted
transforms.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace

from engine.ir.attrs import Attrs
from engine.ir.expr import Call, Expr, Function
from engine.ir.module import IRModule
from engine.ir.op import register_op_attr
from engine.ir.type import TensorType, Type
from engine.relay.transform._rewrite import ensure_typed, op_name
from engine.relay.transform.layout_rewrite import (
    LayoutMemorizer,
    count_transforms,
    rewrite_layouts,
)
from engine.relay.transform.pass_infra import function_pass
from engine.transform import Pass, PassContext, register_pass

ConvertFn = Callable[[Attrs, tuple[Expr, ...], list[Type], Sequence[str]], "Attrs | None"]
"""`FTVMConvertOpLayout(attrs, args, input types, desired layouts) -> new attrs | None`."""

DEFAULT_KERNEL = {"NCHW": "OIHW", "NHWC": "HWIO"}


def _is_depthwise(attrs: Attrs, types: list[Type]) -> bool:
    data = types[0]
    if not isinstance(data, TensorType) or int(attrs.groups) == 1:
        return False
    channels = data.shape[str(attrs.data_layout).index("C")]
    return int(attrs.groups) == channels


def convert_conv2d(attrs: Attrs, args: tuple[Expr, ...], types: list[Type],
                   desired: Sequence[str]) -> Attrs | None:
    """conv2d in the desired data / kernel layouts (TVM's convert_conv2d)."""
    data_layout = str(desired[0])
    kernel = str(desired[1]) if len(desired) > 1 else "default"
    if kernel == "default":
        if data_layout not in DEFAULT_KERNEL:
            raise ValueError(f"ConvertLayout: no default kernel layout for conv2d in "
                             f"{data_layout}; give one")
        kernel = DEFAULT_KERNEL[data_layout]
        if data_layout == "NHWC" and _is_depthwise(attrs, types):
            kernel = "HWOI"
    return attrs.replace(data_layout=data_layout, kernel_layout=kernel, out_layout="")


def convert_pool(attrs: Attrs, args: tuple[Expr, ...], types: list[Type],
                 desired: Sequence[str]) -> Attrs | None:
    return attrs.replace(layout=str(desired[0]), out_layout="")


CONVERTERS: dict[str, ConvertFn] = {
    "nn.conv2d": convert_conv2d,
    "nn.max_pool2d": convert_pool,
    "nn.avg_pool2d": convert_pool,
    "nn.global_avg_pool2d": convert_pool,
    "nn.global_max_pool2d": convert_pool,
}

for _name, _fn in CONVERTERS.items():
    register_op_attr(_name, "FTVMConvertOpLayout", _fn, level=5)


class ConvertMemorizer(LayoutMemorizer):
    """Rewrites the ops named in `desired_layouts` with their FTVMConvertOpLayout."""

    def __init__(self, desired_layouts: Mapping[str, Sequence[str]]) -> None:
        super().__init__()
        self.desired = {k: list(v) for k, v in desired_layouts.items()}

    def call_with_new_layouts(self, ref_call: Call, attrs: Attrs, args: tuple[Expr, ...],
                              types: list[Type]) -> Call:
        name = op_name(ref_call) or ""
        desired = self.desired.get(name)
        convert = ref_call.op.get_attr("FTVMConvertOpLayout")  # type: ignore[attr-defined]
        new_attrs = convert(attrs, args, types, desired) if desired and convert else None
        if new_attrs is None or new_attrs == attrs:
            return replace(ref_call, args=args, attrs=attrs)
        self.changed_calls += 1
        return replace(ref_call, args=args, attrs=new_attrs)


def convert_layout(func: Function, desired_layouts: Mapping[str, Sequence[str]]
                   ) -> tuple[Function, ConvertMemorizer]:
    memorizer = ConvertMemorizer(desired_layouts)
    return rewrite_layouts(func, memorizer), memorizer


@register_pass
def ConvertLayout(desired_layouts: Mapping[str, Sequence[str]] | None = None
                  ) -> Pass:
    """Convert the named ops to the desired layouts (TVM's opt_level 3 pass; without
    desired layouts, as the registry makes it, it converts nothing)."""
    desired_layouts = dict(desired_layouts or {})
    for name, layouts in desired_layouts.items():
        if not isinstance(layouts, (list, tuple)) or not layouts:
            raise ValueError(f"ConvertLayout: desired layouts of {name!r} must be a list "
                             f"such as ['NHWC', 'default'], got {layouts!r}")

    def transform(func: Function, mod: IRModule, ctx: PassContext) -> Function:
        new, memorizer = convert_layout(ensure_typed(func, mod), desired_layouts)
        ctx.add_stat("converted", memorizer.changed_calls)
        ctx.add_stat("layout_transforms", count_transforms(new) - count_transforms(func))
        return new

    return function_pass(transform, opt_level=3, required=["InferType"])


__all__ = ["CONVERTERS", "ConvertLayout", "ConvertMemorizer", "convert_conv2d", "convert_layout"]
