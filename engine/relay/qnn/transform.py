"""QNN passes (TVM's `relay.qnn.transform`).

`CanonicalizeOps` lowers every qnn op to integer Relay ops the standard pipeline and
`relay.build` handle, computing what the interpreter kernels compute, to the bit. The
rules live with their ops (`register_canonicalize`, the op attribute
`FTVMQnnCanonicalize`); every call a rule makes carries the span of the qnn call it
replaces (one-to-many), so a requantize's integer ops name the layers they serve.
"""

from __future__ import annotations

from collections.abc import Sequence

from engine.ir.expr import Call, Function
from engine.ir.module import IRModule
from engine.ir.op import Op
from engine.relay.qnn.lowering import QnnCanonicalizeError, canonicalize_rule
from engine.relay.transform._rewrite import CallRewriter, Rewrite, ensure_typed, rewrite_function
from engine.relay.transform.pass_infra import function_pass
from engine.transform import Pass, PassContext, register_pass


class QnnCanonicalizer(CallRewriter):
    """Rewrites each call whose op has a registered canonical form."""

    def rules_for(self, call: Call) -> Sequence[Rewrite]:
        rule = canonicalize_rule(call.op) if isinstance(call.op, Op) else None
        return () if rule is None else (rule,)


def canonicalize_qnn(func: Function, mod: IRModule | None = None) -> Function:
    ensure_typed(func, mod)
    return rewrite_function(QnnCanonicalizer(mod), func)


@register_pass("qnn.CanonicalizeOps")
def CanonicalizeOps() -> Pass:  # TVM's name (relay.qnn.transform.CanonicalizeOps)
    """Lower every qnn op to integer Relay ops (bit-exact with the qnn kernels)."""

    def transform(func: Function, mod: IRModule, ctx: PassContext) -> Function:
        return canonicalize_qnn(func, mod)

    return function_pass(transform, opt_level=0, required=["InferType"])


__all__ = ["CanonicalizeOps", "QnnCanonicalizeError", "QnnCanonicalizer", "canonicalize_qnn"]
