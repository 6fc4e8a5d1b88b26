"""What every frontend shares: span filling, layer names, size guards, typed errors.

Span filling follows the span-filling RFC (TVM's `relay.frontend.common.set_span`):
after a frontend layer is converted, `set_span(result, layer_name)` tags every
expression the conversion created and stops at expressions that already carry
a span (the outputs of earlier layers). Inputs and weights are tagged
`"<first consumer layer>.<tensor name>"` before the layer converts.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from engine.ir.errors import FrontendError
from engine.ir.expr import (
    DATAFLOW_KINDS,
    Constant,
    Expr,
    Function,
    GlobalVar,
    If,
    Let,
    Tuple,
    TupleGetItem,
    Var,
)
from engine.ir.op import Op
from engine.ir.span import SourceName, Span, SpanLike, layer_span
from engine.relay.expr_functor import ExprMutator, _dataflow_post_order
from engine.transform.context import PassContext

FILL_SPAN_CONFIG = "relay.frontend.fill_span"
FILL_SPAN_ENV = "EXPLORER_SPANFILLING"
MAX_TENSOR_ELEMENTS = 2**31


# --- errors -------------------------------------------------------------------------------
class CorruptModelError(FrontendError):
    """The file is truncated, corrupt, empty, or not a model of the claimed format."""


class UnknownFormatError(FrontendError):
    """The content matches none of the formats `load` knows."""


class InvalidGraphError(FrontendError):
    """The model parses but its graph is malformed (cycle, undefined tensor, bad attribute)."""


class TensorTooLargeError(FrontendError):
    """A tensor declares more elements than the importer accepts."""


class UnsafeModelError(FrontendError):
    """The file would make the importer execute code or read outside the model's folder."""


class ConversionError(FrontendError):
    """A supported operator has inputs or attributes the converter cannot handle."""

    def __init__(self, layer: str, op_type: str, message: str) -> None:
        self.layer = layer
        self.op_type = op_type
        super().__init__(f"layer {layer!r} ({op_type}): {message}")


class DynamicShapeError(ConversionError):
    """A converter needs a static shape that depends on the model's dynamic input dims.
    `inputs` names each input with a dynamic dim: its shape, a dim being its size, the
    exporter's symbol for it ("batch") or "?"; `suggested` pins every dynamic dim to 1, as
    `shape=` takes it (the dims a user most often means: batch 1)."""

    def __init__(self, layer: str, op_type: str, message: str,
                 inputs: dict[str, list[int | str]]) -> None:
        self.inputs = inputs
        self.suggested = {name: [d if isinstance(d, int) else 1 for d in dims]
                          for name, dims in inputs.items()}
        listed = ", ".join(f"{name} {_dims_text(dims)}" for name, dims in inputs.items())
        where = f"the model's dynamic inputs ({listed})" if inputs else "the model's inputs"
        super().__init__(layer, op_type, f"{message}; pin {where} with shape=, e.g. "
                                         f"shape={self.suggested}")


def _dims_text(dims: list[int | str]) -> str:
    return "[" + ", ".join(str(d) for d in dims) + "]"


# --- span filling -----------------------------------------------------------------------
def fill_span_enabled() -> bool:
    """False when `EXPLORER_SPANFILLING=0` or PassContext config `relay.frontend.fill_span` is
    False."""
    if os.environ.get(FILL_SPAN_ENV, "1").strip().lower() in ("0", "false", "off", "no"):
        return False
    try:
        config = PassContext.current().config
    except (AttributeError, RuntimeError):
        return True
    return bool(config.get(FILL_SPAN_CONFIG, True))


def as_span(span: SpanLike | str | bytes) -> SpanLike:
    if isinstance(span, str):
        return layer_span(span)
    if isinstance(span, bytes):
        return layer_span(span.decode("utf-8", errors="replace"))
    if isinstance(span, Span) or hasattr(span, "spans"):
        return span
    raise TypeError(f"a span must be a str, bytes or Span, got {type(span).__name__}")


