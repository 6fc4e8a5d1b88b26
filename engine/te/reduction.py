"""Commutative reducers: `te.sum`, `te.max`, `te.min` and `te.comm_reducer`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import reduce
from typing import Any

from engine.te.errors import TEError
from engine.te.tensor import IterVar
from engine.tir import expr as E
from engine.tir import intrin
from engine.tir.functor import substitute


@dataclass(frozen=True, eq=False, slots=True, repr=False)
class CommReducer:
    """`result(lhs, rhs)` combines an accumulator with a value; starts at `identity_element`."""

    name: str
    lhs: tuple[E.Var, ...]
    rhs: tuple[E.Var, ...]
    result: tuple[E.PrimExpr, ...]
    identity_element: tuple[E.PrimExpr, ...]

    def combine(self, acc: Sequence[E.PrimExpr],
                value: Sequence[E.PrimExpr]) -> tuple[E.PrimExpr, ...]:
        vmap = dict(zip(self.lhs, acc)) | dict(zip(self.rhs, value))
        return tuple(substitute(r, vmap) for r in self.result)

    def __repr__(self) -> str:
        return f"CommReducer({self.name})"


Combine = Callable[[E.PrimExpr, E.PrimExpr], Any]
Identity = Callable[[str], Any]


class Reducer:
    """What `te.comm_reducer` returns: `r(expr, axis=k, where=cond)` builds a Reduce;
    `r(a, b)` (no axis) combines two expressions directly, as TVM's reducers do."""

    def __init__(self, fcombine: Combine, fidentity: Identity, name: str) -> None:
        self.fcombine = fcombine
        self.fidentity = fidentity
        self.name = name

    def combiner(self, dtype: str) -> CommReducer:
        x, y = E.Var("x", dtype=dtype), E.Var("y", dtype=dtype)
        result = E.convert(self.fcombine(x, y))
        identity = E.convert(self.fidentity(dtype))
        return CommReducer(self.name, (x,), (y,), (result,), (identity,))

    def __call__(self, expr: Any, axis: Any = None, where: Any = None, init: Any = None,
                 *args: Any) -> E.PrimExpr:
        if axis is None or not isinstance(axis, (IterVar, list, tuple)):
            values = [v for v in (expr, axis, where, init, *args) if v is not None]
            return E.convert(reduce(lambda a, b: self.fcombine(E.convert(a), E.convert(b)),
                                    values))
        axes = tuple(axis) if isinstance(axis, (list, tuple)) else (axis,)
        for iv in axes:
            if not isinstance(iv, IterVar) or not iv.is_reduce:
                raise TEError(f"{self.name}: axis must be te.reduce_axis IterVars, got {iv!r}")
        source = E.convert(expr)
        condition = E.make_const(True, "bool") if where is None else E.convert(where)
        inits = () if init is None else (E.convert(init),)
        return E.Reduce(combiner=self.combiner(source.dtype), source=(source,), axis=axes,
                        condition=condition, value_index=0, init=inits)

    def __repr__(self) -> str:
        return f"Reducer({self.name})"


def comm_reducer(fcombine: Combine, fidentity: Identity, name: str = "reduce") -> Reducer:
    """A commutative reducer from a combining function and an identity per dtype."""
    return Reducer(fcombine, fidentity, name)


sum = comm_reducer(lambda x, y: x + y, lambda t: E.make_const(0, t), name="sum")
max = comm_reducer(intrin.max, intrin.min_value, name="max")
min = comm_reducer(intrin.min, intrin.max_value, name="min")
