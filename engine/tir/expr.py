"""TIR expressions (TVM's `tvm.tir` PrimExpr nodes).

Nodes are frozen dataclasses hashed by identity; children are fields listed in
each class's `children` (a PrimExpr or a tuple of them), so traversal is one
generic function (`map_children`) instead of a visitor per node kind. Python
operators build nodes (`i * 4 + j`, `x < n`), as in TVM; `==` builds an `EQ`
whose truth value is identity, so Vars still work as dict keys and in `in`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

from engine.ir.span import UNKNOWN_SPAN, SpanLike
from engine.tir.errors import TIRError
from engine.tir.text import printer


class ExprOp:
    """Arithmetic and comparison sugar shared by PrimExpr and TE objects that convert to one."""

    __slots__ = ()

    def __add__(self, other: Any) -> PrimExpr:
        return binary(Add, self, other)

    def __radd__(self, other: Any) -> PrimExpr:
        return binary(Add, other, self)

    def __sub__(self, other: Any) -> PrimExpr:
        return binary(Sub, self, other)

    def __rsub__(self, other: Any) -> PrimExpr:
        return binary(Sub, other, self)

    def __mul__(self, other: Any) -> PrimExpr:
        return binary(Mul, self, other)

    def __rmul__(self, other: Any) -> PrimExpr:
        return binary(Mul, other, self)

    def __truediv__(self, other: Any) -> PrimExpr:
        return binary(Div, self, other)

    def __rtruediv__(self, other: Any) -> PrimExpr:
        return binary(Div, other, self)

    def __floordiv__(self, other: Any) -> PrimExpr:
        return binary(FloorDiv, self, other)

    def __rfloordiv__(self, other: Any) -> PrimExpr:
        return binary(FloorDiv, other, self)

    def __mod__(self, other: Any) -> PrimExpr:
        return binary(FloorMod, self, other)

    def __rmod__(self, other: Any) -> PrimExpr:
        return binary(FloorMod, other, self)

    def __neg__(self) -> PrimExpr:
        value = convert(self)
        return binary(Sub, make_const(0, value.dtype), value)

    def __lt__(self, other: Any) -> PrimExpr:
        return binary(LT, self, other)

    def __le__(self, other: Any) -> PrimExpr:
        return binary(LE, self, other)

    def __gt__(self, other: Any) -> PrimExpr:
        return binary(GT, self, other)

    def __ge__(self, other: Any) -> PrimExpr:
        return binary(GE, self, other)

    def __eq__(self, other: Any) -> PrimExpr:  # type: ignore[override]
        return binary(EQ, self, other)

    def __ne__(self, other: Any) -> PrimExpr:  # type: ignore[override]
        return binary(NE, self, other)

    __hash__ = object.__hash__

    def __and__(self, other: Any) -> PrimExpr:
        return logical(And, self, other)

    def __or__(self, other: Any) -> PrimExpr:
        return logical(Or, self, other)

    def __invert__(self) -> PrimExpr:
        return Not(_as_bool(convert(self)))

    def __bool__(self) -> bool:
        raise TIRError("a symbolic expression has no truth value: use te.all/te.any/"
                       "tir.Select instead of Python's and/or/not/if")

    def astype(self, dtype: str) -> PrimExpr:
        return cast(convert(self), dtype)


@dataclass(frozen=True, eq=False, slots=True, repr=False)
class PrimExpr(ExprOp):
    """Base of every TIR expression."""

    dtype: str = field(default="", kw_only=True)
    span: SpanLike = field(default=UNKNOWN_SPAN, kw_only=True)

    children: ClassVar[tuple[str, ...]] = ()

    def same_as(self, other: object) -> bool:
        return self is other

    def __int__(self) -> int:
        """The value of a constant integer expression (a shape extent, say)."""
        raise TypeError(f"{type(self).__name__} {self} is not a constant integer")

    def __str__(self) -> str:
        return printer().expr_text(self)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self})"


@dataclass(frozen=True, eq=False, slots=True, repr=False)
class Var(PrimExpr):
    name: str = "v"

    def __post_init__(self) -> None:
        if not self.dtype:
            object.__setattr__(self, "dtype", "int32")

    @property
    def name_hint(self) -> str:
        return self.name


@dataclass(frozen=True, eq=False, slots=True, repr=False)
class SizeVar(Var):
    """A Var known to be non-negative (a shape parameter)."""


@dataclass(frozen=True, eq=False, slots=True, repr=False)
class IntImm(PrimExpr):
    value: int = 0

    def __post_init__(self) -> None:
        if not self.dtype:
            object.__setattr__(self, "dtype", "int32")

    def __int__(self) -> int:
        return self.value

    def __index__(self) -> int:
        return self.value


@dataclass(frozen=True, eq=False, slots=True, repr=False)
class FloatImm(PrimExpr):
    value: float = 0.0

    def __post_init__(self) -> None:
        if not self.dtype:
            object.__setattr__(self, "dtype", "float32")

    def __float__(self) -> float:
        return self.value


@dataclass(frozen=True, eq=False, slots=True, repr=False)
class StringImm(PrimExpr):
    value: str = ""


@dataclass(frozen=True, eq=False, slots=True, repr=False)
class BinaryOpExpr(PrimExpr):
    a: PrimExpr = None  # type: ignore[assignment]
    b: PrimExpr = None  # type: ignore[assignment]

    children: ClassVar[tuple[str, ...]] = ("a", "b")
    symbol: ClassVar[str] = "?"
    is_compare: ClassVar[bool] = False

    def __post_init__(self) -> None:
        if not self.dtype:
            dtype = "bool" if self.is_compare else self.a.dtype
            object.__setattr__(self, "dtype", dtype)


def _binop(name: str, symbol: str, compare: bool = False) -> type[BinaryOpExpr]:
    cls = type(name, (BinaryOpExpr,), {"__slots__": (), "symbol": symbol,
                                      "is_compare": compare, "__module__": __name__,
                                      "__qualname__": name})
    return dataclass(frozen=True, eq=False, slots=False, repr=False)(cls)


Add = _binop("Add", "+")
Sub = _binop("Sub", "-")
Mul = _binop("Mul", "*")
Div = _binop("Div", "/")
Mod = _binop("Mod", "%")
FloorDiv = _binop("FloorDiv", "//")
FloorMod = _binop("FloorMod", "%")
Min = _binop("Min", "min")
Max = _binop("Max", "max")
LT = _binop("LT", "<", True)
LE = _binop("LE", "<=", True)
GT = _binop("GT", ">", True)
GE = _binop("GE", ">=", True)
EQ = _binop("EQ", "==", True)
NE = _binop("NE", "!=", True)
And = _binop("And", "&&", True)
Or = _binop("Or", "||", True)


def _identity_truth(self: BinaryOpExpr) -> bool:
    return self.a is self.b


def _difference_truth(self: BinaryOpExpr) -> bool:
    return self.a is not self.b


setattr(EQ, "__bool__", _identity_truth)  # noqa: B010  (TVM: `x == y` tests identity)
setattr(NE, "__bool__", _difference_truth)  # noqa: B010


@dataclass(frozen=True, eq=False, slots=True, repr=False)
class Not(PrimExpr):
    a: PrimExpr = None  # type: ignore[assignment]

    children: ClassVar[tuple[str, ...]] = ("a",)

    def __post_init__(self) -> None:
        object.__setattr__(self, "dtype", "bool")


@dataclass(frozen=True, eq=False, slots=True, repr=False)
class Select(PrimExpr):
    condition: PrimExpr = None  # type: ignore[assignment]
    true_value: PrimExpr = None  # type: ignore[assignment]
    false_value: PrimExpr = None  # type: ignore[assignment]

    children: ClassVar[tuple[str, ...]] = ("condition", "true_value", "false_value")

    def __post_init__(self) -> None:
        if not self.dtype:
            object.__setattr__(self, "dtype", self.true_value.dtype)


@dataclass(frozen=True, eq=False, slots=True, repr=False)
class Cast(PrimExpr):
    value: PrimExpr = None  # type: ignore[assignment]

    children: ClassVar[tuple[str, ...]] = ("value",)


@dataclass(frozen=True, eq=False, slots=True, repr=False)
class Call(PrimExpr):
    """An intrinsic call: `op` names an entry of engine.tir.intrin.INTRINSICS."""

    op: str = ""
    args: tuple[PrimExpr, ...] = ()

    children: ClassVar[tuple[str, ...]] = ("args",)


@dataclass(frozen=True, eq=False, slots=True, repr=False)
class Let(PrimExpr):
    var: Var = None  # type: ignore[assignment]
    value: PrimExpr = None  # type: ignore[assignment]
    body: PrimExpr = None  # type: ignore[assignment]

    children: ClassVar[tuple[str, ...]] = ("value", "body")

    def __post_init__(self) -> None:
        if not self.dtype:
            object.__setattr__(self, "dtype", self.body.dtype)


@dataclass(frozen=True, eq=False, slots=True, repr=False)
class BufferLoad(PrimExpr):
    buffer: Any = None  # engine.tir.buffer.Buffer
    indices: tuple[PrimExpr, ...] = ()

    children: ClassVar[tuple[str, ...]] = ("indices",)

    def __post_init__(self) -> None:
        if not self.dtype:
            object.__setattr__(self, "dtype", self.buffer.dtype)


@dataclass(frozen=True, eq=False, slots=True, repr=False)
class ProducerLoad(PrimExpr):
    """A read of a TE tensor (`A[i, k]`), before lowering turns it into a BufferLoad."""

    producer: Any = None  # engine.te.tensor.Tensor
    indices: tuple[PrimExpr, ...] = ()

    children: ClassVar[tuple[str, ...]] = ("indices",)

    def __post_init__(self) -> None:
        if not self.dtype:
            object.__setattr__(self, "dtype", self.producer.dtype)


@dataclass(frozen=True, eq=False, slots=True, repr=False)
class Reduce(PrimExpr):
    """`combiner` over `axis` (IterVars) of `source`, where `condition` holds."""

    combiner: Any = None  # engine.te.reduction.CommReducer
    source: tuple[PrimExpr, ...] = ()
    axis: tuple[Any, ...] = ()  # IterVars
    condition: PrimExpr = None  # type: ignore[assignment]
    value_index: int = 0
    init: tuple[PrimExpr, ...] = ()

    children: ClassVar[tuple[str, ...]] = ("source", "condition", "init")

    def __post_init__(self) -> None:
        if not self.dtype:
            object.__setattr__(self, "dtype", self.source[self.value_index].dtype)


# --- construction helpers ----------------------------------------------------------------

def is_float(dtype: str) -> bool:
    return dtype.startswith(("float", "bfloat"))


def is_int(dtype: str) -> bool:
    return dtype.startswith(("int", "uint"))


def make_const(value: Any, dtype: str) -> PrimExpr:
    """`te.const`: an IntImm, FloatImm or bool constant of `dtype`."""
    if dtype == "bool":
        return IntImm(value=int(bool(value)), dtype="bool")
    if is_float(dtype):
        return FloatImm(value=float(value), dtype=dtype)
    if is_int(dtype):
        return IntImm(value=int(value), dtype=dtype)
    raise TIRError(f"cannot make a constant of dtype {dtype!r}")


def convert(value: Any) -> PrimExpr:
    """A PrimExpr for `value`: exprs as they are, TE objects via `as_prim_expr`, numbers."""
    if isinstance(value, PrimExpr):
        return value
    to_expr = getattr(value, "as_prim_expr", None)
    if to_expr is not None:
        return to_expr()
    if isinstance(value, bool):
        return make_const(value, "bool")
    if isinstance(value, int):
        return IntImm(value=value, dtype="int32" if -2**31 <= value < 2**31 else "int64")
    if isinstance(value, float):
        return FloatImm(value=value, dtype="float32")
    if hasattr(value, "dtype") and hasattr(value, "item"):  # numpy scalar
        return make_const(value.item(), str(value.dtype))
    raise TIRError(f"cannot convert {value!r} ({type(value).__name__}) to a PrimExpr")


def _operand(value: Any, other: Any) -> PrimExpr:
    """Convert a Python number to the dtype of the expression it meets, as TVM does."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        peer = convert(other)
        if isinstance(value, float) and not is_float(peer.dtype):
            return FloatImm(value=value, dtype="float32")
        return make_const(value, peer.dtype if peer.dtype != "bool" else "int32")
    return convert(value)


