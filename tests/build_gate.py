"""A gate inside the build, for the tests of build progress and cancel (a run plugin).

Imported in a run's worker (as a plugin, or by a plugin), it wraps the TE compute of
`sigmoid`: while `BUILD_GATE_ARMED` is set, lowering a kernel with a sigmoid sets
`BUILD_GATE_REACHED` and waits until the run is cancelled (the cancel flag of the run's
BuildProgressInstrument) or the test sets `BUILD_GATE_OPENED`. So a test can cancel a
run mid-build, with kernels lowered before the gate and others after it, and know that
the cancel reached the worker while it was building.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from engine.ir.op import Op
from engine.relay.strategy.base import get_strategy, register_strategy
from engine.transform import PassContext
from explorer.runs.build_progress import BuildProgressInstrument
from explorer.testing import ProcessFlag

BUILD_GATE_ARMED = ProcessFlag("build-gate-armed")
BUILD_GATE_REACHED = ProcessFlag("build-gate-reached")
BUILD_GATE_OPENED = ProcessFlag("build-gate-opened")
GATED_OP = "sigmoid"
WAIT_S = 60.0


def arm() -> None:
    BUILD_GATE_REACHED.clear()
    BUILD_GATE_OPENED.clear()
    BUILD_GATE_ARMED.set()


def disarm() -> None:
    BUILD_GATE_ARMED.clear()
    BUILD_GATE_OPENED.set()


def _released() -> bool:
    cancels = [i.cancel for i in PassContext.current().instruments
               if isinstance(i, BuildProgressInstrument)]
    return BUILD_GATE_OPENED.is_set() or any(c.is_set() for c in cancels)


def _gated(compute: Callable[..., Any]) -> Callable[..., Any]:
    def gated(attrs: Any, inputs: Any, out_type: Any) -> Any:
        if BUILD_GATE_ARMED.is_set():
            BUILD_GATE_REACHED.set()
            deadline = time.monotonic() + WAIT_S
            while not _released():
                if time.monotonic() > deadline:
                    raise TimeoutError("the test never cancelled the run nor opened the gate")
                time.sleep(0.02)
        return compute(attrs, inputs, out_type)
    gated.build_gate = True  # type: ignore[attr-defined]
    return gated


def _install() -> None:
    strategy = get_strategy(Op.get(GATED_OP))
    assert strategy is not None
    if not getattr(strategy.compute, "build_gate", False):
        register_strategy(GATED_OP, replace(strategy, compute=_gated(strategy.compute)),
                          level=100)


_install()
