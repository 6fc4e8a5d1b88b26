"""Type inference: fill `checked_type` on every expression of a module or expression.

Iterative on dataflow and let chains (a 100,000-node chain needs no deep
recursion): each function body is walked with an explicit stack of actions.
Nodes that already carry a type are skipped, since nodes are immutable and a
node's type depends only on its sub-expressions, so re-running on a module that
a pass changed in one place types only the new nodes. A type error is a
`TypeInferenceError` naming the op, the argument, expected vs actual type and
the expression's span.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from engine.ir.errors import TypeInferenceError
from engine.ir.expr import (
    Call,
    Constant,
    Expr,
    Function,
    GlobalVar,
    If,
    Let,
    Tuple,
    TupleGetItem,
    Var,
    operands,
)
from engine.ir.module import IRModule
from engine.ir.op import Op
from engine.ir.type import (
    AnyDim,
    FuncType,
    IncompleteType,
    TensorType,
    TupleType,
    Type,
)
from engine.relay.op._typing import type_str
from engine.relay.op.op import TypeRelationError

_WALKED = (Call, Tuple, TupleGetItem, If)
"""Nodes whose operands are typed before them (a Let binds; a function is typed apart)."""

_VISIT, _BIND, _DONE = 0, 1, 2


def describe(expr: Expr) -> str:
    """How an error names an expression: its op and the source names of its span."""
    what = repr(expr)
    if isinstance(expr, Call) and isinstance(expr.op, Op):
        what = f"call to {expr.op.name}"
    elif isinstance(expr, Call) and isinstance(expr.op, GlobalVar):
        what = f"call to @{expr.op.name_hint}"
    names = expr.span.source_names() if expr.span else ()
    where = f" (span: {', '.join(names)})" if names else " (span: unknown)"
    return what + where


def _dims_compatible(a: object, b: object) -> bool:
    return isinstance(a, AnyDim) or isinstance(b, AnyDim) or a == b


def compatible(expected: Type, actual: Type) -> bool:
    """Equal types, where `?` dims and incomplete types match anything."""
    if isinstance(expected, IncompleteType) or isinstance(actual, IncompleteType):
        return True
    if isinstance(expected, TensorType) and isinstance(actual, TensorType):
        return (expected.dtype == actual.dtype and expected.ndim == actual.ndim
                and all(_dims_compatible(a, b) for a, b in zip(expected.shape, actual.shape)))
    if isinstance(expected, TupleType) and isinstance(actual, TupleType):
        return len(expected.fields) == len(actual.fields) and all(
            compatible(a, b) for a, b in zip(expected.fields, actual.fields))
    if isinstance(expected, FuncType) and isinstance(actual, FuncType):
        return len(expected.arg_types) == len(actual.arg_types) and all(
            compatible(a, b) for a, b in zip(expected.arg_types, actual.arg_types)) and \
            compatible(expected.ret_type, actual.ret_type)
    return expected == actual


def _more_specific(a: Type, b: Type) -> Type:
    if isinstance(a, TensorType) and isinstance(b, TensorType):
        return TensorType([y if isinstance(x, AnyDim) else x for x, y in zip(a.shape, b.shape)],
                          a.dtype)
    return b if isinstance(a, IncompleteType) else a


@dataclass
class TypeInferencer:
    """Infers types for the functions of one module (or a lone expression)."""

    mod: IRModule | None = None
    newly_typed: int = 0
    _in_progress: set[str] = field(default_factory=set)

    # --- entry points -----------------------------------------------------------------------
    def infer_module(self) -> None:
        assert self.mod is not None
        for gv, func in self.mod.items():
            self._global_type(gv, func)

    def infer(self, expr: Expr) -> Type:
        """Type `expr` and everything under it; returns its type."""
        if expr.has_type:
            return expr.checked_type
        stack: list[tuple[int, Expr]] = [(_VISIT, expr)]
        while stack:
            action, node = stack.pop()
            if action == _VISIT:
                if not node.has_type:
                    self._expand(node, stack)
            elif action == _BIND:
                self._bind_let(node)  # type: ignore[arg-type]
            else:
                self._set(node, self._finish(node))
        return expr.checked_type

    # --- the walk ---------------------------------------------------------------------------
    def _expand(self, node: Expr, stack: list[tuple[int, Expr]]) -> None:
        stack.append((_DONE, node))
        kids: Sequence[Expr] = ()
        if isinstance(node, Let):  # the value, then the var is bound, then the body
            stack.append((_VISIT, node.body))
            stack.append((_BIND, node))
            kids = (node.value,)
        elif isinstance(node, _WALKED):  # a call's callee is typed when the call is finished
            kids = operands(node)
        for kid in reversed(kids):
            stack.append((_VISIT, kid))

    def _set(self, node: Expr, ty: Type) -> None:
        node.set_checked_type(ty)
        self.newly_typed += 1

    def _finish(self, node: Expr) -> Type:
        return _FINISH[type(node)](self, node)

    # --- leaves -----------------------------------------------------------------------------
    def _var(self, var: Var) -> Type:
        if var.type_annotation is not None:
            return var.type_annotation
        raise TypeInferenceError(
            f"variable %{var.name_hint} has no type: annotate it (relay.var(name, shape=..., "
            f"dtype=...)) or bind it with let{self._where(var)}")

    def _constant(self, const: Constant) -> Type:
        data = const.data  # shape and dtype only: a lazy weight stays unread
        return TensorType(data.shape, data.dtype)

    def _op(self, op: Op) -> Type:
        n = max(op.num_inputs, 0)
        return FuncType([IncompleteType() for _ in range(n)], IncompleteType())

    def _global_var(self, gv: GlobalVar) -> Type:
        if self.mod is None or gv not in self.mod:
            raise TypeInferenceError(f"@{gv.name_hint} is not a function of the module")
        return self._global_type(self.mod.get_global_var(gv.name_hint), self.mod[gv])

    def _global_type(self, gv: GlobalVar, func: Function) -> Type:
        if func.has_type:
            ty = func.checked_type
        elif gv.name_hint in self._in_progress:
            ty = func.func_type_annotation
            if isinstance(ty, FuncType) and isinstance(ty.ret_type, IncompleteType):
                raise TypeInferenceError(
                    f"recursive function @{gv.name_hint} needs a return type annotation")
        else:
            self._in_progress.add(gv.name_hint)
            try:
                ty = self.infer(func)
            finally:
                self._in_progress.discard(gv.name_hint)
        if not gv.has_type or gv.checked_type != ty:
            self._set(gv, ty)
        return ty

    # --- compound nodes ---------------------------------------------------------------------
    def _function(self, func: Function, arg_types: list[Type] | None = None) -> Type:
        params = []
        for i, p in enumerate(func.params):
            if not p.has_type:
                ty = p.type_annotation
                if ty is None and arg_types is not None:
                    ty = arg_types[i]
                if ty is None:
                    self._var(p)
                self._set(p, ty)  # type: ignore[arg-type]
            params.append(p.checked_type)
        body = self.infer(func.body)
        if func.ret_type is not None and not compatible(func.ret_type, body):
            raise TypeInferenceError(
                f"function body has type {type_str(body)} but the function declares "
                f"{type_str(func.ret_type)}{self._where(func)}")
        return FuncType(params, body, func.type_params)

    def _bind_let(self, let: Let) -> None:
        value = let.value.checked_type
        var = let.var
        if var.type_annotation is not None and not compatible(var.type_annotation, value):
            raise TypeInferenceError(
                f"let %{var.name_hint}: annotated {type_str(var.type_annotation)} but bound to "
                f"a value of type {type_str(value)}{self._where(let)}")
        if not var.has_type:
            self._set(var, var.type_annotation or value)

    def _let(self, let: Let) -> Type:
        return let.body.checked_type

    def _if(self, ite: If) -> Type:
        cond = ite.cond.checked_type
        if not (isinstance(cond, TensorType) and cond.ndim == 0):
            raise TypeInferenceError(f"if condition must be a scalar, got {type_str(cond)}"
                                     f"{self._where(ite)}")
        then, other = ite.true_branch.checked_type, ite.false_branch.checked_type
        if not compatible(then, other):
            raise TypeInferenceError(
                f"if branches differ: then is {type_str(then)}, else is {type_str(other)}"
                f"{self._where(ite)}")
        return _more_specific(then, other)

    def _tuple(self, tup: Tuple) -> Type:
        return TupleType([f.checked_type for f in tup.fields])

    def _tuple_getitem(self, item: TupleGetItem) -> Type:
        ty = item.tuple_value.checked_type
        if not isinstance(ty, TupleType):
            raise TypeInferenceError(f"TupleGetItem.{item.index} on a non-tuple of type "
                                     f"{type_str(ty)}{self._where(item)}")
        if not -len(ty.fields) <= item.index < len(ty.fields):
            raise TypeInferenceError(f"tuple index {item.index} out of range for "
                                     f"{type_str(ty)}{self._where(item)}")
        return ty.fields[item.index]

    def _call(self, call: Call) -> Type:
        arg_types = [a.checked_type for a in call.args]
        if isinstance(call.op, Op):
            return self._op_call(call, call.op, arg_types)
        callee = call.op
        if isinstance(callee, Function) and not callee.has_type:
            self._set(callee, self._function(callee, arg_types))
        fn_ty = self.infer(callee)
        if not isinstance(fn_ty, FuncType):
            raise TypeInferenceError(f"calling a value of type {type_str(fn_ty)}, not a function"
                                     f"{self._where(call)}")
        self._check_args(call, fn_ty, arg_types)
        return fn_ty.ret_type

    def _check_args(self, call: Call, fn_ty: FuncType, arg_types: list[Type]) -> None:
        if len(fn_ty.arg_types) != len(arg_types):
            raise TypeInferenceError(f"{self._callee_name(call)} expects "
                                     f"{len(fn_ty.arg_types)} arguments, got {len(arg_types)}"
                                     f"{self._where(call)}")
        params: tuple[Var, ...] = ()
        if isinstance(call.op, Function):
            params = call.op.params
        elif isinstance(call.op, GlobalVar) and self.mod is not None and call.op in self.mod:
            params = self.mod[call.op].params
        for i, (want, got) in enumerate(zip(fn_ty.arg_types, arg_types)):
            if not compatible(want, got):
                name = params[i].name_hint if i < len(params) else f"#{i}"
                raise TypeInferenceError(
                    f"{self._callee_name(call)}, argument {name!r}: expected {type_str(want)}, "
                    f"got {type_str(got)}{self._where(call)}")

    def _op_call(self, call: Call, op: Op, arg_types: list[Type]) -> Type:
        if not op.has_type:
            op.set_checked_type(self._op(op))
        rel: Callable[..., Type] | None = op.get_attr("FTVMTypeRelation")
        if rel is None:
            raise TypeInferenceError(f"operator {op.name} has no type relation"
                                     f"{self._where(call)}")
        try:
            return rel(arg_types, call.attrs)
        except TypeRelationError as err:
            raise TypeInferenceError(f"{err}{self._where(call)}") from err

    @staticmethod
    def _callee_name(call: Call) -> str:
        if isinstance(call.op, GlobalVar):
            return f"call to @{call.op.name_hint}"
        if isinstance(call.op, Var):
            return f"call to %{call.op.name_hint}"
        return "call to a function"

    @staticmethod
    def _where(expr: Expr) -> str:
        return f", in {describe(expr)}"


_FINISH: dict[type, Callable[[TypeInferencer, Expr], Type]] = {
    Var: TypeInferencer._var,  # type: ignore[dict-item]
    GlobalVar: TypeInferencer._global_var,  # type: ignore[dict-item]
    Constant: TypeInferencer._constant,  # type: ignore[dict-item]
    Op: TypeInferencer._op,  # type: ignore[dict-item]
    Call: TypeInferencer._call,  # type: ignore[dict-item]
    Tuple: TypeInferencer._tuple,  # type: ignore[dict-item]
    TupleGetItem: TypeInferencer._tuple_getitem,  # type: ignore[dict-item]
    Let: TypeInferencer._let,  # type: ignore[dict-item]
    If: TypeInferencer._if,  # type: ignore[dict-item]
    Function: TypeInferencer._function,  # type: ignore[dict-item]
}


def infer_type(mod_or_expr: IRModule | Expr, mod: IRModule | None = None) -> IRModule | Expr:
    """Fill `checked_type` everywhere.

    For a module: returns the same module when every node already had a type,
    otherwise a shallow copy holding the same function objects (types are set
    in place). For an expression: returns the expression itself, typed.
    """
    if isinstance(mod_or_expr, IRModule):
        inferencer = TypeInferencer(mod_or_expr)
        inferencer.infer_module()
        return mod_or_expr if inferencer.newly_typed == 0 else mod_or_expr.shallow_copy()
    TypeInferencer(mod).infer(mod_or_expr)
    return mod_or_expr


__all__ = ["TypeInferencer", "compatible", "describe", "infer_type"]
