"""The loop arithmetic of one stage: extents of every iter var (passed down the
split/fuse relations from the root ranges), root indices from leaf values
(passed up), and the guards a non-dividing split or an oversized region needs.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.te.stage import Fuse, Split, Stage
from engine.te.tensor import IterVar
from engine.tir import expr as E
from engine.tir.arith import simplify, to_linear


def ceildiv(a: E.PrimExpr, b: E.PrimExpr) -> E.PrimExpr:
    ca, cb = E.const_value(a), E.const_value(b)
    if isinstance(ca, int) and isinstance(cb, int):
        return E.IntImm(value=-(-ca // cb), dtype=a.dtype)
    return simplify(E.FloorDiv(a=E.Add(a=a, b=E.Sub(a=b, b=E.IntImm(value=1))), b=b))


def _is_zero(e: E.PrimExpr) -> bool:
    lin = to_linear(e)
    return lin.is_const and lin.const == 0


@dataclass(frozen=True, slots=True)
class RootRange:
    """The part of a root iter var's domain a stage computes, and whether the loops may
    step outside the domain (then the body is guarded)."""

    min: E.PrimExpr
    extent: E.PrimExpr
    check_lo: bool = False
    check_hi: bool = False


class StageLoops:
    """Extents and index maps of one stage, given the ranges of its root iter vars."""

    def __init__(self, stage: Stage, roots: dict[IterVar, RootRange]) -> None:
        self.stage = stage
        self.roots = roots
        self.extent: dict[IterVar, E.PrimExpr] = {iv: r.extent for iv, r in roots.items()}
        self._pass_down()

    def _pass_down(self) -> None:
        for rel in self.stage.relations:
            if isinstance(rel, Split):
                parent = self.extent[rel.parent]
                if rel.factor is not None:
                    outer, inner = ceildiv(parent, rel.factor), rel.factor
                else:
                    assert rel.nparts is not None  # split() sets exactly one of the two
                    outer, inner = rel.nparts, ceildiv(parent, rel.nparts)
                self.extent[rel.outer], self.extent[rel.inner] = outer, inner
            else:
                self.extent[rel.fused] = simplify(
                    E.Mul(a=self.extent[rel.outer], b=self.extent[rel.inner]))

    def divides(self, rel: Split) -> bool:
        covered = E.Mul(a=self.extent[rel.outer], b=self.extent[rel.inner])
        return _is_zero(E.Sub(a=covered, b=self.extent[rel.parent]))

    def index_map(self, leaf_values: dict[IterVar, E.PrimExpr]) -> dict[IterVar, E.PrimExpr]:
        """Index (from 0) of every iter var computable from the given leaf values."""
        idx = dict(leaf_values)
        for rel in reversed(self.stage.relations):
            if isinstance(rel, Split):
                if rel.outer in idx and rel.inner in idx:
                    idx[rel.parent] = simplify(E.Add(
                        a=E.Mul(a=idx[rel.outer], b=self.extent[rel.inner]), b=idx[rel.inner]))
            elif isinstance(rel, Fuse) and rel.fused in idx:
                inner_ext = self.extent[rel.inner]
                idx[rel.outer] = simplify(E.FloorDiv(a=idx[rel.fused], b=inner_ext))
                idx[rel.inner] = simplify(E.FloorMod(a=idx[rel.fused], b=inner_ext))
        return idx

    def root_values(self, idx: dict[IterVar, E.PrimExpr]) -> dict[IterVar, E.PrimExpr]:
        return {iv: simplify(E.Add(a=r.min, b=idx[iv]))
                for iv, r in self.roots.items() if iv in idx}

    def guards(self, idx: dict[IterVar, E.PrimExpr]) -> list[E.PrimExpr]:
        """Conditions that keep the body inside the domain (as TVM's `likely` checks)."""
        conds: list[E.PrimExpr] = []
        for rel in self.stage.relations:
            if isinstance(rel, Split) and rel.parent in idx and not self.divides(rel):
                conds.append(E.LT(a=idx[rel.parent], b=self.extent[rel.parent]))
        for iv, r in self.roots.items():
            if iv not in idx or iv.dom is None:
                continue
            value = E.Add(a=r.min, b=idx[iv])
            if r.check_lo:
                conds.append(E.GE(a=value, b=iv.dom.min))
            if r.check_hi:
                conds.append(E.LT(a=value, b=E.Add(a=iv.dom.min, b=iv.dom.extent)))
        out = []
        for cond in conds:
            cond = simplify(cond)
            if not (isinstance(cond, E.IntImm) and cond.value):
                out.append(cond)
        return out
