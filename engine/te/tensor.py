"""Tensor expressions: IterVar, Tensor, placeholder and compute operations.

`te.compute(shape, lambda i, j: ...)` calls the lambda once with one Var per
axis (named after the lambda's parameters) and keeps the expression tree it
returns; a reduction (`te.sum(..., axis=k)`) must be the whole body.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from engine.ir.attrs import Attrs, make_attrs
from engine.te.errors import TEError
from engine.tir import expr as E


class IterVarType:
    """TVM's IterVar kinds (the numbers match `tvm.tir.IterVar`)."""

    DataPar = 0
    ThreadIndex = 1
    CommReduce = 2
    Ordered = 3
    DimInfo = 4
    Unrolled = 5
    Vectorized = 6
    Parallelized = 7
    Tensorized = 8


@dataclass(frozen=True, eq=False, slots=True, repr=False)
class Range:
    """`[min, min + extent)`."""

    min: E.PrimExpr
    extent: E.PrimExpr

    @staticmethod
    def from_min_extent(min_value: Any, extent: Any) -> Range:
        return Range(E.convert(min_value), E.convert(extent))

    def __repr__(self) -> str:
        return f"range(min={self.min}, ext={self.extent})"


def make_range(begin: Any, end: Any) -> Range:
    """`Range(begin, end)` as TVM's `tvm.ir.Range(begin, end)` builds it."""
    lo, hi = E.convert(begin), E.convert(end)
    from engine.tir.arith import simplify

    return Range(lo, simplify(E.Sub(a=hi, b=lo)))


@dataclass(frozen=True, eq=False, slots=True, repr=False)
class IterVar(E.ExprOp):
    """An iteration variable: a Var with its domain and kind (converts to its Var)."""

    dom: Range | None
    var: E.Var
    iter_type: int = IterVarType.DataPar
    thread_tag: str = ""

    def as_prim_expr(self) -> E.PrimExpr:
        return self.var

    @property
    def name(self) -> str:
        return self.var.name

    @property
    def is_reduce(self) -> bool:
        return self.iter_type == IterVarType.CommReduce

    def __repr__(self) -> str:
        dom = f", {self.dom!r}" if self.dom is not None else ""
        return f"IterVar({self.var.name}{dom})"


class TensorSlice(E.ExprOp):
    """`A[i]` of a 2-d tensor: indexable further (`A[i][j]`), an expression once complete."""

    __slots__ = ("tensor", "indices")

    def __init__(self, tensor: Tensor, indices: tuple[Any, ...]) -> None:
        self.tensor = tensor
        self.indices = indices

    def __getitem__(self, index: Any) -> Any:
        more = index if isinstance(index, tuple) else (index,)
        return self.tensor[self.indices + more]

    def as_prim_expr(self) -> E.PrimExpr:
        return self.tensor.load(self.indices)


@dataclass(frozen=True, eq=False, slots=True, repr=False)
class Tensor:
    """Output `value_index` of operation `op`."""

    op: Operation
    value_index: int
    shape: tuple[E.PrimExpr, ...]
    dtype: str

    @property
    def name(self) -> str:
        if self.op.num_outputs == 1:
            return self.op.name
        return f"{self.op.name}.v{self.value_index}"

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def load(self, indices: Sequence[Any]) -> E.PrimExpr:
        if len(indices) != self.ndim:
            raise TEError(f"tensor {self.name} has {self.ndim} dimension(s), "
                          f"indexed with {len(indices)}")
        return E.ProducerLoad(producer=self, indices=tuple(_index(i) for i in indices))

    def __getitem__(self, index: Any) -> Any:
        indices = index if isinstance(index, tuple) else (index,)
        if len(indices) < self.ndim:
            return TensorSlice(self, indices)
        return self.load(indices)

    def __call__(self, *indices: Any) -> E.PrimExpr:
        return self.load(indices)

    def __repr__(self) -> str:
        shape = ", ".join(str(d) for d in self.shape)
        return f"Tensor(shape=[{shape}], op.name={self.op.name})"


def _index(value: Any) -> E.PrimExpr:
    expr = E.convert(value)
    if not E.is_int(expr.dtype):
        raise TEError(f"tensor index must be an integer expression, got {expr.dtype}: {expr}")
    return expr


@dataclass(frozen=True, eq=False, slots=True, repr=False)
class Operation:
    """Base of TE operations; `output(i)` is always the same Tensor object."""

    name: str
    tag: str = field(default="", kw_only=True)
    attrs: Attrs = field(default_factory=lambda: make_attrs({}), kw_only=True)
    _outputs: tuple[Tensor, ...] = field(init=False, default=())

    @property
    def num_outputs(self) -> int:
        return len(self._outputs)

    def output(self, index: int) -> Tensor:
        return self._outputs[index]

    @property
    def input_tensors(self) -> list[Tensor]:
        return []

    @property
    def axis(self) -> tuple[IterVar, ...]:
        """The data-parallel axes (none for a placeholder or an extern stage)."""
        return ()

    @property
    def reduce_axis(self) -> tuple[IterVar, ...]:
        return ()

    def _set_outputs(self, shape: tuple[E.PrimExpr, ...], dtypes: Sequence[str]) -> None:
        outs = tuple(Tensor(self, i, shape, d) for i, d in enumerate(dtypes))
        object.__setattr__(self, "_outputs", outs)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name})"


