"""CanonicalizeOps: rewrite ops into simpler ones later passes handle (TVM's
`relay.transform.CanonicalizeOps`): `nn.bias_add(x, b, axis)` becomes
`add(x, expand_dims(b, 1, ndim - axis - 1))`, so bias adds fuse and fold as
plain broadcasts. The new calls carry the bias_add's span (one-to-many).
"""

from __future__ import annotations

from engine.ir.expr import Call, Expr, Function
from engine.ir.module import IRModule
from engine.relay.transform._rewrite import (
    CallRewriter,
    Rewrite,
    ensure_typed,
    expand_to_axis,
    fill_span,
    normalize_axis,
    rewrite_function,
    tensor_type,
)
from engine.relay.transform.pass_infra import function_pass
from engine.transform import Pass, PassContext, register_pass


def canonicalize_bias_add(pre: Call, post: Call) -> Expr | None:
    import engine.relay as relay

    data_type = tensor_type(pre.args[0])
    if data_type is None:
        return None
    data, bias = post.args
    ndim = data_type.ndim
    axis = normalize_axis(int(post.attrs.get("axis", 1)), ndim)
    new = relay.add(data, expand_to_axis(bias, ndim, axis))
    return fill_span(new, post.span, [data, bias])


RULES: dict[str, Rewrite] = {"nn.bias_add": canonicalize_bias_add}


class OpCanonicalizer(CallRewriter):
    rewrites = RULES  # type: ignore[assignment]


def canonicalize_ops(func: Function, mod: IRModule | None = None) -> Function:
    ensure_typed(func, mod)
    return rewrite_function(OpCanonicalizer(mod), func)


@register_pass
def CanonicalizeOps() -> Pass:  # TVM's name
    """Rewrite nn.bias_add into add + expand_dims."""

    def transform(func: Function, mod: IRModule, ctx: PassContext) -> Function:
        return canonicalize_ops(func, mod)

    return function_pass(transform, opt_level=3, required=["InferType"])


__all__ = ["RULES", "CanonicalizeOps", "OpCanonicalizer", "canonicalize_ops"]