def _promote(a: PrimExpr, b: PrimExpr) -> tuple[PrimExpr, PrimExpr]:
    if a.dtype == b.dtype:
        return a, b
    if is_float(a.dtype) and not is_float(b.dtype):
        return a, cast(b, a.dtype)
    if is_float(b.dtype) and not is_float(a.dtype):
        return cast(a, b.dtype), b
    if a.dtype == "bool" or b.dtype == "bool":
        return a, b
    wide = a.dtype if _bits(a.dtype) >= _bits(b.dtype) else b.dtype
    return (a if a.dtype == wide else cast(a, wide)), (b if b.dtype == wide else cast(b, wide))


def _bits(dtype: str) -> int:
    digits = "".join(ch for ch in dtype if ch.isdigit())
    return int(digits) if digits else 32


def binary(cls: type[BinaryOpExpr], lhs: Any, rhs: Any) -> PrimExpr:
    a = _operand(lhs, rhs)
    b = _operand(rhs, a)
    a, b = _promote(a, b)
    return cls(a=a, b=b)


def _as_bool(value: PrimExpr) -> PrimExpr:
    if value.dtype != "bool":
        raise TIRError(f"logical operators need bool operands, got {value.dtype}: {value}")
    return value


def logical(cls: type[BinaryOpExpr], lhs: Any, rhs: Any) -> PrimExpr:
    return cls(a=_as_bool(convert(lhs)), b=_as_bool(convert(rhs)))


