"""The registry of FakeQuantizationToInteger's per-op rules (the op attribute
`FTVMFakeQuantizationToInteger`, as TVM names it)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from engine.ir.expr import Call, Expr
from engine.ir.op import Op, register_op_attr
from engine.relay.qnn.fq2i.affine import Rule

FQ2I_ATTR = "FTVMFakeQuantizationToInteger"


@dataclass(frozen=True, slots=True)
class RuleSpec:
    rule: Rule
    quantized_args: tuple[int, ...] | None  # None: every argument
    optional: bool = False

    def quantized(self, call: Call) -> Sequence[int]:
        return range(len(call.args)) if self.quantized_args is None else self.quantized_args


def register_fake_quantization_to_integer(*names: str, quantized_args: Sequence[int] | None
                                          = None, optional: bool = False
                                          ) -> Callable[[Rule], Rule]:
    """Register `rule(region) -> (integer expr, affine type)` as the integer form of the
    float ops `names`; `quantized_args` are the argument positions that must be quantized
    (the others must be constants, passed as they are); `optional` ops convert only when
    named in the pass's `optional_qnn_ops`."""
    def register(rule: Rule) -> Rule:
        spec = RuleSpec(rule, None if quantized_args is None else tuple(quantized_args),
                        optional)
        for name in names:
            register_op_attr(name, FQ2I_ATTR, spec)
        return rule

    return register


def rule_of(expr: Expr, enabled: frozenset[str]) -> RuleSpec | None:
    if not isinstance(expr, Call) or not isinstance(expr.op, Op):
        return None
    if not expr.op.has_attr(FQ2I_ATTR):
        return None
    spec: RuleSpec = expr.op.get_attr(FQ2I_ATTR)
    return None if spec.optional and expr.op.name not in enabled else spec


__all__ = ["FQ2I_ATTR", "RuleSpec", "register_fake_quantization_to_integer", "rule_of"]
