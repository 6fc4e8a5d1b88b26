"""The layout rewriting shared by ConvertLayout and AlterOpLayout (TVM's transform_layout.h).

Walking producers first, each op call is asked (FInferCorrectLayout, see
engine/relay/op/layout_infer.py) which layouts it wants; a `LayoutMemorizer`
then lets the pass change the call (ConvertLayout: the desired layouts;
AlterOpLayout: the op's `FTVMAlterOpLayout`), the changed call is asked
again, and a `layout_transform` is inserted on every input whose layout is
not the one wanted. The result is kept in its new layout while consumers can
follow it (elementwise, broadcast, pooling, concat, reductions...); a
consumer that cannot, and the function's result, get it transformed back.

A transform is built once per (value, src, dst) and a transform of a
transform back to the original layout is the original. Inserted transforms
carry the span of the call that needed them (an input) or produced the value
(a result going back).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from engine.ir.attrs import Attrs
from engine.ir.expr import Call, Expr, Function, Tuple
from engine.ir.op import Op
from engine.ir.span import SpanLike
from engine.ir.type import TensorType, TupleType, Type
from engine.relay.expr_functor import ExprMutator
from engine.relay.op.layout_infer import expand_primal, infer_correct_layout, primal
from engine.relay.si_builder import SIBuilder
from engine.relay.transform._rewrite import op_name


@dataclass(frozen=True, slots=True, eq=False)
class LayoutInfo:
    """A value computed in layout `new` that stands for one in layout `old`."""

    value: Expr
    old: str | None
    new: str | None


class LayoutMemorizer:
    """Builds the layout transforms; subclasses decide how a call changes layout."""

    def __init__(self) -> None:
        self.memo: dict[tuple[int, str, str], Expr] = {}
        self.changed_calls = 0  # calls the memorizer changed (op, attrs or arguments)

    def call_with_new_layouts(self, ref_call: Call, attrs: Attrs, args: tuple[Expr, ...],
                              types: list[Type]) -> Call:
        """The call the op becomes (by default: the same op, new args and attrs)."""
        return replace(ref_call, args=args, attrs=attrs)

    def transform(self, value: Expr, src: str | None, dst: str | None, span: SpanLike) -> Expr:
        """`value` (in layout `src`) in layout `dst`."""
        import engine.relay as relay

        if src is None or dst is None or src == dst or not src:
            return value
        if isinstance(value, Call) and op_name(value) == "layout_transform" \
                and value.attrs.dst_layout == src and value.attrs.src_layout == dst:
            return value.args[0]
        key = (id(value), src, dst)
        found = self.memo.get(key)
        if found is not None:
            return found
        out = value
        missing = len(primal(dst)) - len(primal(src))
        if missing > 0:
            out = relay.expand_dims(out, 0, missing)
            src = expand_primal(src, dst)
        if src != dst:
            out = relay.layout_transform(out, src, dst)
        out = SIBuilder(span).RecursivelyFillSpan(out, [value])
        self.memo[key] = out  # `out` holds `value`, so the id stays valid
        return out


def _flat_types(call: Call) -> list[Type]:
    out: list[Type] = []
    for arg in call.args:
        ty = arg.checked_type
        out.extend(ty.fields if isinstance(ty, TupleType) else [ty])
    return out


class LayoutRewriter(ExprMutator):
    """Rewrites a function body through a memorizer (see the module docstring)."""

    def __init__(self, memorizer: LayoutMemorizer) -> None:
        super().__init__()
        self.memorizer = memorizer
        self.info: dict[Expr, LayoutInfo] = {}

    def visit_function(self, fn: Function) -> Expr:
        return fn if fn.is_primitive() else super().visit_function(fn)

    def visit_call(self, call: Call) -> Expr:
        rewritten = self._rewrite(call) if isinstance(call.op, Op) else None
        if rewritten is None:
            return super().visit_call(call)
        value, old, new = rewritten
        realized = self.memorizer.transform(value, new, old, call.span)
        self.info[realized] = LayoutInfo(value, old, new)
        return realized

    # --- one call ---------------------------------------------------------------------------
    def _input(self, pre: Expr) -> LayoutInfo:
        post = self.visit(pre)
        return self.info.get(post) or LayoutInfo(post, None, None)

    def _inputs(self, call: Call) -> tuple[list[LayoutInfo], list[Any]]:
        """Flattened inputs, and the argument structure (a LayoutInfo or a Tuple of them)."""
        flat: list[LayoutInfo] = []
        shape: list[Any] = []
        for arg in call.args:
            if isinstance(arg, Tuple):
                fields = [self._input(f) for f in arg.fields]
                flat.extend(fields)
                shape.append((arg, len(fields)))
            else:
                flat.append(self._input(arg))
                shape.append(None)
        return flat, shape

    @staticmethod
    def _rebuild(shape: list[Any], flat: list[Expr]) -> tuple[Expr, ...]:
        args: list[Expr] = []
        pos = 0
        for entry in shape:
            if entry is None:
                args.append(flat[pos])
                pos += 1
                continue
            tup, count = entry
            fields = tuple(flat[pos:pos + count])
            pos += count
            same = all(a is b for a, b in zip(fields, tup.fields))
            args.append(tup if same else replace(tup, fields=fields))
        return tuple(args)

    def _rewrite(self, call: Call) -> tuple[Expr, str | None, str | None] | None:
        if not call.has_type or not isinstance(call.checked_type, TensorType):
            return None
        inputs, shape = self._inputs(call)
        types = _flat_types(call)
        old_ins = [i.old for i in inputs]
        first = infer_correct_layout(call, None, old_ins, types)
        if first is None:
            return None
        new_ins = [i.new if i.new is not None else o for i, o in zip(inputs, first.inputs)]
        args = self._rebuild(shape, [i.value for i in inputs])
        new_call = self.memorizer.call_with_new_layouts(call, first.attrs, args, types)
        second = infer_correct_layout(new_call, new_ins, first.inputs, types)
        if second is None or len(second.inputs) != len(inputs):
            return None
        values = [f for a in new_call.args for f in (a.fields if isinstance(a, Tuple) else (a,))]
        moved = [self.memorizer.transform(value, src, dst, call.span)
                 for value, src, dst in zip(values, new_ins, second.inputs)]
        final_args = self._rebuild(shape, moved)
        outs = first.outputs[0], second.outputs[0]
        if new_call.op is call.op and second.attrs == call.attrs \
                and all(a is b for a, b in zip(final_args, call.args)):
            return call, *outs  # nothing to change here
        return replace(new_call, args=final_args, attrs=second.attrs), *outs


def count_transforms(func: Function) -> int:
    """How many layout_transform calls `func` computes."""
    from engine.relay.expr_functor import post_order_visit

    found: list[Expr] = []
    post_order_visit(func.body, lambda e: found.append(e)
                     if op_name(e) == "layout_transform" else None)
    return len(found)


def rewrite_layouts(func: Function, memorizer: LayoutMemorizer) -> Function:
    """`func` with its body rewritten; its signature and result layout are unchanged."""
    body = LayoutRewriter(memorizer).visit(func.body)
    return func if body is func.body else replace(func, body=body)


__all__ = ["LayoutInfo", "LayoutMemorizer", "LayoutRewriter", "count_transforms",
           "rewrite_layouts"]