def cast(value: Any, dtype: str) -> PrimExpr:
    value = convert(value)
    if value.dtype == dtype:
        return value
    if isinstance(value, (IntImm, FloatImm)):
        return make_const(value.value, dtype)
    return Cast(value=value, dtype=dtype)


def const_value(value: PrimExpr) -> int | float | None:
    """The Python number of a constant expression, else None."""
    if isinstance(value, (IntImm, FloatImm)):
        return value.value
    return None


def map_children(expr: PrimExpr, fn: Any) -> PrimExpr:
    """`expr` with `fn` applied to each child; the same node when nothing changed."""
    changed: dict[str, Any] = {}
    for name in expr.children:
        child = getattr(expr, name)
        if isinstance(child, tuple):
            new_items = tuple(fn(item) for item in child)
            if any(n is not o for n, o in zip(new_items, child)):
                changed[name] = new_items
        elif child is not None:
            new = fn(child)
            if new is not child:
                changed[name] = new
    return replace(expr, **changed) if changed else expr


def iter_children(expr: PrimExpr) -> list[PrimExpr]:
    out: list[PrimExpr] = []
    for name in expr.children:
        child = getattr(expr, name)
        if isinstance(child, tuple):
            out.extend(child)
        elif child is not None:
            out.append(child)
    return out
