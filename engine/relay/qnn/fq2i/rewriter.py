"""FakeQuantizationToInteger (TVM's relay.transform.FakeQuantizationToInteger): regions
of float ops between `qnn.dequantize` leaves and a `qnn.quantize` become qnn / integer ops.

For each `qnn.quantize`, the region is found by walking back from its input through ops
that have an integer form (`register_fake_quantization_to_integer`, the op attribute
`FTVMFakeQuantizationToInteger`) until every path ends at a `qnn.dequantize`; a path that
reaches anything else (a float input, a constant where a quantized operand is needed, an
op without a rule) leaves the region in float. The region is then rebuilt bottom-up: each
dequantize gives its integer input and affine type, each op's rule makes its integer form
and output affine type, and the quantize becomes a requantize from the root's affine type
(or nothing when they agree). Every call made carries the span of the float call it
replaces; the final requantize carries the quantize's and the root op's.

Options, as TVM's: `hard_fail` (raise when an op of a region has no integer form for its
operands, instead of leaving the region in float; what is not a region at all, such as a
quantize of a graph input, is always left alone), `optional_qnn_ops` (ops converted only when named: nn.softmax, as TVM). Our own:
`requantize_like` ("tvm", "onnxruntime", "tflite"; see `relay.qnn.op.convention`) picks
how the requantizes the pass makes round.

How close to the float graph (in quantization steps of the region's output, LSB):
identity-like ops (reshape, transpose, max pool, relu, clip, pad, concatenate with equal
parameters) and the table ops (sigmoid, tanh, ..., leaky_relu, softmax) compute exactly
the float graph's bits; conv2d / dense / matmul with bias, add, subtract, mul, avg pool
and concatenate with differing parameters round once more in integers than in floats
(or in the other order) and can differ by 1 LSB where the float result is within an
accumulated float rounding error of a rounding boundary.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace

from engine.ir.expr import Call, Constant, Expr, Function, Tuple
from engine.ir.module import IRModule
from engine.relay.expr_functor import ExprMutator
from engine.relay.qnn.fq2i import rules as rules  # registers the rules
from engine.relay.qnn.fq2i.affine import (
    Affine,
    AffineType,
    Region,
    TupleAffineType,
    Unconvertible,
)
from engine.relay.qnn.fq2i.qat import QatRewriter
from engine.relay.qnn.fq2i.registry import rule_of
from engine.relay.qnn.op.convention import convention as requantize_convention
from engine.relay.qnn.op.qnn import requantize
from engine.relay.transform._rewrite import (
    ensure_typed,
    fill_span,
    merged_span,
    op_name,
    tensor_type,
)
from engine.relay.transform.pass_infra import function_pass
from engine.relay.type_infer import infer_type
from engine.transform import Pass, PassContext, register_pass


def is_dequantize(expr: Expr) -> bool:
    return isinstance(expr, Call) and op_name(expr) == "qnn.dequantize"


def extract_region(root: Expr, enabled: frozenset[str]) -> list[Expr]:
    """The region under a quantize, leaves (dequantize calls) first; Unconvertible names
    what stops it."""
    order: list[Expr] = []
    seen: set[int] = set()

    def visit(expr: Expr) -> None:
        if id(expr) in seen:
            return
        seen.add(id(expr))
        if is_dequantize(expr):
            order.append(expr)
            return
        if isinstance(expr, Tuple):
            for item in expr.fields:
                visit(item)
            order.append(expr)
            return
        spec = rule_of(expr, enabled)
        if spec is None:
            raise Unconvertible(f"{op_name(expr) or type(expr).__name__} has no integer form")
        assert isinstance(expr, Call)
        wanted = set(spec.quantized(expr))
        for index, arg in enumerate(expr.args):
            if index in wanted:
                visit(arg)
            elif not isinstance(arg, Constant):
                raise Unconvertible(f"{op_name(expr)} argument {index} is not a constant")
        order.append(expr)

    visit(root)
    return order


class FakeQuantizationRewriter(ExprMutator):
    def __init__(self, hard_fail: bool, enabled: frozenset[str], like: str) -> None:
        super().__init__()
        self.hard_fail = hard_fail
        self.enabled = enabled
        self.convention = requantize_convention(like)
        self.converted = 0
        self.skipped: list[str] = []

    def visit_call(self, call: Call) -> Expr:
        post = super().visit_call(call)
        if op_name(call) != "qnn.quantize" or not isinstance(post, Call):
            return post
        try:
            region = extract_region(call.args[0], self.enabled)
        except Unconvertible as err:  # not a fake-quantized region: nothing to do
            self.skipped.append(f"{call.span}: {err}")
            return post
        try:
            result = self.convert(call, post, region)
        except Unconvertible as err:
            if self.hard_fail:
                raise
            self.skipped.append(f"{call.span}: {err}")
            return post
        self.converted += 1
        return result

    def convert(self, quantize: Call, post: Call, region: list[Expr]) -> Expr:
        root = quantize.args[0]
        out = AffineType(post.args[1], post.args[2], str(post.attrs.out_dtype),
                         int(post.attrs.axis))
        made: dict[int, tuple[Expr, Affine]] = {}
        for node in region:
            made[id(node)] = self.rewrite(node, made, out if node is root else None)
        expr, affine = made[id(root)]
        if not isinstance(affine, AffineType):
            raise Unconvertible("the quantized value is a tuple")
        return self.requantize_to(expr, affine, out, quantize, root)

    def rewrite(self, node: Expr, made: dict[int, tuple[Expr, Affine]],
                out: AffineType | None) -> tuple[Expr, Affine]:
        if is_dequantize(node):
            assert isinstance(node, Call)
            dq = self.memo_map[node]
            ty = tensor_type(node.args[0])
            if ty is None:
                raise Unconvertible("an untyped dequantize input")
            return dq.args[0], AffineType(dq.args[1], dq.args[2], ty.dtype, int(dq.attrs.axis))
        if isinstance(node, Tuple):
            fields = [made[id(f)] for f in node.fields]
            members = tuple(t for _, t in fields if isinstance(t, AffineType))
            if len(members) != len(fields):
                raise Unconvertible("a tuple of tuples")
            return Tuple(tuple(e for e, _ in fields), span=node.span), TupleAffineType(members)
        assert isinstance(node, Call)
        spec = rule_of(node, self.enabled)
        assert spec is not None
        wanted = set(spec.quantized(node))
        args = tuple(made[id(a)][0] if i in wanted else self.memo_map[a]
                     for i, a in enumerate(node.args))
        types: tuple[Affine | None, ...] = tuple(
            made[id(a)][1] if i in wanted else None for i, a in enumerate(node.args))
        expr, affine = spec.rule(Region(node, args, types, out, self.convention))
        return fill_span(expr, node.span, args), affine

    def requantize_to(self, expr: Expr, affine: AffineType, out: AffineType, quantize: Call,
                      root: Expr) -> Expr:
        if affine.dtype == out.dtype and affine.same_params(out):
            return expr
        axis = affine.axis if affine.per_axis else out.axis
        if affine.per_axis and out.per_axis and affine.axis != out.axis:
            raise Unconvertible("per-axis parameters along two different axes")
        conv = self.convention
        call = requantize(expr, affine.scale, affine.zero_point, out.scale, out.zero_point,
                          axis=axis, rounding=conv.rounding, compute_dtype=conv.compute_dtype,
                          out_dtype=out.dtype)
        return fill_span(call, merged_span([quantize, root]), [expr])


def fake_quantization_to_integer(func: Function, mod: IRModule | None, hard_fail: bool,
                                 optional_qnn_ops: Iterable[str], like: str,
                                 use_qat: bool = False) -> Function:
    ensure_typed(func, mod)
    enabled = frozenset(optional_qnn_ops)
    rewriter = FakeQuantizationRewriter(hard_fail, enabled, like)
    body = rewriter.visit(func.body)
    out = func if body is func.body else replace(func, body=body)
    if not use_qat:
        return out
    typed = infer_type(out, mod)
    assert isinstance(typed, Function)
    qat = QatRewriter(enabled, rewriter.convention)
    body = qat.visit(typed.body)
    return typed if body is typed.body else replace(typed, body=body)


@register_pass("FakeQuantizationToInteger")
def FakeQuantizationToInteger(hard_fail: bool = False, use_qat: bool = False,
                              optional_qnn_ops: Sequence[str] | None = None,
                              requantize_like: str = "tvm") -> Pass:
    """Rewrite dequantize -> float ops -> quantize regions into qnn / integer ops (and,
    with `use_qat`, ops right after a dequantize whose result stays float)."""
    requantize_convention(requantize_like)
    optional = tuple(optional_qnn_ops or ())

    def transform(func: Function, mod: IRModule, ctx: PassContext) -> Function:
        return fake_quantization_to_integer(func, mod, hard_fail, optional, requantize_like,
                                            use_qat)

    return function_pass(transform, opt_level=0, required=["InferType"])


__all__ = ["FakeQuantizationToInteger", "extract_region"]