class _SpanFiller(ExprMutator):
    """Copies every unspanned expression with the span; spanned ones are kept as they are."""

    def __init__(self, span: SpanLike) -> None:
        super().__init__()
        self.span = span

    def _done(self, node: Expr) -> bool:
        if node in self.memo_map:
            return True
        if node.span or isinstance(node, (Op, GlobalVar)):
            self.memo_map[node] = node
            return True
        return False

    def visit(self, expr: Expr) -> Any:
        if self._done(expr):
            return self.memo_map[expr]
        if isinstance(expr, DATAFLOW_KINDS):
            for node in _dataflow_post_order(expr, self._done):
                self.memo_map[node] = self._dispatch(node)
            return self.memo_map[expr]
        result = self._dispatch(expr)
        self.memo_map[expr] = result
        return result

    def visit_var(self, var: Var) -> Expr:
        return replace(var, span=self.span)

    def visit_constant(self, const: Constant) -> Expr:
        return replace(const, span=self.span)

    def visit_call(self, call: Any) -> Expr:
        args = tuple(self.visit(a) for a in call.args)
        return replace(call, op=self.visit(call.op), args=args, span=self.span)

    def visit_tuple(self, tup: Tuple) -> Expr:
        return replace(tup, fields=tuple(self.visit(f) for f in tup.fields), span=self.span)

    def visit_tuple_getitem(self, item: TupleGetItem) -> Expr:
        return replace(item, tuple_value=self.visit(item.tuple_value), span=self.span)

    def visit_let(self, let: Let) -> Expr:
        return replace(let, var=self.visit(let.var), value=self.visit(let.value),
                       body=self.visit(let.body), span=self.span)

    def visit_if(self, ite: If) -> Expr:
        return replace(ite, cond=self.visit(ite.cond), true_branch=self.visit(ite.true_branch),
                       false_branch=self.visit(ite.false_branch), span=self.span)

    def visit_function(self, fn: Function) -> Expr:
        params = tuple(self.visit(p) for p in fn.params)
        return replace(fn, params=params, body=self.visit(fn.body), span=self.span)

    def fill(self, sym: Any) -> Any:
        if isinstance(sym, Expr):
            return self.visit(sym)
        if isinstance(sym, list):
            return [self.fill(s) for s in sym]
        if isinstance(sym, tuple):
            return tuple(self.fill(s) for s in sym)
        if sym is None or isinstance(sym, (bool, int, float, np.ndarray, np.generic)):
            return sym
        raise TypeError(f"set_span: cannot fill a {type(sym).__name__}")


def set_span(sym: Any, span: SpanLike | str | bytes) -> Any:
    """Tag `sym` (an expression, or a list/tuple of them, nested) with `span`, recursively,
    stopping at expressions that already carry a span. One filler serves the whole `sym`, so
    sub-expressions shared between its parts stay shared. A no-op when span filling is off."""
    if not fill_span_enabled():
        return sym
    return _SpanFiller(as_span(span)).fill(sym)


def parameter_span(layer: str, tensor: str) -> Span:
    """The span of an input or weight first consumed by `layer`: `"<layer>.<tensor>"`."""
    return Span(SourceName(f"{layer}.{tensor}"))


def set_parameter_span(expr: Expr, layer: str, tensor: str) -> Expr:
    """Tag a not-yet-spanned input/weight (Var or Constant) with `"<layer>.<tensor>"`."""
    if expr.span or not isinstance(expr, (Var, Constant)):
        return expr
    return set_span(expr, parameter_span(layer, tensor))


# --- names --------------------------------------------------------------------------------
class LayerNamer:
    """Layer names for span filling: the model's own, or `"<OpType>_<N>"` when it has none
    (N counts per op type from 0, skipping names the model already uses)."""

    def __init__(self, taken: Iterable[str] = ()) -> None:
        self._taken = {t for t in taken if t}
        self._counts: dict[str, int] = {}

    def name(self, given: str, op_type: str) -> str:
        if given:
            return given
        while True:
            index = self._counts.get(op_type, -1) + 1
            self._counts[op_type] = index
            candidate = f"{op_type}_{index}"
            if candidate not in self._taken:
                self._taken.add(candidate)
                return candidate


# --- guards ---------------------------------------------------------------------------------
def check_elements(shape: Sequence[Any], what: str) -> None:
    """Refuse a tensor declaring more than 2**31 elements, before anything is allocated."""
    total = 1
    for dim in shape:
        if isinstance(dim, (int, np.integer)) and dim > 0:
            total *= int(dim)
    if total > MAX_TENSOR_ELEMENTS:
        raise TensorTooLargeError(
            f"{what} declares shape {list(shape)} ({total} elements), more than the "
            f"{MAX_TENSOR_ELEMENTS} elements per tensor the importer accepts")


def crop_of_negative_pads(shape: Sequence[int], widths: Sequence[tuple[int, int]]
                          ) -> tuple[list[int], list[int], list[tuple[int, int]]] | None:
    """Negative pads crop (ONNX Pad, torch's pad): the (begin, end) of the slice that
    removes them, taken before padding as onnxruntime does, and the (before, after)
    widths still to pad; None when no pad is negative."""
    if not any(b < 0 or a < 0 for b, a in widths):
        return None
    begin = [max(-b, 0) for b, _ in widths]
    end = [n - max(-a, 0) for n, (_, a) in zip(shape, widths)]
    if any(e < s for s, e in zip(begin, end)):
        raise ValueError(f"pads {list(widths)} crop more than the shape {list(shape)} holds")
    return begin, end, [(max(b, 0), max(a, 0)) for b, a in widths]


def unsupported_counts(op_types: Iterable[str], supported: Any) -> dict[str, int]:
    """Counts of the op types not in `supported` (anything with `__contains__`)."""
    counts: dict[str, int] = {}
    for op_type in op_types:
        if op_type not in supported:
            counts[op_type] = counts.get(op_type, 0) + 1
    return counts
