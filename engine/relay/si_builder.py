"""SIBuilder: build the source information of rewritten expressions (TVM's SIBuilder,
from the span-filling RFC).

A pass that replaces a subgraph by a new one keeps the sources of what it
replaced::

    sib = SIBuilder(old_entry, old_inputs)     # collect the old subgraph's spans
    new_entry = sib.fill(new_entry, new_inputs)  # give them to the new subgraph

Construction:

- `SIBuilder(span)`: that span; `SIBuilder([spans])`: their merge (a
  SequentialSpan, flattened, without repeats; one span stays a Span);
- `SIBuilder(entry, inputs)`: the spans of the subgraph from `entry` down to
  `inputs`, in depth-first pre-order (entry first, children in evaluation
  order), each node once; the inputs' own spans are included, nothing below
  an input is visited;
- `SIBuilder()`: the unknown span.

`CreateSpan()` returns that span. `RecursivelyFillSpan(entry, inputs)` (alias
`fill`) returns `entry` rebuilt so that every expression between it and the
inputs carries the span. Nodes are immutable, so "filling" rebuilds what
changes (keeping checked types) and returns the new entry; sharing in the DAG
is kept, and an entry that already carries the span everywhere comes back as
the same object. Never filled: the inputs and everything below them; `Op`,
`GlobalVar` and `Var` nodes (their identity is what they mean); with
`overwrite=False`, expressions that already have a known span, and everything
below them (as a frontend's span filler stops at an earlier layer's output).
Filling with the unknown span does nothing.

With the PassContext config `ir.enable_si_builder=False` (read when the builder
is made), `CreateSpan()` is the unknown span and filling does nothing.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from engine.ir.expr import Expr, GlobalVar, Let, Var, children
from engine.ir.op import Op
from engine.ir.span import UNKNOWN_SPAN, SequentialSpan, Span, SpanLike, merge_spans
from engine.relay.expr_functor import ExprMutator
from engine.transform.context import PassContext

_NEVER_FILLED = (Var, GlobalVar, Op)


def _as_inputs(inputs: Expr | Iterable[Expr] | None) -> set[Expr]:
    if inputs is None:
        return set()
    if isinstance(inputs, Expr):
        return {inputs}
    out = set(inputs)
    for item in out:
        if not isinstance(item, Expr):
            raise TypeError(f"SIBuilder inputs must be expressions, got {item!r}")
    return out


def _walk(entry: Expr, stop: set[Expr]) -> list[Expr]:
    """Nodes from `entry` in depth-first pre-order, each once; `stop` nodes are listed
    but not entered. Iterative, so any depth is fine."""
    order: list[Expr] = []
    seen: set[int] = set()
    stack = [entry]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        order.append(node)
        if node not in stop:
            stack.extend(reversed(children(node)))
    return order


def collect_spans(entry: Expr, inputs: Expr | Iterable[Expr] | None = None) -> SpanLike:
    """The merged spans of the subgraph from `entry` down to (and including) `inputs`."""
    return merge_spans(node.span for node in _walk(entry, _as_inputs(inputs)))


def _spanned_region_boundary(entry: Expr, inputs: set[Expr]) -> set[Expr]:
    """Inputs plus the nodes with a known span reachable before an input (kept as is)."""
    boundary = set(inputs)
    seen: set[int] = set()
    stack = [entry]
    while stack:
        node = stack.pop()
        if id(node) in seen or node in inputs:
            continue
        seen.add(id(node))
        if node.span and not isinstance(node, _NEVER_FILLED):
            boundary.add(node)
            continue
        stack.extend(children(node))
    return boundary


class _SpanFiller(ExprMutator):
    """Rebuilds the region above the boundary with `span` on every fillable node."""

    def __init__(self, span: SpanLike, boundary: set[Expr]) -> None:
        super().__init__()
        self.span = span
        for node in boundary:
            self.memo_map[node] = node

    def _dispatch(self, expr: Expr) -> Any:
        return self._spanned(expr, super()._dispatch(expr))

    def _spanned(self, old: Expr, new: Expr) -> Expr:
        if isinstance(old, _NEVER_FILLED):
            return new
        if new.span != self.span:
            new = replace(new, span=self.span)
        if new is not old and old.has_type and not new.has_type:
            new.set_checked_type(old.checked_type)
        return new

    def visit_let(self, let: Let) -> Expr:
        # Iterative over let chains (as ExprMutator's), with every let of the chain filled.
        chain: list[tuple[Let, Var, Expr]] = []
        node: Expr = let
        while isinstance(node, Let) and node not in self.memo_map:
            chain.append((node, self.visit(node.var), self.visit(node.value)))
            node = node.body
        body = self.visit(node)
        for old, var, value in reversed(chain):
            new: Expr = old
            if var is not old.var or value is not old.value or body is not old.body:
                new = replace(old, var=var, value=value, body=body)
            body = self._spanned(old, new)
            self.memo_map[old] = body
        return body


class SIBuilder:
    """Collects a span (from spans or a subgraph) and fills it into rewritten expressions."""

    def __init__(self, source: SpanLike | Iterable[SpanLike] | Expr | None = None,
                 inputs: Expr | Iterable[Expr] | None = None) -> None:
        ctx = PassContext.current()
        self.enabled: bool = bool(ctx.get_config("ir.enable_si_builder"))
        self._span: SpanLike = self._resolve(source, inputs) if self.enabled else UNKNOWN_SPAN

    @staticmethod
    def _resolve(source: Any, inputs: Any) -> SpanLike:
        if isinstance(source, Expr):
            return collect_spans(source, inputs)
        if inputs is not None:
            raise TypeError("SIBuilder(entry, inputs) needs an expression as entry, "
                            f"got {source!r}")
        if source is None:
            return UNKNOWN_SPAN
        if isinstance(source, (Span, SequentialSpan)):
            return source
        spans = list(source)
        for span in spans:
            if not isinstance(span, (Span, SequentialSpan)):
                raise TypeError(f"SIBuilder([spans]) takes spans, got {span!r}")
        return merge_spans(spans)

    def CreateSpan(self) -> SpanLike:
        """The collected span (the unknown span when the builder is disabled)."""
        return self._span

    create_span = Build = build = CreateSpan

    def RecursivelyFillSpan(self, entry: Expr,
                            inputs: Expr | Iterable[Expr] | None = None, *,
                            overwrite: bool = True) -> Expr:
        """`entry` rebuilt with the span on every expression down to `inputs`."""
        if not self.enabled or not self._span:
            return entry
        stops = _as_inputs(inputs)
        boundary = stops if overwrite else _spanned_region_boundary(entry, stops)
        return _SpanFiller(self._span, boundary).visit(entry)

    recursively_fill_span = fill = RecursivelyFillSpan

    def __repr__(self) -> str:
        return f"SIBuilder({self._span!r})"
