"""SimplifyInference: unpack training-time ops into their inference arithmetic (TVM's
`relay.transform.SimplifyInference`).

- `batch_norm(x, gamma, beta, mean, var)[0]` becomes
  `x * expand(gamma / sqrt(var + eps)) + expand(beta - mean * scale)` (TVM's form:
  scale = 1 / sqrt(var + eps) * gamma, shift = -mean * scale + beta, each expanded
  with `expand_dims` to broadcast along the channel axis);
- `layer_norm(x, gamma, beta)` becomes `(x - mean) / sqrt(var + eps) * gamma + beta`;
- `dropout(x)[0]` becomes `x`.

Every expression of an unpacked op carries the op's span (one-to-many,
`SIBuilder.RecursivelyFillSpan`), so the explorer still names the layer.
"""

from __future__ import annotations

from engine.ir.expr import Call, Expr, Function, TupleGetItem
from engine.ir.module import IRModule
from engine.ir.type import TensorType
from engine.relay.transform._rewrite import (
    CallRewriter,
    const_scalar,
    copy_type,
    ensure_typed,
    expand_to_axis,
    fill_span,
    is_op,
    merged_span,
    normalize_axis,
    rewrite_function,
    tensor_type,
)
from engine.relay.transform.pass_infra import function_pass
from engine.transform import Pass, PassContext, allow_rewrite, register_pass


def unpack_batch_norm(bn: Call, data_type: TensorType) -> Expr:
    """The inference arithmetic of `batch_norm(...)[0]` (unspanned new expressions)."""
    import engine.relay as relay

    data, gamma, beta, moving_mean, moving_var = bn.args
    attrs, dtype = bn.attrs, data_type.dtype
    eps = const_scalar(float(attrs.get("epsilon", 1e-5)), dtype)
    scale = relay.divide(const_scalar(1.0, dtype), relay.sqrt(relay.add(moving_var, eps)))
    if attrs.get("scale", True):
        scale = relay.multiply(gamma, scale)
    shift = relay.multiply(relay.negative(moving_mean), scale)
    if attrs.get("center", True):
        shift = relay.add(shift, beta)
    ndim = data_type.ndim
    axis = normalize_axis(int(attrs.get("axis", 1)), ndim)
    out = relay.multiply(data, expand_to_axis(scale, ndim, axis))
    return relay.add(out, expand_to_axis(shift, ndim, axis))


def unpack_layer_norm(ln: Call, data_type: TensorType) -> Expr:
    """The inference arithmetic of `layer_norm(data, gamma, beta)`."""
    import engine.relay as relay

    data, gamma, beta = ln.args
    attrs, ndim = ln.attrs, data_type.ndim
    axis = normalize_axis(int(attrs.get("axis", -1)), ndim)
    eps = const_scalar(float(attrs.get("epsilon", 1e-5)), data_type.dtype)
    mean = relay.mean(data, axis=[axis], keepdims=True)
    var = relay.variance(data, axis=[axis], keepdims=True, with_mean=mean)
    out = relay.divide(relay.subtract(data, mean), relay.sqrt(relay.add(var, eps)))
    if attrs.get("scale", True):
        out = relay.multiply(out, expand_to_axis(gamma, ndim, axis))
    if attrs.get("center", True):
        out = relay.add(out, expand_to_axis(beta, ndim, axis))
    return out


class InferenceSimplifier(CallRewriter):
    """Unpacks batch_norm / layer_norm / dropout."""

    def __init__(self, mod: IRModule | None = None) -> None:
        super().__init__(mod)
        self.rewrites = {"nn.layer_norm": self._layer_norm}

    def _layer_norm(self, pre: Call, post: Call) -> Expr | None:
        data_type = tensor_type(pre.args[0])
        if data_type is None:
            return None
        return fill_span(unpack_layer_norm(post, data_type), post.span, post.args)

    def visit_tuple_getitem(self, item: TupleGetItem) -> Expr:
        post = super().visit_tuple_getitem(item)
        if not isinstance(post, TupleGetItem) or post.index != 0:
            return post
        producer, pre_producer = post.tuple_value, item.tuple_value
        if not allow_rewrite(item):
            return post
        if is_op(producer, "nn.dropout"):
            self.count += 1
            return producer.args[0]  # type: ignore[attr-defined]
        if not is_op(producer, "nn.batch_norm") or not isinstance(pre_producer, Call):
            return post
        data_type = tensor_type(pre_producer.args[0])
        if data_type is None:
            return post
        assert isinstance(producer, Call)
        self.count += 1
        new = unpack_batch_norm(producer, data_type)
        span = merged_span([producer, post])
        return copy_type(fill_span(new, span, producer.args), item)


def simplify_inference(func: Function, mod: IRModule | None = None) -> Function:
    ensure_typed(func, mod)
    return rewrite_function(InferenceSimplifier(mod), func)


@register_pass
def SimplifyInference() -> Pass:  # TVM's name
    """Unpack batch_norm, layer_norm and dropout for inference."""

    def transform(func: Function, mod: IRModule, ctx: PassContext) -> Function:
        return simplify_inference(func, mod)

    return function_pass(transform, opt_level=0, required=["InferType"])


__all__ = ["InferenceSimplifier", "SimplifyInference", "simplify_inference",
           "unpack_batch_norm", "unpack_layer_norm"]
