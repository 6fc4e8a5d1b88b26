"""TIR text: a readable loop nest whose every line knows the statement it shows.

    primfn main(A: float32[64, 64], B: float32[64, 64], C: float32[64, 64]) {
      for (i.outer: int32, 0, 2) "parallel" {
        C[i.outer*32 + i.inner, j] = 0f32
        ...

`func_lines` gives `Line(text, indent, origin)` records (the explorer highlights
the stage and iter var of a clicked line); `func_text` joins them. Two distinct
Vars with one name print as `i` and `i_1`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from engine.tir import expr as E
from engine.tir import stmt as S
from engine.tir.text import register_printer

_PREC_ATOM = 9
_PRECEDENCE: dict[type, int] = {
    E.Or: 1, E.And: 2, E.LT: 4, E.LE: 4, E.GT: 4, E.GE: 4, E.EQ: 4, E.NE: 4,
    E.Add: 5, E.Sub: 5, E.Mul: 6, E.Div: 6, E.FloorDiv: 6, E.FloorMod: 6,
}
_FUNCTION_STYLE = {E.Min: "min", E.Max: "max", E.Mod: "truncmod"}


class Namer:
    """Unique display names for Vars and Buffers within one function."""

    def __init__(self) -> None:
        self._names: dict[int, str] = {}
        self._used: set[str] = set()
        self._keep: list[Any] = []  # keep named objects alive so ids stay unique

    def __call__(self, obj: Any, base: str) -> str:
        name = self._names.get(id(obj))
        if name is not None:
            return name
        name, count = base, 0
        while name in self._used:
            count += 1
            name = f"{base}_{count}"
        self._used.add(name)
        self._names[id(obj)] = name
        self._keep.append(obj)
        return name


def _float_text(value: float, dtype: str) -> str:
    if not math.isfinite(value):
        body = "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    elif value == int(value) and abs(value) < 1e15:
        body = str(int(value))
    else:
        body = repr(value)
    return f"{body}f{dtype.removeprefix('float') or '32'}"


class ExprPrinter:
    def __init__(self, namer: Namer | None = None) -> None:
        self.namer = namer or Namer()
        self._table: dict[type, Callable[[Any], tuple[str, int]]] = {
            E.Var: self._var, E.SizeVar: self._var, E.IntImm: self._int,
            E.FloatImm: self._float, E.StringImm: lambda e: (repr(e.value), _PREC_ATOM),
            E.Not: lambda e: ("!" + self._wrap(e.a, 8), 8),
            E.Select: lambda e: (self._call("select", e.condition, e.true_value,
                                            e.false_value), _PREC_ATOM),
            E.Cast: lambda e: (f"{e.dtype}({self.text(e.value)})", _PREC_ATOM),
            E.Call: lambda e: (self._call(e.op, *e.args), _PREC_ATOM),
            E.Let: self._let, E.BufferLoad: self._buffer_load,
            E.ProducerLoad: self._producer_load, E.Reduce: self._reduce,
        }

    def text(self, e: E.PrimExpr) -> str:
        return self._render(e)[0]

    def _render(self, e: E.PrimExpr) -> tuple[str, int]:
        handler = self._table.get(type(e))
        if handler is not None:
            return handler(e)
        if isinstance(e, E.BinaryOpExpr):
            return self._binary(e)
        raise TypeError(f"no printer for {type(e).__name__}")

    def _wrap(self, e: E.PrimExpr, min_prec: int) -> str:
        text, prec = self._render(e)
        return f"({text})" if prec < min_prec else text

    def _var(self, e: E.Var) -> tuple[str, int]:
        return self.namer(e, e.name), _PREC_ATOM

    def _int(self, e: E.IntImm) -> tuple[str, int]:
        if e.dtype == "bool":
            return ("True" if e.value else "False"), _PREC_ATOM
        return str(e.value), (_PREC_ATOM if e.value >= 0 else 7)

    def _float(self, e: E.FloatImm) -> tuple[str, int]:
        return _float_text(e.value, e.dtype), _PREC_ATOM

    def _binary(self, e: E.BinaryOpExpr) -> tuple[str, int]:
        name = _FUNCTION_STYLE.get(type(e))
        if name is not None:
            return self._call(name, e.a, e.b), _PREC_ATOM
        prec = _PRECEDENCE[type(e)]
        right_prec = prec + 1  # left-associative: a - (b - c) keeps its parentheses
        sep = "" if prec == _PRECEDENCE[E.Mul] else " "  # i.outer*32 + i.inner
        return f"{self._wrap(e.a, prec)}{sep}{e.symbol}{sep}{self._wrap(e.b, right_prec)}", prec

    def _call(self, name: str, *args: E.PrimExpr) -> str:
        return f"{name}({', '.join(self.text(a) for a in args)})"

    def _let(self, e: E.Let) -> tuple[str, int]:
        return (f"let {self.text(e.var)} = {self.text(e.value)} in {self.text(e.body)}", 0)

    def _buffer_load(self, e: E.BufferLoad) -> tuple[str, int]:
        name = self.namer(e.buffer, e.buffer.name)
        return f"{name}[{', '.join(self.text(i) for i in e.indices)}]", _PREC_ATOM

    def _producer_load(self, e: E.ProducerLoad) -> tuple[str, int]:
        return f"{e.producer.name}[{', '.join(self.text(i) for i in e.indices)}]", _PREC_ATOM

    def _reduce(self, e: E.Reduce) -> tuple[str, int]:
        axes = ", ".join(self.text(iv.var) for iv in e.axis)
        where = "" if E.const_value(e.condition) == 1 else f", where={self.text(e.condition)}"
        source = self.text(e.source[e.value_index])
        return f"{e.combiner.name}({source}, axis=[{axes}]{where})", _PREC_ATOM


@dataclass(frozen=True, slots=True)
class Line:
    """One printed line: its text (without indentation), depth and origin."""

    text: str
    indent: int
    origin: S.Origin = S.NO_ORIGIN

    def __str__(self) -> str:
        return "  " * self.indent + self.text


class StmtPrinter:
    def __init__(self) -> None:
        self.exprs = ExprPrinter()
        self.lines: list[Line] = []
        self._table: dict[type, Callable[[Any, int], None]] = {
            S.For: self._for, S.BufferStore: self._store, S.Allocate: self._allocate,
            S.IfThenElse: self._if, S.LetStmt: self._let, S.Evaluate: self._evaluate,
            S.SeqStmt: self._seq,
        }

    def e(self, expr: E.PrimExpr) -> str:
        return self.exprs.text(expr)

    def emit(self, text: str, indent: int, origin: S.Origin = S.NO_ORIGIN) -> None:
        self.lines.append(Line(text, indent, origin))

    def stmt(self, s: S.Stmt, indent: int) -> None:
        self._table[type(s)](s, indent)

    def _for(self, s: S.For, indent: int) -> None:
        kind = ""
        if s.kind is S.ForKind.THREAD_BINDING:
            kind = f' "thread_binding({s.thread_tag})"'
        elif s.kind is not S.ForKind.SERIAL:
            kind = f' "{s.kind.value}"'
        notes = "".join(f' "pragma_{k}={v}"' for k, v in s.annotations)
        var = f"{self.e(s.loop_var)}: {s.loop_var.dtype}"
        head = f"for ({var}, {self.e(s.min)}, {self.e(s.extent)})"
        self.emit(f"{head}{kind}{notes} {{", indent, s.origin)
        self.stmt(s.body, indent + 1)
        self.emit("}", indent, s.origin)

    def _store(self, s: S.BufferStore, indent: int) -> None:
        name = self.exprs.namer(s.buffer, s.buffer.name)
        index = ", ".join(self.e(i) for i in s.indices)
        self.emit(f"{name}[{index}] = {self.e(s.value)}", indent, s.origin)

    def _allocate(self, s: S.Allocate, indent: int) -> None:
        b = s.buffer
        name = self.exprs.namer(b, b.name)
        shape = ", ".join(self.e(d) for d in b.shape)
        self.emit(f'allocate {name}: {b.dtype}[{shape}], "{b.scope}" {{', indent, s.origin)
        self.stmt(s.body, indent + 1)
        self.emit("}", indent, s.origin)

    def _if(self, s: S.IfThenElse, indent: int) -> None:
        self.emit(f"if ({self.e(s.condition)}) {{", indent, s.origin)
        self.stmt(s.then_case, indent + 1)
        if s.else_case is not None:
            self.emit("} else {", indent, s.origin)
            self.stmt(s.else_case, indent + 1)
        self.emit("}", indent, s.origin)

    def _let(self, s: S.LetStmt, indent: int) -> None:
        self.emit(f"let {self.e(s.var)}: {s.var.dtype} = {self.e(s.value)}", indent, s.origin)
        self.stmt(s.body, indent)

    def _evaluate(self, s: S.Evaluate, indent: int) -> None:
        self.emit(f"evaluate({self.e(s.value)})", indent, s.origin)

    def _seq(self, s: S.SeqStmt, indent: int) -> None:
        for item in s.seq:
            self.stmt(item, indent)


def expr_text(e: E.PrimExpr) -> str:
    return ExprPrinter().text(e)


def stmt_text(s: S.Stmt) -> str:
    printer = StmtPrinter()
    printer.stmt(s, 0)
    return "\n".join(str(line) for line in printer.lines)


def func_lines(f: S.PrimFunc) -> list[Line]:
    printer = StmtPrinter()
    namer = printer.exprs.namer
    params = []
    for b in f.params:
        shape = ", ".join(printer.e(d) for d in b.shape)
        params.append(f"{namer(b, b.name)}: {b.dtype}[{shape}]")
    printer.emit(f"primfn {f.name}({', '.join(params)}) {{", 0)
    printer.stmt(f.body, 1)
    printer.emit("}", 0)
    return printer.lines


def func_text(f: S.PrimFunc) -> str:
    return "\n".join(str(line) for line in func_lines(f))


register_printer(expr_text, stmt_text, func_text, func_lines)
