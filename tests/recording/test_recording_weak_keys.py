"""The snapshot recorder recognises a module state it printed by its functions' identity
without keeping old modules (and their weights) alive."""

from __future__ import annotations

import gc
import weakref

import numpy as np

from engine import relay
from engine.ir import IRModule
from explorer.runs.recording import SnapshotRecorder, module_key
from explorer.store import Store


def module(scale: float) -> IRModule:
    x = relay.var("x", shape=(4, 4))
    weight = relay.const(np.full((4, 4), scale, dtype="float32"))
    return IRModule.from_expr(relay.Function([x], relay.multiply(x, weight)))


def test_same_functions_reuse_the_snapshot_without_printing() -> None:
    recorder = SnapshotRecorder(Store(":memory:"), "run")
    mod = module(2.0)
    first = recorder.record(mod)
    again = recorder.record(IRModule(dict(mod.functions)))  # a new module, same functions
    assert first.printed and not again.printed and again.id == first.id
    assert recorder.num_printed == 1


def test_old_modules_are_not_kept_alive() -> None:
    recorder = SnapshotRecorder(Store(":memory:"), "run")
    mod = module(3.0)
    recorder.record(mod)
    gone = weakref.ref(mod["main"])
    del mod
    gc.collect()
    assert gone() is None


def test_a_key_whose_functions_died_is_not_trusted() -> None:
    recorder = SnapshotRecorder(Store(":memory:"), "run")
    old = module(1.0)
    snap = recorder.record(old)
    fresh = module(5.0)
    # As if `fresh`'s function had been given the id of `old`'s after that one died.
    recorder._recent[module_key(fresh)] = (snap, recorder._recent[snap.key][1])
    del old
    gc.collect()
    again = recorder.record(fresh)
    assert again.printed and again.id != snap.id
