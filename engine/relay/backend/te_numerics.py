"""Numerics of lowered kernels: run a loop nest (engine.tir.eval) on random inputs and
compare with the interpreter's result for the fused Relay function."""

from __future__ import annotations

import numpy as np

from engine.relay.backend.te_compiler import LoweredFunc
from engine.relay.interpreter import Interpreter
from engine.te import Tensor
from engine.tir.eval import run


def _shape(t: Tensor) -> tuple[int, ...]:
    return tuple(int(d) for d in t.shape)


def random_input(t: Tensor, rng: np.random.Generator) -> np.ndarray:
    shape, dtype = _shape(t), np.dtype(t.dtype)
    if dtype.kind == "f":
        return rng.uniform(0.25, 1.5, shape).astype(dtype)  # in every unary op's domain
    if dtype.kind == "b":
        return rng.integers(0, 2, shape).astype(bool)
    return rng.integers(0, 3, shape).astype(dtype)


def _size(t: Tensor) -> int:
    return int(np.prod(_shape(t), dtype=np.int64))


def reference(low: LoweredFunc, inputs: list[np.ndarray]) -> list[np.ndarray]:
    value = Interpreter().apply(low.func, inputs)
    flat: list[np.ndarray] = []
    stack = [value]
    while stack:
        item = stack.pop(0)
        if isinstance(item, tuple):
            stack[:0] = list(item)
        else:
            flat.append(np.asarray(item))
    return flat


def evaluate(low: LoweredFunc, inputs: list[np.ndarray], snapshot: object = None
             ) -> list[np.ndarray]:
    outs = [np.zeros(_shape(t), dtype=np.dtype(t.dtype)) for t in low.outputs]
    consts = [data for _, data in low.constants]
    run(low.lower(snapshot)[low.name], *inputs, *consts, *outs)  # type: ignore[arg-type]
    return outs


def check_lowered(low: LoweredFunc, rng: np.random.Generator, max_elements: int = 4096,
                  snapshots: bool = False, rtol: float = 1e-4, atol: float = 1e-4) -> str:
    """"ok" when the kernel's loop nest computes the interpreter's result, else a skip
    reason; a mismatch raises AssertionError naming the kernel and snapshot."""
    if low.extern:
        return "skipped: extern stage"
    if any(_size(t) > max_elements for t in low.args):
        return "skipped: too large"
    inputs = [random_input(t, rng) for t in low.inputs]
    expected = reference(low, inputs)
    schedules = list(low.schedule.schedule_record) if snapshots else [None]
    for k, snap in enumerate(schedules):
        got = evaluate(low, inputs, snap)
        for g, e in zip(got, expected):
            np.testing.assert_allclose(g, e, rtol=rtol, atol=atol,
                                       err_msg=f"{low.name} snapshot {k}")
    return "ok"
