"""Numerics per pass: the error each pass adds, the first pass that broke numerics, and
the bisection within it.

`PassNumerics` is the RecordingInstrument's numerics hook. For every finished pass it
measures the after snapshot against the imported model (`max_abs_err`, `ok`) and against
the snapshot before the pass (`step_max_abs_err`, `step_ok`): a pass `introduced` a
break when its own step is wrong, or when it took a correct module to a wrong one, and
no pass nested in it did (a Sequential is not blamed for its child). So after one bad
pass only that pass is marked, not every later one nor the Sequentials around it. Outputs are cached per
snapshot (a pass that changes nothing costs no evaluation).

`analyze_break` then describes the first break (`NumericsBreak`): the frontend layers
whose values drifted between its before and after snapshots, the nodes that carry them,
and the bisection over the pass's rewrites (engine.transform.bisect). The bisection
replays the run's own passes on the module before the break, skipping every pass up to
it (`Replay`), so the pass runs exactly as configured in the pipeline, and reports the
one rewrite after which the output is wrong.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from explorer.compiler import (
    IRModule,
    NumericsChecker,
    PassContext,
    PassInstrument,
    transform,
    weight_bytes,
)
from explorer.protocol import (
    BisectRewrite,
    Numerics,
    NumericsBisect,
    NumericsBreak,
    RunOptions,
)
from explorer.protocol import numerics as numerics_payload

NUMERICS_WEIGHT_LIMIT = 2_000_000_000
"""The most weight bytes a model may have for its numerics to be checked (the app's
NUMERICS_WEIGHT_LIMIT, `--numerics-limit GB`): a check evaluates the whole model on the
CPU with its weights in memory, at every pass, and the tensor inspector does too, so a
multi-GB model (a 7B decoder's 13 GB) is explored without them."""


def numerics_refusal(mod: IRModule, params: dict[str, Any], limit: int) -> str | None:
    """Why the numerics of `mod` are not checked (its weights are over `limit` bytes), or
    None; the weights are measured from their shapes, never read."""
    size = weight_bytes(mod, params)
    if size <= limit:
        return None
    return (f"the model's weights are {size / 1e9:.2f} GB, over the numerics check's limit of "
            f"{limit / 1e9:.2f} GB (each checked pass evaluates the whole model with its weights "
            "in memory); raise the limit with --numerics-limit GB (NUMERICS_WEIGHT_LIMIT) to "
            "check it anyway")


KEEP_OUTPUTS = 8
"""Snapshots whose outputs are kept for the next pass's step check."""

MAX_LAYERS = 50


@dataclass(slots=True)
class Break:
    """The first pass that introduced a numerics break, with its two modules."""

    index: int
    name: str
    before_id: int
    after_id: int
    before: IRModule
    after: IRModule
    numerics: Numerics


@dataclass(slots=True)
class _Evaluated:
    outputs: list[np.ndarray] | None  # None: the snapshot could not be evaluated
    against_reference: dict[str, Any]


class PassNumerics:
    """The per-pass numerics check of one run (see module docstring)."""

    def __init__(self, checker: NumericsChecker) -> None:
        self.checker = checker
        self.first_break: Break | None = None
        self._introduced: list[int] = []  # indexes of the passes that introduced a break
        self._evaluated: OrderedDict[int, _Evaluated] = OrderedDict()

    def after_pass(self, index: int, name: str, before: tuple[int, IRModule],
                   after: tuple[int, IRModule]) -> Numerics:
        """The numerics of one pass: its after snapshot against the reference and against
        its before snapshot; remembers the first pass that introduced a break."""
        (before_id, before_mod), (after_id, after_mod) = before, after
        new = self._evaluate(after_id, after_mod)
        result = _payload(new.against_reference)
        if after_id == before_id:
            return _with_step(result, 0.0, True, False)
        old = self._evaluate(before_id, before_mod)
        step_err, step_ok = self._step(old, new)
        introduced = (not step_ok or (bool(old.against_reference["ok"]) and not result["ok"])) \
            and not any(i > index for i in self._introduced)  # a pass inside this one did
        if introduced:
            self._introduced.append(index)
        result = _with_step(result, step_err, step_ok, introduced)
        if introduced and self.first_break is None:
            self.first_break = Break(index, name, before_id, after_id, before_mod, after_mod,
                                     result)
        return result

    def _step(self, old: _Evaluated, new: _Evaluated) -> tuple[float | None, bool]:
        if old.outputs is None:  # nothing to compare with: not this pass's doing
            return None, True
        if new.outputs is None:
            return None, False
        found = self.checker.compare(new.outputs, old.outputs)
        return found["max_abs_err"], bool(found["ok"])

    def _evaluate(self, snap_id: int, mod: IRModule) -> _Evaluated:
        hit = self._evaluated.get(snap_id)
        if hit is not None:
            self._evaluated.move_to_end(snap_id)
            return hit
        try:
            outputs = self.checker.outputs(mod)
        except Exception as exc:  # an unevaluable snapshot is a numerics failure, reported
            hit = _Evaluated(None, {"max_abs_err": None, "ok": False,
                                    "error": f"{type(exc).__name__}: {exc}"})
        else:
            hit = _Evaluated(outputs, self.checker.compare(outputs))
        self._evaluated[snap_id] = hit
        if len(self._evaluated) > KEEP_OUTPUTS:
            self._evaluated.popitem(last=False)
        return hit

    def broken(self, before: IRModule) -> Any:
        """A predicate for the bisection: does a pass result differ from `before`'s
        outputs beyond tolerance (or fail to evaluate)?"""
        want = self.checker.outputs(before)

        def is_broken(mod: IRModule) -> bool:
            try:
                got = self.checker.outputs(mod)
            except Exception:  # an unevaluable result is broken
                return True
            return not self.checker.compare(got, want)["ok"]

        return is_broken


def _with_step(result: Numerics, err: float | None, ok: bool, introduced: bool) -> Numerics:
    result["step_max_abs_err"] = err
    result["step_ok"] = ok
    result["introduced"] = introduced
    return result


def _payload(found: dict[str, Any]) -> Numerics:
    return numerics_payload(max_abs_err=found["max_abs_err"], ok=bool(found["ok"]),
                            error=found.get("error"), quantized="max_lsb_err" in found,
                            max_lsb_err=found.get("max_lsb_err"))


# --- the first break: layers, nodes, bisection -------------------------------------------------
@dataclass(frozen=True, slots=True)
class PassTree:
    """The passes a run started, by index: each one's parent (None at the top level)."""

    parents: dict[int, int | None]

    @staticmethod
    def of(records: Sequence[Any]) -> PassTree:
        """From the recorder's pass records (index, parent)."""
        return PassTree({r.index: r.parent for r in records})

    def ancestors(self, index: int) -> set[int]:
        found: set[int] = set()
        parent = self.parents.get(index)
        while parent is not None:
            found.add(parent)
            parent = self.parents.get(parent)
        return found

    def subtree_size(self, index: int) -> int:
        """The pass and every pass that ran inside it."""
        return 1 + sum(1 for i in self.parents if i > index and index in self.ancestors(i))


class ReplayDone(Exception):
    """Raised by `StopAfter` once the target pass has run: carries its result."""

    def __init__(self, mod: IRModule) -> None:
        super().__init__("replay done")
        self.mod = mod


class StopAfter(PassInstrument):
    """Numbers passes as the RecordingInstrument does (in start order, nested ones
    included) and stops the pipeline right after pass `target` (ReplayDone)."""

    def __init__(self, target: int) -> None:
        super().__init__()
        self.target = target
        self.next_index = 0
        self.running: list[int] = []

    def run_before_pass(self, mod: IRModule, info: Any) -> None:
        self.running.append(self.next_index)
        self.next_index += 1

    def run_after_pass(self, mod: IRModule, info: Any) -> None:
        if self.running and self.running.pop() == self.target:
            raise ReplayDone(mod)

    def run_after_pass_failed(self, mod: IRModule, info: Any, exc: BaseException) -> None:
        if self.running:
            self.running.pop()


class Replay(StopAfter):
    """StopAfter that also skips every pass before the target, except the Sequentials
    around it (skipping a pass skips its number and those of the passes inside it): run
    on the module before the target, it runs the target alone, configured as in the
    pipeline."""

    def __init__(self, target: int, tree: PassTree) -> None:
        super().__init__(target)
        self.tree = tree
        self.around = tree.ancestors(target) | {target}

    def should_run(self, mod: IRModule, info: Any) -> bool:
        index = self.next_index
        if index in self.around or self.target in self.tree.ancestors(index):
            return True
        self.next_index += self.tree.subtree_size(index)
        return False


def run_until(mod: IRModule, stages: Sequence[Any], ctx: PassContext) -> IRModule:
    """Apply `stages` under `ctx` (whose instruments include a StopAfter) until it stops."""
    try:
        with ctx:
            for stage in stages:
                mod = stage(mod)
    except ReplayDone as done:
        return done.mod
    raise LookupError("replaying the run did not reach the pass it was asked for")


def replay_apply(stages: Sequence[Any], options: RunOptions, brk: Break, tree: PassTree
                 ) -> transform.bisect.Apply:
    """`apply(limit)` for the bisection: the run's passes replayed on the module before
    the break, only the broken pass running, with its first `limit` rewrites allowed."""
    config = {transform.bisect.LIMIT_KEY: 0, transform.bisect.PASS_KEY: brk.name}

    def apply(limit: int) -> tuple[IRModule, list[Any]]:
        ctx = PassContext(opt_level=options.opt_level, required_pass=options.required_pass,
                          disabled_pass=options.disabled_pass,
                          instruments=[Replay(brk.index, tree)],
                          config={**config, transform.bisect.LIMIT_KEY: limit})
        result = run_until(brk.before, stages, ctx)
        assert ctx.rewrite_counter is not None
        return result, ctx.rewrite_counter.log

    return apply


def analyze_break(brk: Break, numerics: PassNumerics, apply: transform.bisect.Apply | None,
                  check: Callable[[], None] = lambda: None) -> NumericsBreak:
    """The description of the first break (see module docstring); `apply` None: no
    bisection (the layers and nodes only). `check()` raises to stop (a cancelled run): it
    is called before each run of the pass, and its exception is never taken for a failed
    bisection."""
    checker = numerics.checker
    try:
        layers = checker.drifted_between(brk.before, brk.after, MAX_LAYERS)
        nodes = checker.nodes_naming(brk.after, layers)
    except Exception:  # best effort, as the bisection: the break itself stays named
        layers, nodes = [], []
    return NumericsBreak(pass_name=brk.name, pass_index=brk.index, before=brk.before_id,
                         after=brk.after_id, max_abs_err=brk.numerics.get("step_max_abs_err"),
                         layers=layers, nodes=nodes,
                         bisect=None if apply is None else bisect(brk, numerics, apply, check))


def bisect(brk: Break, numerics: PassNumerics, apply: transform.bisect.Apply,
           check: Callable[[], None]) -> NumericsBisect:
    def checked(limit: int) -> tuple[IRModule, list[Any]]:
        check()
        return apply(limit)

    try:
        found = transform.bisect_rewrites(checked, numerics.broken(brk.before))
    except Exception as exc:  # best effort: the break itself stays reported
        check()
        return NumericsBisect(total=0, runs=0, rewrite=None, broken_at_zero=False,
                              error=f"{type(exc).__name__}: {exc}")
    rewrite = None if found.culprit is None else BisectRewrite(
        index=found.culprit.index, node_id=found.culprit.node_id, op=found.culprit.op,
        layers=list(found.culprit.layers), applied=found.culprit.applied)
    return NumericsBisect(total=found.total, runs=found.runs, rewrite=rewrite,
                          broken_at_zero=found.broken_at_zero, error=None)
