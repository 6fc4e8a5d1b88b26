"""Bisection within a pass: a counter of rewrite applications (LLVM's `-opt-bisect-limit`,
narrowed to one pass).

Every rewriting pass asks `allow_rewrite(node)` (engine.transform.rewrites) once at each place it is about to
replace an expression (fold a constant, simplify a call, absorb a scale, alter a
layout, fuse a group, merge a duplicate); a user pass does the same through this
public helper. Without the config keys below it answers True at the cost of one
attribute read. With them, the context's `RewriteCounter` numbers the rewrites of
the targeted pass from 1 in each run of it, lets the first `limit` through, refuses
the rest (the pass then keeps the expression as it was), and logs each one with
the node, op and layers it touched:

    with PassContext(opt_level=3, config={"relay.bisect.pass": "FoldScaleAxis",
                                          "relay.bisect.limit": 7}) as ctx:
        mod = FoldScaleAxis()(mod)
    ctx.rewrite_counter.log[6]   # the 7th rewrite: where it was, whether it applied

`relay.bisect.pass` names the pass counted (a Sequential counts the rewrites of the
passes inside it); empty means every pass, each counted on its own. `relay.bisect.limit`
is the number let through (-1: all, only counted and logged). Binary search over the
limit finds the one rewrite after which the pass's output goes wrong.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from engine.transform.config import register_pass_config
from engine.transform.frames import PassFrame

if TYPE_CHECKING:
    from engine.ir.expr import Expr

LIMIT_KEY = "relay.bisect.limit"
PASS_KEY = "relay.bisect.pass"
LOG_LIMIT = 100_000
"""Rewrites logged per counter at most (the count goes on past it)."""

register_pass_config(LIMIT_KEY, int, -1,
                     "apply only the first N rewrites of the pass named by relay.bisect.pass "
                     "(-1: all of them; each rewrite is still counted and logged)")
register_pass_config(PASS_KEY, str, "",
                     "the pass whose rewrites relay.bisect.limit counts (empty: every pass)")


@dataclass(frozen=True, slots=True)
class Rewrite:
    """One rewrite a pass asked to apply: its number in that pass run (1-based), the pass,
    the expression it replaces (node id, op, frontend layers) and whether it was let through."""

    index: int
    pass_name: str
    node_id: int
    op: str | None
    layers: tuple[str, ...]
    applied: bool

    def to_json(self) -> dict[str, Any]:
        return {"index": self.index, "pass": self.pass_name, "node_id": self.node_id,
                "op": self.op, "layers": list(self.layers), "applied": self.applied}


@dataclass(slots=True)
class RewriteCounter:
    """The bisection state of one PassContext (see the module docstring)."""

    limit: int
    pass_name: str
    log: list[Rewrite] = field(default_factory=list)
    total: int = 0  # rewrites asked for, over every counted pass run

    @staticmethod
    def from_config(config: dict[str, Any]) -> RewriteCounter | None:
        """The counter the config asks for, or None (no key set: nothing is counted)."""
        if LIMIT_KEY not in config and PASS_KEY not in config:
            return None
        return RewriteCounter(int(config.get(LIMIT_KEY, -1)), str(config.get(PASS_KEY, "")))

    def allow(self, frames: list[PassFrame], node: Expr) -> bool:
        frame = self._counted_frame(frames)
        if frame is None:
            return True
        frame.rewrites += 1
        number = frame.rewrites
        self.total += 1
        applied = self.limit < 0 or number <= self.limit
        if len(self.log) < LOG_LIMIT:
            self.log.append(_rewrite(number, frame.name, node, applied))
        return applied

    def _counted_frame(self, frames: list[PassFrame]) -> PassFrame | None:
        if not frames:
            return None
        if not self.pass_name:
            return frames[-1]
        for frame in reversed(frames):
            if frame.name == self.pass_name:
                return frame
        return None


def _rewrite(number: int, pass_name: str, node: Expr, applied: bool) -> Rewrite:
    op = getattr(node, "op", None)
    op_name = getattr(op, "name", None)
    return Rewrite(number, pass_name, int(getattr(node, "node_id", 0)),
                   op_name if isinstance(op_name, str) else None,
                   tuple(node.span.source_names()), applied)


@dataclass(frozen=True, slots=True)
class BisectResult:
    """What a bisection over the rewrite limit found: the rewrites the pass asks for in
    all, how many runs of it the search took, and the first rewrite after which its
    output is wrong (None: the full pass is fine, or it is wrong with no rewrite at all,
    `broken_at_zero`)."""

    total: int
    runs: int
    culprit: Rewrite | None
    broken_at_zero: bool = False


Apply = Callable[[int], tuple[Any, list[Rewrite]]]
"""`apply(limit)`: the pass run with relay.bisect.limit = `limit` (-1: all): its result
and the context's rewrite log."""


def bisect_rewrites(apply: Apply, broken: Callable[[Any], bool]) -> BisectResult:
    """Binary search for the smallest limit N whose result is `broken`: the N-th rewrite
    is the one that breaks it (log2(total) + 2 runs of the pass)."""
    full, log = apply(-1)
    runs = 1
    if not broken(full):
        return BisectResult(len(log), runs, None)
    zero, _ = apply(0)
    runs += 1
    if broken(zero):
        return BisectResult(len(log), runs, None, broken_at_zero=True)
    good, bad = 0, len(log)  # invariant: limit `good` is fine, limit `bad` is broken
    while bad - good > 1:
        mid = (good + bad) // 2
        result, _ = apply(mid)
        runs += 1
        if broken(result):
            bad = mid
        else:
            good = mid
    return BisectResult(len(log), runs, log[bad - 1] if log else None)


__all__ = ["LIMIT_KEY", "PASS_KEY", "Apply", "BisectResult", "Rewrite", "RewriteCounter",
           "bisect_rewrites"]
