"""`*WithFields`: copy a node with some fields changed, keeping span and identity when
nothing changed (TVM's `relay.expr.CallWithFields` and friends)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from engine.ir.expr import Call, Expr, Function, If, Let, Tuple, TupleGetItem, Var


def _with_fields(node: Expr, **fields: Any) -> Any:
    changed = {k: v for k, v in fields.items() if v is not None and getattr(node, k) is not v}
    for key in ("args", "fields", "params", "type_args"):
        if key in changed and tuple(changed[key]) == tuple(getattr(node, key)) and all(
                a is b for a, b in zip(changed[key], getattr(node, key))):
            del changed[key]
    if not changed:
        return node
    for key in ("args", "fields", "params", "type_args"):
        if key in changed:
            changed[key] = tuple(changed[key])
    return replace(node, **changed)


def CallWithFields(call: Call, op: Expr | None = None, args: Any = None, attrs: Any = None,
                   type_args: Any = None, span: Any = None) -> Call:
    return _with_fields(call, op=op, args=args, attrs=attrs, type_args=type_args, span=span)


def TupleWithFields(tup: Tuple, fields: Any = None, span: Any = None) -> Tuple:
    return _with_fields(tup, fields=fields, span=span)


def TupleGetItemWithFields(item: TupleGetItem, tuple_value: Expr | None = None,
                           index: int | None = None, span: Any = None) -> TupleGetItem:
    return _with_fields(item, tuple_value=tuple_value, index=index, span=span)


def LetWithFields(let: Let, var: Var | None = None, value: Expr | None = None,
                  body: Expr | None = None, span: Any = None) -> Let:
    return _with_fields(let, var=var, value=value, body=body, span=span)


def IfWithFields(ite: If, cond: Expr | None = None, true_branch: Expr | None = None,
                 false_branch: Expr | None = None, span: Any = None) -> If:
    return _with_fields(ite, cond=cond, true_branch=true_branch, false_branch=false_branch,
                        span=span)


def FunctionWithFields(func: Function, params: Any = None, body: Expr | None = None,
                       ret_type: Any = None, type_params: Any = None, attrs: Any = None,
                       span: Any = None) -> Function:
    return _with_fields(func, params=params, body=body, ret_type=ret_type,
                        type_params=type_params, attrs=attrs, span=span)


def VarWithFields(var: Var, name_hint: str | None = None, type_annotation: Any = None,
                  span: Any = None) -> Var:
    return _with_fields(var, name_hint=name_hint, type_annotation=type_annotation, span=span)