@dataclass(frozen=True, eq=False, slots=True, repr=False)
class PlaceholderOp(Operation):
    shape: tuple[E.PrimExpr, ...] = ()
    dtype: str = "float32"

    def __post_init__(self) -> None:
        self._set_outputs(self.shape, [self.dtype])


@dataclass(frozen=True, eq=False, slots=True, repr=False)
class ComputeOp(Operation):
    axis: tuple[IterVar, ...] = ()
    reduce_axis: tuple[IterVar, ...] = ()
    body: tuple[E.PrimExpr, ...] = ()
    _inputs: tuple[Tensor, ...] = field(init=False, default=())

    def __post_init__(self) -> None:
        shape = tuple(iv.dom.extent for iv in self.axis if iv.dom is not None)
        self._set_outputs(shape, [b.dtype for b in self.body])
        object.__setattr__(self, "_inputs", tuple(_read_tensors(self.body)))

    @property
    def input_tensors(self) -> list[Tensor]:
        return list(self._inputs)

    def with_body(self, body: tuple[E.PrimExpr, ...]) -> ComputeOp:
        """The same operation (same axes, name, tag) computing `body`."""
        return ComputeOp(self.name, tag=self.tag, attrs=self.attrs, axis=self.axis,
                         reduce_axis=self.reduce_axis, body=body)


def _read_tensors(bodies: Sequence[E.PrimExpr]) -> list[Tensor]:
    seen: dict[int, Tensor] = {}
    stack = list(reversed(bodies))
    while stack:
        node = stack.pop()
        if isinstance(node, E.ProducerLoad):
            seen.setdefault(id(node.producer), node.producer)
        stack.extend(reversed(E.iter_children(node)))
    return list(seen.values())


# --- the user-facing constructors -----------------------------------------------------

def _shape(shape: Any) -> tuple[E.PrimExpr, ...]:
    dims = shape if isinstance(shape, (list, tuple)) else (shape,)
    return tuple(E.convert(d) for d in dims)


def placeholder(shape: Any, dtype: str = "float32", name: str = "placeholder") -> Tensor:
    """An input tensor of `shape` and `dtype`."""
    return PlaceholderOp(name, shape=_shape(shape), dtype=dtype).output(0)


def var(name: str = "tindex", dtype: str = "int32") -> E.Var:
    return E.Var(name, dtype=dtype)


def size_var(name: str = "size", dtype: str = "int32") -> E.SizeVar:
    return E.SizeVar(name, dtype=dtype)


def const(value: Any, dtype: str | None = None) -> E.PrimExpr:
    if dtype is None:
        return E.convert(value)
    return E.make_const(value, dtype)


def reduce_axis(dom: Any, name: str = "rv", thread_tag: str = "") -> IterVar:
    """A reduction axis over `dom` = (begin, end) or a Range."""
    rng = dom if isinstance(dom, Range) else make_range(*dom)
    return IterVar(rng, E.Var(name), IterVarType.CommReduce, thread_tag)


def thread_axis(dom: Any = None, tag: str = "", name: str = "") -> IterVar:
    """A thread index (`te.thread_axis("blockIdx.x")`) to `bind` loops to."""
    if isinstance(dom, str):
        tag, dom = dom, None
    if not tag:
        raise TEError("thread_axis needs a tag such as 'blockIdx.x' or 'threadIdx.x'")
    rng = None if dom is None else (dom if isinstance(dom, Range) else make_range(*dom))
    return IterVar(rng, E.Var(name or tag), IterVarType.ThreadIndex, tag)


def _axis_names(fcompute: Callable[..., Any], ndim: int) -> list[str]:
    try:
        params = list(inspect.signature(fcompute).parameters.values())
    except (TypeError, ValueError):
        params = []
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        return [f"i{k}" for k in range(ndim)]
    names = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if len(names) != ndim:
        raise TEError(f"fcompute takes {len(names)} argument(s) but the shape has {ndim} "
                      "dimension(s)")
    return names


def _check_reduce_placement(body: E.PrimExpr) -> None:
    stack = [] if isinstance(body, E.Reduce) else [body]
    if isinstance(body, E.Reduce):
        stack.extend(E.iter_children(body))
    while stack:
        node = stack.pop()
        if isinstance(node, E.Reduce):
            raise TEError(f"a reduction must be the whole body of a compute, found one inside "
                          f"{body}; compute the reduction as its own tensor")
        stack.extend(E.iter_children(node))


def compute(shape: Any, fcompute: Callable[..., Any], name: str = "compute", tag: str = "",
            attrs: Any = None) -> Tensor:
    """The tensor of `shape` whose element at (i, j, ...) is `fcompute(i, j, ...)`."""
    dims = _shape(shape)
    names = _axis_names(fcompute, len(dims))
    axis = tuple(IterVar(Range(E.IntImm(value=0), d), E.Var(n), IterVarType.DataPar)
                 for n, d in zip(names, dims))
    result = fcompute(*[iv.var for iv in axis])
    if isinstance(result, (list, tuple)):
        if len(result) != 1:
            raise TEError("multi-output compute is not supported: return one expression")
        result = result[0]
    body = E.convert(result)
    _check_reduce_placement(body)
    reduce_axes = body.axis if isinstance(body, E.Reduce) else ()
    op = ComputeOp(name, tag=tag, attrs=make_attrs(attrs or {}), axis=axis,
                   reduce_axis=tuple(reduce_axes), body=(body,))
    return op.output(0)
