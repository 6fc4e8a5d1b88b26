"""FoldConstant: evaluate what only depends on constants (TVM's `relay.transform.FoldConstant`).

- a call to a primitive op whose arguments are all constants (or tuples of constants)
  is evaluated through the interpreter and replaced by the result; the constant
  carries the spans of the call and of the constants it consumed;
- skipped: zero-argument calls, `zeros_like` / `ones_like` / `full_like` / `full`
  (folding them only materialises big tensors), `nn.dropout` (left for
  SimplifyInference, as TVM's FoldConstant leaves it), stateful ops
  (`TOpIsStateful`), calls inside `Primitive` functions;
- `shape_of` / `ndarray_size` of a statically shaped tensor become constants;
- let-bound constants are propagated into the body and the binding dropped;
- `TupleGetItem` of a `Tuple` is the field;
- `If` with a constant condition is the taken branch, which gets
  `SequentialSpan([branch.span, if.span])`.

Weights that are not in memory (memory-mapped, or themselves deferred: see
engine/runtime/lazy.py) are folded without reading them: a call with such an argument
becomes a constant of the call's type whose value is the same evaluation, run when its
bytes are asked for (the numerics check, the executor), so a pipeline over 13 GB of
weights (a transposed or re-laid-out weight, a weight times a folded scale) reads none.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import replace

import numpy as np

from engine.ir.expr import Call, Constant, Expr, Function, If, Let, Tuple, TupleGetItem, Var
from engine.ir.module import IRModule
from engine.ir.op import Op
from engine.ir.type import TensorType
from engine.relay.expr_functor import ExprMutator
from engine.relay.interpreter import Interpreter
from engine.relay.si_builder import SIBuilder
from engine.relay.transform._rewrite import copy_type, merged_span, static_shape, with_span
from engine.relay.transform.pass_infra import function_pass
from engine.relay.type_infer import TypeInferencer
from engine.runtime.lazy import LazySource, deferred
from engine.runtime.ndarray import NDArray
from engine.transform import Pass, PassContext, allow_rewrite, register_pass

NOT_FOLDED = frozenset({"zeros_like", "ones_like", "full_like", "full", "nn.dropout"})
"""Ops never evaluated even with constant inputs (as TVM's FoldConstant)."""


def _is_constant_arg(expr: Expr) -> bool:
    if isinstance(expr, Constant):
        return True
    return isinstance(expr, Tuple) and all(_is_constant_arg(f) for f in expr.fields)


def _is_lazy_arg(expr: Expr) -> bool:
    if isinstance(expr, Constant):
        return expr.data.lazy is not None
    return isinstance(expr, Tuple) and any(_is_lazy_arg(f) for f in expr.fields)


def _arg_key(expr: Expr) -> Hashable:
    if isinstance(expr, Constant):
        return expr.data.content_key()
    return tuple(_arg_key(f) for f in expr.fields)  # type: ignore[attr-defined]


def _deferred_value(call: Call) -> LazySource | None:
    """The call's value as a deferred computation (its type from type inference), or
    None when its type is not a statically shaped tensor."""
    ty = TypeInferencer().infer(call)
    if not isinstance(ty, TensorType) or not ty.is_static:
        return None
    key = ("fold", call.op.name, hash(call.attrs), tuple(_arg_key(a) for a in call.args))  # type: ignore[attr-defined]

    def compute() -> np.ndarray:
        return np.asarray(Interpreter().eval(call, {}), dtype=ty.dtype)

    return deferred(tuple(ty.concrete_shape), ty.dtype, key, compute)


def _to_expr(value: object) -> Expr:
    """An interpreter value as a constant (a tuple value as a Tuple of constants)."""
    if isinstance(value, tuple):
        return Tuple(tuple(_to_expr(v) for v in value))
    if isinstance(value, LazySource):
        return Constant(NDArray(value))
    return Constant(NDArray(_constant_array(value)))


def _constant_array(value: object) -> np.ndarray:
    """The folded value without copying it (NDArray freezes a read-only view); scalars keep
    rank 0. A small view into a much bigger array (a slice of an embedding table) is
    copied, so that the folded constant does not keep the whole base alive."""
    array = np.asarray(value)
    base = array.base
    if isinstance(base, np.ndarray) and base.nbytes > 2 * max(array.nbytes, 1 << 16):
        return array.copy()
    return array


class ConstantFolder(ExprMutator):
    """The folding mutator; `folded` counts the expressions it replaced."""

    def __init__(self, mod: IRModule | None = None, fold_qnn: bool = False) -> None:
        super().__init__()
        self.interpreter = Interpreter(mod)
        self.fold_qnn = fold_qnn
        self.folded = 0

    # --- calls ------------------------------------------------------------------------------
    def visit_call(self, call: Call) -> Expr:
        post = super().visit_call(call)
        if not isinstance(post, Call) or not isinstance(post.op, Op) or not post.args:
            return post
        shape = self._fold_shape(call, post)
        if shape is not None:
            return shape
        if not self._foldable(post.op) or not all(_is_constant_arg(a) for a in post.args) \
                or not allow_rewrite(call):
            return post
        return self._evaluate(post)

    def _foldable(self, op: Op) -> bool:
        if op.name in NOT_FOLDED or op.get_attr("TOpIsStateful"):
            return False
        if op.name.startswith("qnn.") and not self.fold_qnn:
            return False
        return op.get_attr("FNumpyCompute") is not None

    def _fold_shape(self, pre: Call, post: Call) -> Expr | None:
        name = pre.op.name  # type: ignore[attr-defined]
        if name not in ("shape_of", "ndarray_size"):
            return None
        shape = static_shape(pre.args[0])
        if shape is None:
            shape = static_shape(post.args[0])
        if shape is None or not allow_rewrite(pre):
            return None
        dtype = str(post.attrs.get("dtype", "int32") or "int32")
        value = np.array(shape if name == "shape_of" else int(np.prod(shape)), dtype=dtype)
        self.folded += 1
        # The input's value is not consumed (only its type): the constant is the call's.
        return Constant(NDArray(value), span=SIBuilder(post.span).CreateSpan())

    def _evaluate(self, call: Call) -> Expr:
        if any(_is_lazy_arg(a) for a in call.args):
            value: object = _deferred_value(call)
            if value is None:
                return call  # not a tensor of static type: left for run time
        else:
            value = self.interpreter.eval(call, {})
        span = SIBuilder(call).CreateSpan()  # the call and every constant it consumed
        self.folded += 1
        return SIBuilder(span).RecursivelyFillSpan(_to_expr(value))

    # --- structure --------------------------------------------------------------------------
    def visit_tuple_getitem(self, item: TupleGetItem) -> Expr:
        post = super().visit_tuple_getitem(item)
        if isinstance(post, TupleGetItem) and isinstance(post.tuple_value, Tuple) \
                and allow_rewrite(item):
            self.folded += 1
            return post.tuple_value.fields[post.index]
        return post

    def visit_if(self, ite: If) -> Expr:
        post = super().visit_if(ite)
        if not isinstance(post, If) or not isinstance(post.cond, Constant) \
                or not allow_rewrite(ite):
            return post
        taken = post.true_branch if bool(post.cond.data.numpy().reshape(-1)[0]) \
            else post.false_branch
        self.folded += 1
        return with_span(taken, merged_span([taken, post]))

    def visit_let(self, let: Let) -> Expr:
        # Walk the chain in a loop: constant bindings are substituted, others rebuilt.
        chain: list[tuple[Let, Var, Expr]] = []
        node: Expr = let
        while isinstance(node, Let) and node not in self.memo_map:
            value = self.visit(node.value)
            if isinstance(value, Constant) and allow_rewrite(node):
                self.memo_map[node.var] = value
                self.folded += 1
            else:
                chain.append((node, self.visit(node.var), value))
            node = node.body
        body = self.visit(node)
        for old, var, value in reversed(chain):
            if var is not old.var or value is not old.value or body is not old.body:
                body = copy_type(replace(old, var=var, value=value, body=body), old)
            else:
                body = old
        return body

    def visit_function(self, fn: Function) -> Expr:
        if fn.is_primitive():
            return fn  # the body of a fused kernel is left alone
        return super().visit_function(fn)


def fold_constant(expr: Expr, mod: IRModule | None = None, fold_qnn: bool = False) -> Expr:
    """Fold the constants of an expression (TVM's `relay.transform.fold_constant`)."""
    if isinstance(expr, Function):
        body = ConstantFolder(mod, fold_qnn).visit(expr.body)
        return expr if body is expr.body else replace(expr, body=body)
    return ConstantFolder(mod, fold_qnn).visit(expr)


@register_pass
def FoldConstant(fold_qnn: bool = False) -> Pass:  # TVM's name
    """Fold every subexpression that only depends on constants."""

    def transform(func: Function, mod: IRModule, ctx: PassContext) -> Function:
        result = fold_constant(func, mod, fold_qnn)
        assert isinstance(result, Function)
        return result

    return function_pass(transform, opt_level=2)


__all__ = ["NOT_FOLDED", "ConstantFolder", "FoldConstant", "fold_constant"]
