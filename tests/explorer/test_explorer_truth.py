"""One truth: a run records exactly the passes `relay.build` runs, in order, and the
kernels of its Schedules tab are those of the module it recorded last.

The reference is the engine's public API with nothing of the explorer: import the
file, `relay.build` under a PassContext with the same options and a PassInstrument
that lists the passes it sees. Every bench model (bench/make_models.py) is checked,
each imported once per test session."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

import engine as tvm
from engine import relay
from engine.instrument import PassInstrument
from explorer.compiler import print_snapshot
from explorer.hub import EventHub
from explorer.protocol import RunOptions
from explorer.runs.manager import RunManager
from explorer.sessions import SessionService
from explorer.store import Store

BENCH_MODELS = ["mlp", "resnet50", "mobilenetv2", "bert2", "bert2_ln17", "bert12"]
KERNEL_DEF = re.compile(r"^def @(\w+)\(", re.M)


class PassList(PassInstrument):
    """Every pass a PassContext runs: (name, depth in the pass tree), in start order."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[tuple[str, int]] = []
        self._depth = 0

    def run_before_pass(self, mod: Any, info: Any) -> None:
        self.seen.append((info.name, self._depth))
        self._depth += 1

    def run_after_pass(self, mod: Any, info: Any) -> None:
        self._depth -= 1


def reference_build(path: Path, options: RunOptions) -> tuple[list[tuple[str, int]], Any]:
    result = relay.frontend.load(str(path))
    passes = PassList()
    with tvm.transform.PassContext(opt_level=options.opt_level,
                                   disabled_pass=list(options.disabled_pass),
                                   instruments=[passes]):
        if options.build:
            lib = relay.build(result.mod, target="llvm", params=result.params)
            return passes.seen, lib
        relay.optimize(result.mod, "llvm", result.params)
    return passes.seen, None


def explorer_run(path: Path, options: RunOptions, tmp: Path) -> tuple[Store, str]:
    """A run as `explorer run` makes it (the Execution a worker runs, in this process)."""
    store = Store(":memory:")
    hub = EventHub(store)
    sessions = SessionService(store, tmp)
    session = sessions.create(path.name, path.read_bytes())
    return store, RunManager(store, hub, sessions).start_sync(session["id"], options)


def recorded_passes(events: list[dict[str, Any]]) -> list[tuple[str, int]]:
    return [(e["data"]["name"], e["data"]["depth"]) for e in events
            if e["type"] == "pass_started"]


def assert_same_as_relay_build(path: Path, options: RunOptions, tmp: Path) -> None:
    store, run_id = explorer_run(path, options, tmp)
    events = store.events(run_id)
    assert events[-1]["type"] == "run_finished", events[-1]
    expected, lib = reference_build(path, options)
    assert recorded_passes(events) == expected
    started = events[0]["data"]
    leaves = [(e["data"]["name"], e["data"]["depth"]) for e in events
              if e["type"] == "pass_finished" and e["data"]["leaf"]]
    planned = [(p["name"], p["depth"]) for p in started["plan"]]
    assert sorted(planned) == sorted(leaves) and started["num_passes_planned"] == len(leaves)
    final = store.snapshot(store.run(run_id)["final_snapshot"])["text"]
    last = max((e for e in events if e["type"] == "pass_finished"),
               key=lambda e: e["data"]["pass_index"] if e["data"]["depth"] == 0 else -1)
    assert store.run(run_id)["final_snapshot"] == last["data"]["after"]
    if lib is None:
        assert store.artifact(run_id, "schedules") is None
        return
    assert final == print_snapshot(lib.ir_mod)[0]
    kernels = [node["func_name"] for node in store.artifact(run_id, "schedules")]
    assert kernels and set(kernels) == set(KERNEL_DEF.findall(final)) - {"main"}
    assert set(kernels) == set(lib.get_lib())


@pytest.mark.slow
@pytest.mark.parametrize("name", BENCH_MODELS)
def test_a_run_records_the_passes_of_relay_build_and_its_kernels(onnx_model, name, tmp_path):
    assert_same_as_relay_build(onnx_model(name), RunOptions(), tmp_path)


@pytest.mark.parametrize("options", [
    RunOptions(opt_level=1),
    RunOptions(disabled_pass=("FuseOps",)),
    RunOptions(disabled_pass=("FoldConstant", "SimplifyExpr")),
    RunOptions(opt_level=0),
    RunOptions(build=False),
], ids=["O1", "no-FuseOps", "no-folding", "O0", "optimize-only"])
def test_every_option_records_what_relay_build_runs(onnx_model, options, tmp_path):
    assert_same_as_relay_build(onnx_model("mlp"), options, tmp_path)


def test_the_timeline_ends_with_lowering_and_the_final_module_holds_the_kernels(
        onnx_model, tmp_path):
    store, run_id = explorer_run(onnx_model("mlp"), RunOptions(), tmp_path)
    events = store.events(run_id)
    top = [e["data"]["name"] for e in events
           if e["type"] == "pass_started" and e["data"]["depth"] == 0]
    assert top == ["StandardPipeline", "LowerTE"]
    final = store.snapshot(store.run(run_id)["final_snapshot"])["text"]
    assert re.search(r"= @fused_nn_dense\w*\(%", final), final[:2000]  # a bare call, as TVM prints
