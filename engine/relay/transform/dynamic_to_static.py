"""DynamicToStatic: a `relay.dyn` op whose run-time operands have become constants is
specialised back to its static op (TVM's `relay.transform.DynamicToStatic`).

Each round folds constants (so `shape_of` of a static tensor, a cast of a constant, ...
become constants), then rewrites every dyn call whose shape-like operands are all
constants, until a round changes nothing. A dyn op that still reads a run-time value is
left as it is. The rewritten calls (and the ones above them, rebuilt) are untyped; the
pass re-infers them, so the types downstream lose their `?` dims.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from engine.ir.expr import Call, Constant, Expr, Function
from engine.ir.module import IRModule
from engine.relay.op.dyn.transform import onnx_newshape
from engine.relay.op.image.resize import onnx_plan
from engine.relay.op.nn.crop_pad import crop_pad
from engine.relay.transform._rewrite import (
    CallRewriter,
    ensure_typed,
    op_name,
    rewrite_function,
    static_shape,
    tensor_type,
)
from engine.relay.transform.fold_constant import fold_constant
from engine.relay.transform.pass_infra import function_pass
from engine.transform import Pass, PassContext, register_pass

MAX_ROUNDS = 8
Values = list[np.ndarray]
Builder = Callable[[Call, Values], Expr | None]


def _ints(value: np.ndarray) -> list[int]:
    return [int(v) for v in np.asarray(value).reshape(-1)]


def _first(value: np.ndarray) -> int:
    return _ints(value)[0]


def _rank(expr: Expr) -> int | None:
    ty = tensor_type(expr)
    return None if ty is None else ty.ndim


# --- one builder per dyn op: (call, constant operand values) -> the static expression -------
def _reshape(call: Call, values: Values) -> Expr | None:
    import engine.relay as relay

    target, shape = _ints(values[0]), static_shape(call.args[0])
    if shape is not None:
        return relay.reshape(call.args[0], onnx_newshape(shape, target, bool(call.attrs.get(
            "allowzero", 0))))
    if call.attrs.get("allowzero", 0) and 0 in target:
        return None  # a literal 0 dim: only the static shape can tell
    return relay.reshape(call.args[0], target)


def _squeeze(call: Call, values: Values) -> Expr | None:
    import engine.relay as relay

    rank = _rank(call.args[0])
    if rank is None:
        return None
    return relay.squeeze(call.args[0], axis=sorted(a % rank for a in _ints(values[0])))


def _expand_dims(call: Call, values: Values) -> Expr | None:
    import engine.relay as relay

    rank = _rank(call.args[0])
    if rank is None:
        return None
    axes = _ints(values[0])
    out = call.args[0]
    for axis in sorted(a % (rank + len(axes)) for a in axes):
        out = relay.expand_dims(out, axis=axis)
    return out


def _strided_slice(call: Call, values: Values) -> Expr:
    import engine.relay as relay

    begin, end, strides, *axes = (_ints(v) for v in values)
    return relay.strided_slice(call.args[0], begin, end, strides, axes=axes[0] if axes else None)


def _topk(call: Call, values: Values) -> Expr:
    from engine.relay.op.op import make_call

    return make_call("topk", (call.args[0],), {**call.attrs, "k": _first(values[0])},
                     call.attrs.type_key)


def _trilu(call: Call, values: Values) -> Expr | None:
    import engine.relay as relay

    ty = tensor_type(call.args[0])
    if ty is None or not ty.is_static:
        return None
    rows, cols = ty.concrete_shape[-2:]
    keep = (np.triu if call.attrs.get("upper") else np.tril)(np.ones((rows, cols), bool),
                                                               _first(values[0]))
    zero = relay.const(np.zeros((), ty.dtype), ty.dtype)
    return relay.where(relay.const(keep, "bool"), call.args[0], zero)


def _scan(call: Call, values: Values) -> Expr | None:
    import engine.relay as relay

    rank = _rank(call.args[0])
    if rank is None:
        return None
    axis = _first(values[0]) % max(rank, 1)
    scan = relay.cumsum if op_name(call) == "dyn.cumsum" else relay.cumprod
    reverse = bool(call.attrs.get("reverse"))
    x = relay.reverse(call.args[0], axis=axis) if reverse else call.args[0]
    out = scan(x, axis=axis, exclusive=bool(call.attrs.get("exclusive")))
    return relay.reverse(out, axis=axis) if reverse else out


def _pad(call: Call, values: Values) -> Expr | None:
    widths = np.asarray(values[0]).reshape(-1, 2)
    mode = call.attrs.get("pad_mode", "constant")
    shape = static_shape(call.args[0])
    if mode not in ("constant", "edge", "reflect") or ((widths < 0).any() and shape is None):
        return None  # wrap exists only as dyn.nn.pad; a crop needs the static shape
    return crop_pad(call.args[0], shape, widths, call.args[2], mode)


def _resize(call: Call, values: Values) -> Expr | None:
    import engine.relay as relay

    roi = [float(v) for v in np.asarray(values[0]).reshape(-1)]
    attrs = {k: v for k, v in call.attrs.items() if k not in ("size", "roi", "scales")}
    kind = attrs.pop("onnx_kind", "")
    axes, policy = attrs.pop("axes", ()), attrs.pop("keep_aspect_ratio_policy", "stretch")
    if not kind:
        return relay.image.resize2d(call.args[0], size=_ints(values[1]), roi=roi or None,
                                    **attrs)
    shape = static_shape(call.args[0])
    if shape is None:
        return None
    layout = str(attrs["layout"])
    size, scales, box = onnx_plan(shape, values[1], kind, axes or (), policy or "stretch", roi,
                                  (layout.index("H"), layout.index("W")))
    return relay.image.resize2d(call.args[0], size=size, roi=box, scales=scales, **attrs)


def _dft(call: Call, values: Values) -> Expr | None:
    from engine.relay.op.signal import default_length, dft

    shape, ty = static_shape(call.args[0]), tensor_type(call.args[0])
    if shape is None or ty is None:
        return None
    axis = _first(values[0]) % len(shape)
    if axis == len(shape) - 1:
        return None  # not a signal axis: the kernel reports it
    inverse, onesided = bool(call.attrs["inverse"]), bool(call.attrs["onesided"])
    length = _first(values[1]) or default_length(shape[axis], inverse, onesided)
    return dft(call.args[0], len(shape), axis, shape[axis], shape[-1], length, inverse,
               onesided, ty.dtype)


def _reduce(call: Call, values: Values) -> Expr | None:
    import engine.relay as relay

    rank, axes = _rank(call.args[0]), _ints(values[0])
    if rank is None:
        return None
    if not axes and call.attrs.get("noop_with_empty_axes"):
        return call.args[0]
    fn = getattr(relay, (op_name(call) or "").removeprefix("dyn."))
    return fn(call.args[0], axis=sorted({a % max(rank, 1) for a in axes}) or None,
              keepdims=bool(call.attrs.get("keepdims", True)))


def _col2im(call: Call, values: Values) -> Expr:
    import engine.relay as relay

    image, block = (_ints(v) for v in values)
    return relay.nn.col2im(call.args[0], image, block, call.attrs["dilations"],
                           call.attrs["pads"], call.attrs["strides"])


def _simple(static: Callable[..., Expr], *keys: str) -> Builder:
    """dyn op -> static op taking the data operand, its operands as int lists, and attrs."""
    def build(call: Call, values: Values) -> Expr:
        kwargs = {key: call.attrs.get(key) for key in keys}
        return static(*call.args[:len(call.args) - len(values)], *(_ints(v) for v in values),
                      **kwargs)
    return build


def _builders() -> dict[str, tuple[tuple[int, ...], Builder]]:
    """dyn op name -> (indices of the operands that must be constants, builder)."""
    import engine.relay as relay

    def one_hot(call: Call, values: Values) -> Expr:
        indices, on, off, _ = call.args
        return relay.one_hot(indices, on, off, _first(values[0]), int(call.attrs["axis"]),
                             call.attrs["dtype"])
    table: dict[str, tuple[tuple[int, ...], Builder]] = {
        "dyn.reshape": ((1,), _reshape), "dyn.squeeze": ((1,), _squeeze),
        "dyn.expand_dims": ((1,), _expand_dims),
        "dyn.broadcast_to": ((1,), _simple(relay.broadcast_to)),
        "dyn.tile": ((1,), _simple(relay.tile)),
        "dyn.strided_slice": ((1, 2, 3, 4), _strided_slice),
        "dyn.full": ((1,), _simple(relay.full, "dtype")),
        "dyn.zeros": ((0,), _simple(relay.zeros, "dtype")),
        "dyn.ones": ((0,), _simple(relay.ones, "dtype")),
        "dyn.topk": ((1,), _topk), "dyn.one_hot": ((3,), one_hot), "dyn.trilu": ((1,), _trilu),
        "dyn.cumsum": ((1,), _scan), "dyn.cumprod": ((1,), _scan),
        "dyn.nn.pad": ((1,), _pad), "dyn.image.resize2d": ((1, 2), _resize),
        "dyn.nn.col2im": ((1, 2), _col2im),
        "dyn.signal.dft": ((1, 2), _dft),
    }
    for name in ("sum", "mean", "max", "min", "prod"):
        table[f"dyn.{name}"] = ((1,), _reduce)
    return table


class DynamicSpecializer(CallRewriter):
    """Rewrites each dyn call whose shape-like operands are constants to its static op."""

    keep_type = False  # the static op's type is sharper than the dyn one: re-inferred

    def __init__(self, mod: IRModule | None = None) -> None:
        super().__init__(mod)
        self.table = _builders()
        self.rewrites = {name: self._specialize for name in self.table}

    def _specialize(self, pre: Call, post: Call) -> Expr | None:
        indices, build = self.table[op_name(post) or ""]
        present = [i for i in indices if i < len(post.args)]
        operands = [post.args[i] for i in present]
        if not all(isinstance(arg, Constant) for arg in operands):
            return None
        return build(post, [arg.data.numpy() for arg in operands])  # type: ignore[attr-defined]



def dynamic_to_static(func: Function, mod: IRModule | None = None) -> Function:
    for _ in range(MAX_ROUNDS):
        folded = fold_constant(func, mod)
        assert isinstance(folded, Function)
        ensure_typed(folded, mod)
        specializer = DynamicSpecializer(mod)
        func = rewrite_function(specializer, folded)
        if not specializer.count:
            break
    return ensure_typed(func, mod)


@register_pass
def DynamicToStatic() -> Pass:  # TVM's name
    """Specialise dyn ops whose operands are constants to their static ops."""

    def transform(func: Function, mod: IRModule, ctx: PassContext) -> Function:
        return dynamic_to_static(func, mod)

    return function_pass(transform, opt_level=3, required=["InferType"])


__all__ = ["DynamicSpecializer", "DynamicToStatic", "dynamic_to_static"]
