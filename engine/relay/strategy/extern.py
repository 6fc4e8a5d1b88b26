"""The extern fallback: an op without a TE compute becomes one opaque stage.

Its loop nest stores, per output element, a call to the op by name that takes
the input buffers (as `p[0, ...]`, the address of their first element) and the
output index; the call is opaque to the evaluator, so a fused function with
an extern stage lowers (and shows in the explorer) but is not evaluated.
"""

from __future__ import annotations

from typing import Any

import engine.te as te
from engine.ir.attrs import Attrs
from engine.ir.type import Type
from engine.relay.strategy.base import EXTERN, OpStrategy, out_types, static_shape
from engine.relay.strategy.schedules import GENERIC_SCHEDULES
from engine.te import Tensor
from engine.tir import expr as E

EXTERN_PREFIX = "extern."


def _base_address(t: Tensor) -> E.PrimExpr:
    return t.load([0] * t.ndim)


def extern_compute(op_name: str) -> Any:
    def compute(attrs: Attrs, inputs: list[Tensor], out_type: Type) -> list[Tensor]:
        outs = []
        for k, ty in enumerate(out_types(out_type)):
            shape = static_shape(ty)

            def body(*idx: Any, _k: int = k, _dtype: str = ty.dtype) -> E.PrimExpr:
                args = tuple(_base_address(t) for t in inputs) + tuple(
                    E.convert(i) for i in idx) + (E.IntImm(value=_k),)
                return E.Call(op=EXTERN_PREFIX + op_name, args=args, dtype=_dtype)
            name = f"{op_name.replace('.', '_')}_extern" + (f"_{k}" if k else "")
            outs.append(te.compute(shape, body, name=name, tag=EXTERN))
        return outs
    return compute


def extern_strategy(op_name: str) -> OpStrategy:
    return OpStrategy(f"{op_name}.extern", extern_compute(op_name), GENERIC_SCHEDULES)


def is_extern_call(expr: E.PrimExpr) -> bool:
    return isinstance(expr, E.Call) and expr.op.startswith(EXTERN_PREFIX)
