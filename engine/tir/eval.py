"""A loop-nest evaluator: runs a PrimFunc on numpy arrays.

The PrimFunc is translated to one Python function (loops become `for ...
in range`, buffers flat Python lists, expressions Python expressions built
from our own IR, never from user text) and executed, which is tens of times
faster than walking the tree per element. Loop kinds (parallel, vectorized,
unrolled, thread-bound) run serially: they change no result. Nests deeper
than Python's block limit are split into local functions.

    run(mod["main"], a, b, c)   # c is written in place
"""

from __future__ import annotations

import builtins
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from engine.ir.dtype import is_low_precision_float
from engine.tir import expr as E
from engine.tir import stmt as S
from engine.tir.errors import EvalError
from engine.tir.intrin import INTRINSICS

_MAX_LOOP_DEPTH = 16  # Python allows 20 statically nested blocks


def _trunc_div(a: Any, b: Any) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _trunc_mod(a: Any, b: Any) -> Any:
    return a - b * _trunc_div(a, b) if isinstance(a, int) else math.fmod(a, b)


def _int_cast(bits: int, signed: bool) -> Callable[[Any], int]:
    mask, half = (1 << bits) - 1, 1 << (bits - 1)

    def cast(x: Any) -> int:
        value = int(x) & mask
        return value - (1 << bits) if signed and value >= half else value
    return cast


def _caster(dtype: str) -> Callable[[Any], Any]:
    if dtype == "bool":
        return bool
    if is_low_precision_float(dtype):  # a float8 value is rounded, not carried exactly
        scalar = np.dtype(dtype).type
        return lambda v: float(scalar(v))
    if E.is_float(dtype):
        return float
    bits = int("".join(ch for ch in dtype if ch.isdigit()) or "32")
    return _int_cast(bits, not dtype.startswith("uint"))


def _zero(dtype: str) -> str:
    return "0.0" if E.is_float(dtype) else ("False" if dtype == "bool" else "0")


_ARITH: dict[type, str] = {
    E.Add: "+", E.Sub: "-", E.Mul: "*", E.LT: "<", E.LE: "<=", E.GT: ">", E.GE: ">=",
    E.EQ: "==", E.NE: "!=", E.And: "and", E.Or: "or",
}


