"""FakeQuantizationToInteger(use_qat=True)'s second step (TVM's QAT mode): an op whose
quantized operands all come straight from `qnn.dequantize` but whose result is not
quantized again (it feeds a float op) still computes in integers, followed by a
dequantize of its result: `dequantize -> op -> float` becomes `op' -> dequantize ->
float`. Ops whose output parameters are only known before a quantize (sums, products
of 8-bit tensors, table ops) stay as they are. Chains convert one op after the other,
since each converted op hands a dequantize on to the next.
"""

from __future__ import annotations

from engine.ir.expr import Call, Expr
from engine.relay.expr_functor import ExprMutator
from engine.relay.qnn.fq2i.affine import Affine, AffineType, Region, Unconvertible
from engine.relay.qnn.fq2i.registry import rule_of
from engine.relay.qnn.op.qnn import dequantize
from engine.relay.transform._rewrite import fill_span, op_name, tensor_type


class QatRewriter(ExprMutator):
    def __init__(self, enabled: frozenset[str], convention: object) -> None:
        super().__init__()
        self.enabled = enabled
        self.convention = convention
        self.made: dict[int, AffineType] = {}  # dequantizes this rewriter made
        self.converted = 0

    def visit_call(self, call: Call) -> Expr:
        post = super().visit_call(call)
        if not isinstance(post, Call) or op_name(call) == "qnn.quantize":
            return post
        spec = rule_of(call, self.enabled)
        if spec is None:
            return post
        wanted = set(spec.quantized(call))
        leaves = [(i, post.args[i]) for i in wanted]
        if not leaves or not all(op_name(arg) == "qnn.dequantize" for _, arg in leaves):
            return post
        args: list[Expr] = list(post.args)
        types: list[Affine | None] = [None] * len(post.args)
        for index, leaf in leaves:
            assert isinstance(leaf, Call)
            leaf_type = self.leaf_type(call.args[index], leaf)
            if leaf_type is None:
                return post
            args[index], types[index] = leaf.args[0], leaf_type
        try:
            expr, affine = spec.rule(Region(call, tuple(args), tuple(types), None,
                                            self.convention))
        except Unconvertible:
            return post
        return self.dequantized(post, fill_span(expr, call.span, args), affine)

    def leaf_type(self, pre_arg: Expr, leaf: Call) -> AffineType | None:
        known = self.made.get(id(leaf))
        if known is not None:
            return known
        data = pre_arg.args[0] if isinstance(pre_arg, Call) else None
        ty = tensor_type(data) if data is not None else None
        if ty is None:
            return None
        return AffineType(leaf.args[1], leaf.args[2], ty.dtype, int(leaf.attrs.axis))

    def dequantized(self, post: Call, expr: Expr, affine: Affine) -> Expr:
        if not isinstance(affine, AffineType):
            return post
        out = fill_span(dequantize(expr, affine.scale, affine.zero_point, axis=affine.axis),
                        post.span, [expr])
        self.made[id(out)] = affine
        self.converted += 1
        return out


__all__ = ["QatRewriter"]
