"""SimplifyExpr: local algebraic rewrites (TVM's `relay.transform.SimplifyExpr`).

The rewrites of TVM's pattern list that matter for imported models, one small
rule each, dispatched by the outer op's name:

- consecutive `reshape` / `contrib_reverse_reshape` -> one reshape to the final shape;
- consecutive `transpose` / `layout_transform` -> one transpose, or nothing;
- consecutive lossless `cast`s -> one cast; a cast to the dtype it has -> nothing;
- `zeros_like` / `ones_like` / `full_like` / `reshape_like` / `cast_like` -> their
  concrete form when the shape is static;
- `x + 0`, `x - 0`, `x * 1`, `x / 1` (also with `zeros`/`ones` and their `*_like`) -> x;
- a broadcast op with a `full`/`ones`/`zeros` operand -> that op with the scalar;
- `c / sqrt(x)` -> `c * rsqrt(x)` (`rsqrt(x)` when c is 1);
- `(x * c1) * c2` -> `x * (c1 * c2)` and `(x + c1) + c2` -> `x + (c1 + c2)`;
  `(x + c1) * c2` -> `x * c2 + c1 * c2` (constants folded later by FoldConstant).

Rewrites repeat until nothing matches. Merged calls leave one survivor carrying
the spans of every call it replaced (many-to-one); new expressions of a
one-to-one rewrite carry the span of the call they replace.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from engine.ir.expr import Call, Constant, Expr, Function
from engine.ir.module import IRModule
from engine.relay.op.op import OpPattern
from engine.relay.transform._rewrite import (
    CallRewriter,
    Rewrite,
    const_scalar,
    ensure_typed,
    fill_span,
    is_op,
    merged_span,
    op_name,
    rewrite_function,
    scalar_value,
    static_shape,
    tensor_type,
    type_of,
)
from engine.relay.transform.pass_infra import function_pass
from engine.transform import Pass, PassContext, register_pass

MAX_ROUNDS = 8
RESHAPES = ("reshape", "contrib_reverse_reshape")
TRANSPOSES = ("transpose", "layout_transform")


def _relay():  # the relay namespace, imported late (it imports the passes)
    import engine.relay as relay

    return relay


def _merge(new: Expr, matched: Sequence[Expr], inputs: Sequence[Expr]) -> Expr:
    return fill_span(new, merged_span(matched), inputs)


# --- reshape / transpose --------------------------------------------------------------------


def merge_reshapes(pre: Call, post: Call) -> Expr | None:
    inner = post.args[0]
    shape = static_shape(pre)
    if not is_op(inner, *RESHAPES) or shape is None:
        return None
    x = inner.args[0]  # type: ignore[attr-defined]
    return _merge(_relay().reshape(x, list(shape)), [post, inner], [x])


def _layout_axes(call: Call, ndim: int) -> list[int] | None:
    src, dst = str(call.attrs.src_layout), str(call.attrs.dst_layout)
    if len(src) != ndim or sorted(src) != sorted(dst) or not src.isalpha() or not src.isupper():
        return None  # blocked layouts (NCHW16c) are not a plain transpose
    return [src.index(c) for c in dst]


def _axes(call: Call, ndim: int) -> list[int] | None:
    if op_name(call) == "layout_transform":
        return _layout_axes(call, ndim)
    axes = call.attrs.get("axes")
    if not axes:
        return list(reversed(range(ndim)))
    return [int(a) + ndim if int(a) < 0 else int(a) for a in axes]


def merge_transposes(pre: Call, post: Call) -> Expr | None:
    inner = post.args[0]
    ty = tensor_type(pre)
    if not is_op(inner, *TRANSPOSES) or ty is None:
        return None
    assert isinstance(inner, Call)
    ndim = ty.ndim
    outer_axes, inner_axes = _axes(post, ndim), _axes(inner, ndim)
    if outer_axes is None or inner_axes is None:
        return None
    axes = [inner_axes[a] for a in outer_axes]
    x = inner.args[0]
    if axes == list(range(ndim)):
        return x
    return _merge(_relay().transpose(x, axes), [post, inner], [x])


# --- casts ----------------------------------------------------------------------------------


def _dtype(expr: Expr) -> str | None:
    ty = tensor_type(expr)
    return ty.dtype if ty is not None else None


def drop_same_cast(pre: Call, post: Call) -> Expr | None:
    if _dtype(pre.args[0]) == _dtype(pre) and _dtype(pre) is not None:
        return post.args[0]
    return None


def merge_casts(pre: Call, post: Call) -> Expr | None:
    inner = post.args[0]
    if not is_op(inner, "cast"):
        return None
    assert isinstance(inner, Call)
    x = inner.args[0]
    src, mid, dst = _dtype(x), str(inner.attrs.dtype), str(post.attrs.dtype)
    if src is None or not np.can_cast(src, mid, "safe"):
        return None  # the first cast loses information: both are needed
    if src == dst:
        return x
    return _merge(_relay().cast(x, dst), [post, inner], [x])


# --- *_like ---------------------------------------------------------------------------------


def _concrete(pre: Call, post: Call, build: str) -> Expr | None:
    shape, dtype = static_shape(pre), _dtype(pre)
    if shape is None or dtype is None:
        return None
    relay, args = _relay(), post.args
    new = {
        "zeros": lambda: relay.zeros(list(shape), dtype),
        "ones": lambda: relay.ones(list(shape), dtype),
        "full": lambda: relay.full(args[1], list(shape), dtype),
        "reshape": lambda: relay.reshape(args[0], list(shape)),
        "cast": lambda: relay.cast(args[0], dtype),
    }[build]()
    kept = args[1:] if build == "full" else args[:1] if build in ("reshape", "cast") else ()
    return fill_span(new, post.span, kept)


def _concretize(build: str) -> Rewrite:
    def rule(pre: Call, post: Call) -> Expr | None:
        return _concrete(pre, post, build)

    rule.__name__ = f"concretize_{build}_like"
    return rule


# --- identities and full operands -----------------------------------------------------------

_IDENTITY = {"add": 0.0, "subtract": 0.0, "multiply": 1.0, "divide": 1.0}
_FILL = {"zeros": 0.0, "zeros_like": 0.0, "ones": 1.0, "ones_like": 1.0}


def _fill_value(expr: Expr) -> float | None:
    """The value every element of `expr` has, if it is a constant fill (else None)."""
    name = op_name(expr)
    if name in _FILL:
        return _FILL[name]
    if name in ("full", "full_like"):
        return scalar_value(expr.args[-1])  # type: ignore[attr-defined]
    if isinstance(expr, Constant) and expr.data.ndim == 0:
        return scalar_value(expr)
    return None


def eliminate_identity(pre: Call, post: Call) -> Expr | None:
    name = op_name(pre)
    assert name is not None
    sides = (0, 1) if name in ("add", "multiply") else (0,)
    for keep in sides:
        other = 1 - keep
        if _fill_value(post.args[other]) != _IDENTITY[name]:
            continue
        if type_of(pre.args[keep]) is not None and type_of(pre.args[keep]) == type_of(pre):
            return post.args[keep]
    return None


def full_operand_to_scalar(pre: Call, post: Call) -> Expr | None:
    if len(post.args) != 2 or pre.op.get_attr("TOpPattern") != OpPattern.BROADCAST:  # type: ignore[attr-defined]
        return None
    dtype = _dtype(pre.args[0])
    for full in (0, 1):
        arg = post.args[full]
        value = _fill_value(arg) if isinstance(arg, Call) else None
        x_ty = type_of(pre.args[1 - full])
        if value is None or dtype is None or x_ty is None or x_ty != type_of(pre):
            continue
        scalar = fill_span(const_scalar(value, dtype), arg.span)
        args = (scalar, post.args[1]) if full == 0 else (post.args[0], scalar)
        return Call(post.op, args, post.attrs, post.type_args, span=post.span)
    return None


# --- arithmetic -----------------------------------------------------------------------------


def divide_sqrt_to_rsqrt(pre: Call, post: Call) -> Expr | None:
    num, den = post.args
    if not is_op(den, "sqrt") or scalar_value(num) is None:
        return None
    assert isinstance(den, Call)
    x, relay = den.args[0], _relay()
    new = relay.rsqrt(x) if scalar_value(num) == 1.0 else relay.multiply(num, relay.rsqrt(x))
    return _merge(new, [post, den], [x, num])


def _const_operand(expr: Expr, name: str) -> tuple[Call, Expr, Constant] | None:
    """`expr` as `name(x, c)` (or `name(c, x)` for commutative ops) with c constant."""
    if not is_op(expr, name):
        return None
    assert isinstance(expr, Call)
    lhs, rhs = expr.args
    if isinstance(rhs, Constant):
        return expr, lhs, rhs
    if isinstance(lhs, Constant):
        return expr, rhs, lhs
    return None


def _same_dtype(*exprs: Expr) -> bool:
    return len({_dtype(e) for e in exprs}) == 1 and _dtype(exprs[0]) is not None


def merge_adjacent(pre: Call, post: Call) -> Expr | None:
    name = op_name(post)
    assert name is not None
    for side in (0, 1):
        outer_c = post.args[1 - side]
        found = _const_operand(post.args[side], name)
        if not isinstance(outer_c, Constant) or found is None:
            continue
        inner, x, inner_c = found
        if isinstance(x, Constant) or not _same_dtype(x, inner_c, outer_c):
            return None
        op = getattr(_relay(), name)
        return _merge(op(x, op(inner_c, outer_c)), [post, inner], [x, inner_c, outer_c])
    return None


def switch_add_multiply(pre: Call, post: Call) -> Expr | None:
    for side in (0, 1):
        scale = post.args[1 - side]
        found = _const_operand(post.args[side], "add")
        if not isinstance(scale, Constant) or found is None:
            continue
        inner, x, shift = found
        if not _same_dtype(x, shift, scale) or isinstance(x, Constant):
            return None
        relay = _relay()
        new = relay.add(relay.multiply(x, scale), relay.multiply(shift, scale))
        return _merge(new, [post, inner], [x, shift, scale])
    return None


RULES: dict[str, tuple[Rewrite, ...]] = {
    "reshape": (merge_reshapes,),
    "contrib_reverse_reshape": (merge_reshapes,),
    "transpose": (merge_transposes,),
    "layout_transform": (merge_transposes,),
    "cast": (drop_same_cast, merge_casts),
    "zeros_like": (_concretize("zeros"),),
    "ones_like": (_concretize("ones"),),
    "full_like": (_concretize("full"),),
    "reshape_like": (_concretize("reshape"),),
    "cast_like": (_concretize("cast"),),
    "add": (eliminate_identity, merge_adjacent, full_operand_to_scalar),
    "subtract": (eliminate_identity, full_operand_to_scalar),
    "multiply": (eliminate_identity, merge_adjacent, switch_add_multiply,
                 full_operand_to_scalar),
    "divide": (eliminate_identity, divide_sqrt_to_rsqrt, full_operand_to_scalar),
}


class ExprSimplifier(CallRewriter):
    """The rules of RULES, and the full-operand rule for every other broadcast op."""

    rewrites = RULES  # type: ignore[assignment]

    def rules_for(self, call: Call) -> Sequence[Rewrite]:
        rules = super().rules_for(call)
        if rules or op_name(call) is None:
            return rules
        if call.op.get_attr("TOpPattern") == OpPattern.BROADCAST:  # type: ignore[attr-defined]
            return (full_operand_to_scalar,)
        return ()


def simplify_expr(func: Function, mod: IRModule | None = None) -> Function:
    """Apply the rewrites until none matches (at most MAX_ROUNDS sweeps)."""
    for _ in range(MAX_ROUNDS):
        ensure_typed(func, mod)
        rewriter = ExprSimplifier(mod)
        new = rewrite_function(rewriter, func)
        if rewriter.count == 0 or new is func:
            return new
        func = new
    return func


@register_pass
def SimplifyExpr() -> Pass:  # TVM's name
    """Simplify consecutive reshapes/transposes/casts, *_like ops and algebraic identities."""

    def transform(func: Function, mod: IRModule, ctx: PassContext) -> Function:
        return simplify_expr(func, mod)

    return function_pass(transform, opt_level=0, required=["InferType"])


__all__ = ["RULES", "ExprSimplifier", "SimplifyExpr", "simplify_expr"]