class PyCodegen:
    """PrimFunc -> Python source of `def kernel(<buffers>, <size vars>)`."""

    def __init__(self, func: S.PrimFunc) -> None:
        self.func = func
        self.lines: list[str] = []
        self.names: dict[int, str] = {}
        self.namespace: dict[str, Any] = {
            "_min": builtins.min, "_max": builtins.max, "_truncdiv": _trunc_div,
            "_truncmod": _trunc_mod, "_floor": math.floor, "_inf": math.inf, "_nan": math.nan,
        }
        self._blocks = 0
        self._keep: list[Any] = []
        self._exprs: dict[type, Callable[[Any], str]] = {
            E.Var: self._var, E.SizeVar: self._var, E.IntImm: self._int, E.FloatImm: self._float,
            E.Div: self._div, E.Mod: lambda e: self._fn("_truncmod", e.a, e.b),
            E.FloorDiv: self._floordiv, E.FloorMod: lambda e: f"({self.e(e.a)} % {self.e(e.b)})",
            E.Min: lambda e: self._fn("_min", e.a, e.b),
            E.Max: lambda e: self._fn("_max", e.a, e.b),
            E.Not: lambda e: f"(not {self.e(e.a)})", E.Select: self._select, E.Cast: self._cast,
            E.Call: self._call, E.BufferLoad: self._load, E.Let: self._let,
        }
        self._stmts: dict[type, Callable[[Any, int, int], None]] = {
            S.For: self._for, S.BufferStore: self._store, S.Allocate: self._allocate,
            S.IfThenElse: self._if, S.LetStmt: self._letstmt, S.Evaluate: self._evaluate,
            S.SeqStmt: self._seq,
        }

    # --- names -------------------------------------------------------------------------------
    def name(self, obj: Any, prefix: str) -> str:
        found = self.names.get(id(obj))
        if found is None:
            found = f"{prefix}{len(self.names)}"
            self.names[id(obj)] = found
            self._keep.append(obj)
        return found

    def constant(self, value: Any) -> str:
        key = f"_k{len(self.namespace)}"
        self.namespace[key] = value
        return key

    # --- expressions -------------------------------------------------------------------------
    def e(self, expr: E.PrimExpr) -> str:
        handler = self._exprs.get(type(expr))
        if handler is not None:
            return handler(expr)
        symbol = _ARITH.get(type(expr))
        if symbol is None or not isinstance(expr, E.BinaryOpExpr):
            raise EvalError(f"cannot evaluate {type(expr).__name__} (lower the schedule first)")
        return f"({self.e(expr.a)} {symbol} {self.e(expr.b)})"

    def _fn(self, fn: str, *args: E.PrimExpr) -> str:
        return f"{fn}({', '.join(self.e(a) for a in args)})"

    def _var(self, v: E.Var) -> str:
        return self.name(v, "v")

    def _int(self, c: E.IntImm) -> str:
        return ("True" if c.value else "False") if c.dtype == "bool" else repr(c.value)

    def _float(self, c: E.FloatImm) -> str:
        if math.isfinite(c.value):
            return repr(c.value)
        return "_nan" if math.isnan(c.value) else ("_inf" if c.value > 0 else "(-_inf)")

    def _div(self, e: E.BinaryOpExpr) -> str:
        if E.is_float(e.dtype):
            return f"({self.e(e.a)} / {self.e(e.b)})"
        return self._fn("_truncdiv", e.a, e.b)

    def _floordiv(self, e: E.BinaryOpExpr) -> str:
        if E.is_float(e.dtype):
            return f"_floor({self.e(e.a)} / {self.e(e.b)})"
        return f"({self.e(e.a)} // {self.e(e.b)})"

    def _select(self, e: E.Select) -> str:
        return f"({self.e(e.true_value)} if {self.e(e.condition)} else {self.e(e.false_value)})"

    def _cast(self, e: E.Cast) -> str:
        return f"{self.constant(_caster(e.dtype))}({self.e(e.value)})"

    def _call(self, e: E.Call) -> str:
        if e.op == "if_then_else":
            cond, then, other = e.args
            return f"({self.e(then)} if {self.e(cond)} else {self.e(other)})"
        if e.op == "likely":
            return self.e(e.args[0])
        intrin = INTRINSICS.get(e.op)
        if intrin is None or intrin.impl is None:
            raise EvalError(f"the evaluator has no implementation of intrinsic {e.op!r}")
        return self._fn(self.constant(intrin.impl), *e.args)

    def _flat_index(self, buf: S.Buffer, indices: tuple[E.PrimExpr, ...]) -> str:
        if len(indices) != buf.ndim:
            raise EvalError(f"buffer {buf.name} has {buf.ndim} dims, accessed with "
                            f"{len(indices)} indices")
        if not indices:
            return "0"
        flat = self.e(indices[0])
        for dim, index in zip(buf.shape[1:], indices[1:]):
            flat = f"({flat}) * ({self.e(dim)}) + {self.e(index)}"
        return flat

    def _load(self, e: E.BufferLoad) -> str:
        return f"{self.name(e.buffer, 'b')}[{self._flat_index(e.buffer, e.indices)}]"

    def _let(self, e: E.Let) -> str:
        return f"(({self.e(e.var)} := {self.e(e.value)}), {self.e(e.body)})[1]"

    # --- statements -----------------------------------------------------------------------
    def emit(self, text: str, indent: int) -> None:
        self.lines.append("    " * indent + text)

    def s(self, stmt: S.Stmt, indent: int, depth: int) -> None:
        self._stmts[type(stmt)](stmt, indent, depth)

    def _block(self, body: S.Stmt, indent: int, depth: int) -> None:
        start = len(self.lines)
        self.s(body, indent, depth)
        if len(self.lines) == start:
            self.emit("pass", indent)

    def _for(self, f: S.For, indent: int, depth: int) -> None:
        if depth >= _MAX_LOOP_DEPTH:
            self._blocks += 1
            helper = f"_block{self._blocks}"
            self.emit(f"def {helper}():", indent)
            self._for(f, indent + 1, 0)
            self.emit(f"{helper}()", indent)
            return
        lo, ext = self.e(f.min), self.e(f.extent)
        rng = f"range({ext})" if lo == "0" else f"range({lo}, {lo} + {ext})"
        self.emit(f"for {self.e(f.loop_var)} in {rng}:", indent)
        self._block(f.body, indent + 1, depth + 1)

    def _store(self, st: S.BufferStore, indent: int, depth: int) -> None:
        target = f"{self.name(st.buffer, 'b')}[{self._flat_index(st.buffer, st.indices)}]"
        self.emit(f"{target} = {self.e(st.value)}", indent)

    def _allocate(self, a: S.Allocate, indent: int, depth: int) -> None:
        size = " * ".join(f"({self.e(d)})" for d in a.buffer.shape) or "1"
        self.emit(f"{self.name(a.buffer, 'b')} = [{_zero(a.buffer.dtype)}] * ({size})", indent)
        self.s(a.body, indent, depth)

    def _if(self, node: S.IfThenElse, indent: int, depth: int) -> None:
        self.emit(f"if {self.e(node.condition)}:", indent)
        self._block(node.then_case, indent + 1, depth)
        if node.else_case is not None:
            self.emit("else:", indent)
            self._block(node.else_case, indent + 1, depth)

    def _letstmt(self, node: S.LetStmt, indent: int, depth: int) -> None:
        self.emit(f"{self.e(node.var)} = {self.e(node.value)}", indent)
        self.s(node.body, indent, depth)

    def _evaluate(self, node: S.Evaluate, indent: int, depth: int) -> None:
        self.emit(self.e(node.value), indent)

    def _seq(self, node: S.SeqStmt, indent: int, depth: int) -> None:
        for item in node.seq:
            self.s(item, indent, depth)

    # --- the function -----------------------------------------------------------------------
    def size_vars(self) -> list[E.Var]:
        seen: dict[int, E.Var] = {}
        for buf in self.func.params:
            for dim in buf.shape:
                if isinstance(dim, E.Var):
                    seen.setdefault(id(dim), dim)
        return list(seen.values())

    def source(self) -> str:
        params = [self.name(b, "b") for b in self.func.params]
        params += [self.e(v) for v in self.size_vars()]
        self.emit(f"def kernel({', '.join(params)}):", 0)
        self._block(self.func.body, 1, 0)
        return "\n".join(self.lines) + "\n"


