"""Integer arithmetic for index expressions: linear forms, a simplifier and
interval bounds (a small counterpart of TVM's `arith` analyzer).

A `Linear` is `sum(coeff * term) + const` where a term is a Var or an opaque
atom (`x // 4`, `n * m`); linear forms make `i.outer*8 + i.inner - i.outer*8`
fold to `i.inner`, decide whether a split divides, and give the symbolic
`[lo, hi]` of an index when some loops are relaxed over their ranges.
Anything the analysis cannot bound returns None, and callers fall back to a
safe answer (the whole domain).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from engine.tir import expr as E

Term = tuple[int, E.PrimExpr]


def structural_key(e: E.PrimExpr) -> Any:
    """A hashable key equal for structurally equal expressions (Vars by identity)."""
    if isinstance(e, E.Var):
        return e
    if isinstance(e, (E.IntImm, E.FloatImm, E.StringImm)):
        return ("const", e.dtype, e.value)
    head: tuple[Any, ...] = (type(e).__name__, e.dtype)
    if isinstance(e, E.Call):
        head += (e.op,)
    elif isinstance(e, E.BufferLoad):
        head += (id(e.buffer),)
    elif isinstance(e, E.ProducerLoad):
        head += (id(e.producer),)
    return head + tuple(structural_key(c) for c in E.iter_children(e))


class Linear:
    """`sum(coeff * term) + const` over Vars and atoms; terms keep insertion order."""

    __slots__ = ("terms", "const")

    def __init__(self, terms: dict[Any, Term] | None = None, const: int = 0) -> None:
        self.terms: dict[Any, Term] = terms or {}
        self.const = const

    @staticmethod
    def of_term(e: E.PrimExpr, coeff: int = 1) -> Linear:
        return Linear({structural_key(e): (coeff, e)})

    @property
    def is_const(self) -> bool:
        return not self.terms

    def __add__(self, other: Linear) -> Linear:
        terms = dict(self.terms)
        for key, (coeff, e) in other.terms.items():
            old = terms.get(key)
            total = coeff + (old[0] if old else 0)
            if total:
                terms[key] = (total, e)
            elif old:
                del terms[key]
        return Linear(terms, self.const + other.const)

    def scale(self, factor: int) -> Linear:
        if factor == 0:
            return Linear()
        return Linear({k: (c * factor, e) for k, (c, e) in self.terms.items()},
                      self.const * factor)

    def __sub__(self, other: Linear) -> Linear:
        return self + other.scale(-1)

    def add_const(self, value: int) -> Linear:
        return Linear(dict(self.terms), self.const + value)

    def divisible_by(self, c: int) -> bool:
        return all(coeff % c == 0 for coeff, _ in self.terms.values())

    def exact_floordiv(self, c: int) -> Linear:
        """floor((c*X + k) / c) = X + floor(k / c), for coefficients divisible by c."""
        return Linear({k: (coeff // c, e) for k, (coeff, e) in self.terms.items()},
                      self.const // c)

    def same_terms(self, other: Linear) -> bool:
        return (self - other).is_const

    def to_expr(self, dtype: str = "int32") -> E.PrimExpr:
        result: E.PrimExpr | None = None
        for coeff, e in self.terms.values():
            term = e if abs(coeff) == 1 else E.Mul(a=e, b=E.IntImm(value=abs(coeff), dtype=dtype))
            if result is None:
                result = term if coeff > 0 else E.Mul(a=e, b=E.IntImm(value=coeff, dtype=dtype))
            elif coeff > 0:
                result = E.Add(a=result, b=term)
            else:
                result = E.Sub(a=result, b=term)
        if result is None:
            return E.IntImm(value=self.const, dtype=dtype)
        if self.const > 0:
            return E.Add(a=result, b=E.IntImm(value=self.const, dtype=dtype))
        if self.const < 0:
            return E.Sub(a=result, b=E.IntImm(value=-self.const, dtype=dtype))
        return result

    def vars(self) -> set[E.Var]:
        out: set[E.Var] = set()
        for _, e in self.terms.values():
            out.update(collect_vars(e))
        return out

    def range(self, extents: dict[E.Var, int]) -> tuple[int, int] | None:
        """Min and max of the form when each loop var v lies in [0, extents[v])."""
        lo = hi = self.const
        for coeff, e in self.terms.values():
            term = term_range(e, extents)
            if term is None:
                return None
            a, b = coeff * term[0], coeff * term[1]
            lo, hi = lo + min(a, b), hi + max(a, b)
        return lo, hi


def term_range(e: E.PrimExpr, extents: dict[E.Var, int]) -> tuple[int, int] | None:
    """The integer range of a linear term: a loop var, `x % c`, or `x // c`."""
    if isinstance(e, E.Var):
        ext = extents.get(e)
        return None if ext is None else (0, ext - 1)
    if not isinstance(e, (E.FloorMod, E.FloorDiv)):
        return None
    divisor = _const_int(e.b)
    if divisor is None or divisor <= 0:
        return None
    if isinstance(e, E.FloorMod):
        return 0, divisor - 1
    inner = to_linear(e.a).range(extents)
    return None if inner is None else (inner[0] // divisor, inner[1] // divisor)


def collect_vars(e: E.PrimExpr) -> set[E.Var]:
    out: set[E.Var] = set()
    stack = [e]
    while stack:
        node = stack.pop()
        if isinstance(node, E.Var):
            out.add(node)
        else:
            stack.extend(E.iter_children(node))
    return out


def is_index_dtype(dtype: str) -> bool:
    return dtype.startswith(("int", "uint"))


def _const_int(e: E.PrimExpr) -> int | None:
    return e.value if isinstance(e, E.IntImm) and e.dtype != "bool" else None


def _lin_mul(e: Any) -> Linear:
    a, b = to_linear(e.a), to_linear(e.b)
    if a.is_const:
        return b.scale(a.const)
    if b.is_const:
        return a.scale(b.const)
    return Linear.of_term(E.Mul(a=a.to_expr(e.dtype), b=b.to_expr(e.dtype)))


def _lin_floordiv(e: Any) -> Linear:
    a, b = to_linear(e.a), to_linear(e.b)
    if b.is_const and b.const > 0:
        if a.divisible_by(b.const):
            return a.exact_floordiv(b.const)
        return Linear.of_term(E.FloorDiv(a=a.to_expr(e.dtype), b=e.b))
    if a.is_const and b.is_const and b.const != 0:
        return Linear(const=a.const // b.const)
    return Linear.of_term(E.FloorDiv(a=a.to_expr(e.dtype), b=b.to_expr(e.dtype)))


def _lin_floormod(e: Any) -> Linear:
    a, b = to_linear(e.a), to_linear(e.b)
    if b.is_const and b.const > 0:
        if a.divisible_by(b.const):
            return Linear(const=a.const % b.const)
        return Linear.of_term(E.FloorMod(a=a.to_expr(e.dtype), b=e.b))
    return Linear.of_term(E.FloorMod(a=a.to_expr(e.dtype), b=b.to_expr(e.dtype)))


def _lin_minmax(e: Any) -> Linear:
    a, b = to_linear(e.a), to_linear(e.b)
    diff = a - b
    if diff.is_const:
        pick_a = (diff.const <= 0) == isinstance(e, E.Min)
        return a if pick_a else b
    return Linear.of_term(type(e)(a=a.to_expr(e.dtype), b=b.to_expr(e.dtype)))


_LINEAR: dict[type, Callable[[Any], Linear]] = {
    E.IntImm: lambda e: Linear(const=e.value),
    E.Var: Linear.of_term,
    E.SizeVar: Linear.of_term,
    E.Add: lambda e: to_linear(e.a) + to_linear(e.b),
    E.Sub: lambda e: to_linear(e.a) - to_linear(e.b),
    E.Mul: _lin_mul,
    E.FloorDiv: _lin_floordiv,
    E.FloorMod: _lin_floormod,
    E.Min: _lin_minmax,
    E.Max: _lin_minmax,
}


def to_linear(e: E.PrimExpr) -> Linear:
    """The linear form of an integer expression (non-linear parts become atoms)."""
    handler = _LINEAR.get(type(e))
    if handler is not None:
        return handler(e)
    if isinstance(e, E.Cast) and is_index_dtype(e.dtype) and is_index_dtype(e.value.dtype):
        return to_linear(e.value)
    return Linear.of_term(E.map_children(e, simplify))


_COMPARE: dict[type, Callable[[int], bool]] = {
    E.LT: lambda d: d < 0, E.LE: lambda d: d <= 0, E.GT: lambda d: d > 0,
    E.GE: lambda d: d >= 0, E.EQ: lambda d: d == 0, E.NE: lambda d: d != 0,
}


def _simplify_compare(e: Any) -> E.PrimExpr:
    a, b = simplify(e.a), simplify(e.b)
    if is_index_dtype(a.dtype) and is_index_dtype(b.dtype):
        diff = to_linear(a) - to_linear(b)
        if diff.is_const:
            return E.make_const(_COMPARE[type(e)](diff.const), "bool")
    return type(e)(a=a, b=b)


def _simplify_logic(e: Any) -> E.PrimExpr:
    a, b = simplify(e.a), simplify(e.b)
    absorbing = 0 if isinstance(e, E.And) else 1
    for x, y in ((a, b), (b, a)):
        value = _const_int(x) if x.dtype != "bool" else x.value if isinstance(x, E.IntImm) else None
        if value is None:
            continue
        return x if bool(value) == bool(absorbing) else y
    return type(e)(a=a, b=b)


def simplify(e: E.PrimExpr) -> E.PrimExpr:
    """Fold constants and collect linear terms; the meaning never changes."""
    if isinstance(e, (E.Var, E.IntImm, E.FloatImm)):
        return e
    if type(e) in _COMPARE:
        return _simplify_compare(e)
    if isinstance(e, (E.And, E.Or)):
        return _simplify_logic(e)
    if is_index_dtype(e.dtype) and (type(e) in _LINEAR or isinstance(e, E.Cast)):
        return to_linear(e).to_expr(e.dtype)
    return E.map_children(e, simplify)


# --- interval bounds ----------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Interval:
    lo: Linear
    hi: Linear

    @staticmethod
    def point(lin: Linear) -> Interval:
        return Interval(lin, lin)

    @property
    def is_point(self) -> bool:
        return self.lo.same_terms(self.hi) and self.lo.const == self.hi.const


Relax = dict[E.Var, Interval]


def _iv_add(e: Any, relax: Relax) -> Interval | None:
    a, b = eval_interval(e.a, relax), eval_interval(e.b, relax)
    if a is None or b is None:
        return None
    if isinstance(e, E.Add):
        return Interval(a.lo + b.lo, a.hi + b.hi)
    return Interval(a.lo - b.hi, a.hi - b.lo)


def _iv_mul(e: Any, relax: Relax) -> Interval | None:
    a, b = eval_interval(e.a, relax), eval_interval(e.b, relax)
    if a is None or b is None:
        return None
    if b.is_point and b.lo.is_const:
        a, b = b, a
    if a.is_point and a.lo.is_const:
        c = a.lo.const
        lo, hi = b.lo.scale(c), b.hi.scale(c)
        return Interval(lo, hi) if c >= 0 else Interval(hi, lo)
    if a.is_point and b.is_point:
        return Interval.point(to_linear(E.Mul(a=a.lo.to_expr(), b=b.lo.to_expr())))
    return None


def _divisor(e: Any, relax: Relax) -> int | None:
    b = eval_interval(e.b, relax)
    if b is None or not (b.is_point and b.lo.is_const) or b.lo.const <= 0:
        return None
    return b.lo.const


def _iv_floordiv(e: Any, relax: Relax) -> Interval | None:
    c, a = _divisor(e, relax), eval_interval(e.a, relax)
    if c is None or a is None:
        return None
    if a.lo.divisible_by(c) and a.hi.divisible_by(c):
        return Interval(a.lo.exact_floordiv(c), a.hi.exact_floordiv(c))
    lo = to_linear(E.FloorDiv(a=a.lo.to_expr(), b=E.IntImm(value=c)))
    if a.is_point:
        return Interval.point(lo)
    width = a.hi - a.lo
    if not width.is_const:
        return None
    return Interval(lo, lo.add_const(-(-width.const // c)))


def _iv_floormod(e: Any, relax: Relax) -> Interval | None:
    c, a = _divisor(e, relax), eval_interval(e.a, relax)
    if c is None or a is None:
        return None
    if a.is_point:
        return Interval.point(to_linear(E.FloorMod(a=a.lo.to_expr(), b=E.IntImm(value=c))))
    full = Interval(Linear(const=0), Linear(const=c - 1))
    width = a.hi - a.lo
    if not (width.is_const and a.lo.divisible_by(c)):
        return full
    start = a.lo.const % c
    if start + width.const < c:
        return Interval(Linear(const=start), Linear(const=start + width.const))
    return full


def _pick(x: Linear, y: Linear, smaller: bool) -> Linear | None:
    diff = x - y
    if not diff.is_const:
        return None
    return x if (diff.const <= 0) == smaller else y


def _iv_minmax(e: Any, relax: Relax) -> Interval | None:
    a, b = eval_interval(e.a, relax), eval_interval(e.b, relax)
    if a is None or b is None:
        return None
    if a.is_point and b.is_point:
        return Interval.point(to_linear(type(e)(a=a.lo.to_expr(), b=b.lo.to_expr())))
    lo: Linear | None
    hi: Linear | None
    if isinstance(e, E.Min):  # min <= a.hi always; the low end must be comparable
        lo, hi = _pick(a.lo, b.lo, smaller=True), _pick(a.hi, b.hi, smaller=True) or a.hi
    else:  # max >= a.lo always; the high end must be comparable
        lo, hi = _pick(a.lo, b.lo, smaller=False) or a.lo, _pick(a.hi, b.hi, smaller=False)
    if lo is None or hi is None:
        return None
    return Interval(lo, hi)


def _iv_var(e: E.Var, relax: Relax) -> Interval:
    found = relax.get(e)
    return found if found is not None else Interval.point(Linear.of_term(e))


_INTERVAL: dict[type, Callable[[Any, Relax], Interval | None]] = {
    E.IntImm: lambda e, r: Interval.point(Linear(const=e.value)),
    E.Var: _iv_var,
    E.SizeVar: _iv_var,
    E.Add: _iv_add,
    E.Sub: _iv_add,
    E.Mul: _iv_mul,
    E.FloorDiv: _iv_floordiv,
    E.FloorMod: _iv_floormod,
    E.Min: _iv_minmax,
    E.Max: _iv_minmax,
}


def eval_interval(e: E.PrimExpr, relax: Relax) -> Interval | None:
    """Symbolic [lo, hi] of integer `e` when each Var in `relax` ranges over its interval."""
    handler = _INTERVAL.get(type(e))
    if handler is not None:
        return handler(e, relax)
    if isinstance(e, E.Cast) and is_index_dtype(e.dtype) and is_index_dtype(e.value.dtype):
        return eval_interval(e.value, relax)
    if collect_vars(e).isdisjoint(relax):
        return Interval.point(to_linear(e))
    return None


def union(intervals: Iterable[Interval | None]) -> Interval | None:
    """The smallest interval covering all, or None if some bound is not comparable."""
    result: Interval | None = None
    for item in intervals:
        if item is None:
            return None
        if result is None:
            result = item
            continue
        lo = _pick(result.lo, item.lo, smaller=True)
        hi = _pick(result.hi, item.hi, smaller=False)
        if lo is None or hi is None:
            return None
        result = Interval(lo, hi)
    return result
