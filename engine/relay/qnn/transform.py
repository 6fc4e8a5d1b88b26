"""QNN passes (TVM's `relay.qnn.transform`).

`Legalize` is what relay.build runs first (TVM's GetPassPrefix): `LegalizeOps`, the
rules ops register under `FTVMQnnLegalize` (rewrites into other qnn ops, none needed on
this engine's one target yet), then `CanonicalizeOps`. Unlike TVM's (opt_level 1) it
runs at every opt_level: nothing after it can compute a qnn op.

`CanonicalizeOps` lowers every qnn op to integer Relay ops the standard pipeline and
`relay.build` handle, computing what the interpreter kernels compute, to the bit. The
rules live with their ops (`register_canonicalize`, the op attribute
`FTVMQnnCanonicalize`); every call a rule makes carries the span of the qnn call it
replaces (one-to-many), so a requantize's integer ops name the layers they serve.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from engine.ir.expr import Call, Expr, Function
from engine.ir.module import IRModule
from engine.ir.op import Op, register_op_attr
from engine.relay.qnn.lowering import QnnCanonicalizeError, canonicalize_rule, spanned
from engine.relay.transform._rewrite import CallRewriter, Rewrite, ensure_typed, rewrite_function
from engine.relay.transform.pass_infra import function_pass
from engine.transform import Pass, PassContext, Sequential, register_pass

LEGALIZE_ATTR = "FTVMQnnLegalize"


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


def register_legalize(name: str) -> Callable[[Callable[[Call, Call], Expr | None]],
                                             Callable[[Call, Call], Expr | None]]:
    """Register `rule(pre, post) -> Expr | None` (None: keep the call) as the legalization
    of qnn op `name`; calls it makes carry the replaced call's span."""
    def register(rule: Callable[[Call, Call], Expr | None]) -> Callable[[Call, Call],
                                                                      Expr | None]:
        register_op_attr(name, LEGALIZE_ATTR, spanned(rule))  # type: ignore[arg-type]
        return rule

    return register


class QnnLegalizer(CallRewriter):
    def rules_for(self, call: Call) -> Sequence[Rewrite]:
        op = call.op
        if isinstance(op, Op) and op.has_attr(LEGALIZE_ATTR):
            return (op.get_attr(LEGALIZE_ATTR),)
        return ()


@register_pass("qnn.LegalizeOps")
def LegalizeOps() -> Pass:
    """Apply the qnn ops' registered legalizations (TVM's Legalize("FTVMQnnLegalize"))."""

    def transform(func: Function, mod: IRModule, ctx: PassContext) -> Function:
        ensure_typed(func, mod)
        return rewrite_function(QnnLegalizer(mod), func)

    return function_pass(transform, opt_level=0, required=["InferType"])


@register_pass("qnn.Legalize")
def Legalize() -> Pass:  # TVM's name (relay.qnn.transform.Legalize)
    """The qnn legalizations, then CanonicalizeOps: every qnn op lowered to integer Relay."""
    return Sequential([LegalizeOps(), CanonicalizeOps()], opt_level=0, name="qnn.Legalize")


__all__ = ["CanonicalizeOps", "Legalize", "LegalizeOps", "register_legalize", "QnnCanonicalizeError", "QnnCanonicalizer", "canonicalize_qnn"]