class CompiledFunc:
    """A PrimFunc translated to Python once, callable many times on numpy arrays."""

    def __init__(self, func: S.PrimFunc) -> None:
        gen = PyCodegen(func)
        self.func = func
        self.source = gen.source()
        self.size_vars = gen.size_vars()
        namespace = dict(gen.namespace)
        exec(compile(self.source, f"<tir:{func.name}>", "exec"), namespace)
        self._kernel = namespace["kernel"]

    def _bind_sizes(self, arrays: list[np.ndarray]) -> dict[int, int]:
        sizes: dict[int, int] = {}
        for buf, arr in zip(self.func.params, arrays):
            if arr.ndim != buf.ndim:
                raise EvalError(f"buffer {buf.name} has {buf.ndim} dims, got an array of "
                                f"shape {arr.shape}")
            for dim, actual in zip(buf.shape, arr.shape):
                if isinstance(dim, E.Var):
                    if sizes.setdefault(id(dim), actual) != actual:
                        raise EvalError(f"size {dim.name} bound to two values")
                elif isinstance(dim, E.IntImm) and dim.value != actual:
                    raise EvalError(f"buffer {buf.name} has shape "
                                    f"{[str(d) for d in buf.shape]}, got {arr.shape}")
        return sizes

    def __call__(self, *arrays: Any) -> None:
        if len(arrays) != len(self.func.params):
            raise EvalError(f"{self.func.name} takes {len(self.func.params)} buffers, "
                            f"got {len(arrays)}")
        arrs = [a if isinstance(a, np.ndarray) else np.asarray(a.numpy()) for a in arrays]
        sizes = self._bind_sizes(arrs)
        flats = [a.ravel().tolist() for a in arrs]
        self._kernel(*flats, *(sizes[id(v)] for v in self.size_vars))
        for arr, flat, buf in zip(arrs, flats, self.func.params):
            if not arr.flags.writeable:
                continue
            with np.errstate(over="ignore", invalid="ignore"):
                arr[...] = np.asarray(flat, dtype=np.dtype(buf.dtype)).reshape(arr.shape)


def run(func: Any, *arrays: Any) -> None:
    """Run a PrimFunc (or the `main` of a lowered module) on numpy arrays, in place."""
    if isinstance(func, S.PrimFuncModule):
        func = func["main"]
    if not isinstance(func, S.PrimFunc):
        raise EvalError(f"run expects a PrimFunc or a lowered module, got {type(func).__name__}")
    CompiledFunc(func)(*arrays)
