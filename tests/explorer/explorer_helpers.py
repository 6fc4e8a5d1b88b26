"""Helpers of the explorer tests: a small Relay-text model with layer spans, test
passes registered in the engine's pass registry (rebuilding, no-op, gated, failing,
sleeping, crashing), and socket helpers that wait for run events.

Runs execute in worker processes: the test app names this module in RUN_PLUGINS, so
each worker imports it (registering the passes), and the gate is a ProcessFlag."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numerics_plugin  # noqa: F401  (registers the numerics tests' user pass)
import pytest

from engine.ir.expr import Call, Constant, Expr
from engine.relay.expr_functor import ExprMutator
from engine.transform import module_pass, register_pass
from explorer.protocol import NAMESPACE, RUN_EVENT
from explorer.testing import ProcessFlag

MODEL_TEXT = """#[version = "0.0.5"]
def @main(%x: Tensor[(1, 4), float32]) {
  %0 = add(%x, 1f /* fc1.bias */) /* fc1 */;
  %1 = nn.relu(%0) /* relu1 */;
  %2 = multiply(%1, 2f /* scale.factor */) /* scale */;
  nn.relu(%2) /* relu2 */
}
"""

PLUGIN = "explorer_helpers"
GATE = ProcessFlag("explorer-gate")
REACHED = ProcessFlag("explorer-gate-reached")


class _Rebuild(ExprMutator):
    """Rebuilds every call (same op, args and span; a fresh node id)."""

    def visit_call(self, call: Call) -> Expr:
        new = super().visit_call(call)
        return new if new is not call else Call(call.op, call.args, call.attrs,
                                                call.type_args, span=call.span)


def _each_function(mutator: type[ExprMutator]) -> Callable[[Any, Any], Any]:
    """A module pass body applying a fresh `mutator` to every function."""
    def body(mod: Any, ctx: Any) -> Any:
        new = mod.shallow_copy()
        for gv, fn in mod.items():
            new[gv] = mutator().visit(fn)
        return new
    return body


_rebuild = _each_function(_Rebuild)


def _noop(mod: Any, ctx: Any) -> Any:
    return mod


def _gate(mod: Any, ctx: Any) -> Any:
    REACHED.set()
    if not GATE.wait(timeout=20):
        raise TimeoutError("the test never opened the gate")
    return _rebuild(mod, ctx)


def _fail(mod: Any, ctx: Any) -> Any:
    raise ValueError("deliberate failure in a test pass")


def _sleep(mod: Any, ctx: Any) -> Any:
    time.sleep(0.05)
    return mod


def _exit(mod: Any, ctx: Any) -> Any:
    os._exit(3)  # the interpreter ends at once, as in a fatal error of a C extension


def _sigkill(mod: Any, ctx: Any) -> Any:
    os.kill(os.getpid(), signal.SIGKILL)  # as the kernel's OOM killer would
    return mod


def _hang(mod: Any, ctx: Any) -> Any:
    REACHED.set()
    while True:  # never returns, never looks at the cancel flag
        time.sleep(0.05)


def _stubborn(mod: Any, ctx: Any) -> Any:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # only SIGKILL ends it
    return _hang(mod, ctx)


TEST_PASSES: dict[str, Callable[[Any, Any], Any]] = {
    "ExplorerTestRebuild": _rebuild, "ExplorerTestNoop": _noop, "ExplorerTestGate": _gate,
    "ExplorerTestFail": _fail, "ExplorerTestSleep": _sleep, "ExplorerTestExit": _exit,
    "ExplorerTestSigkill": _sigkill, "ExplorerTestHang": _hang,
    "ExplorerTestStubborn": _stubborn,
}


def _register() -> None:
    for name, fn in TEST_PASSES.items():
        def factory(fn: Callable[[Any, Any], Any] = fn, name: str = name) -> Any:
            return module_pass(fn, opt_level=0, name=name)
        register_pass(name, factory, override=True)


_register()


def upload(client: Any, text: str = MODEL_TEXT, name: str = "model.relay") -> dict[str, Any]:
    import io

    resp = client.post("/api/sessions", data={"file": (io.BytesIO(text.encode()), name)},
                       content_type="multipart/form-data")
    assert resp.status_code == 201, resp.get_json()
    return resp.get_json()["session"]


def run_events(sock: Any, run_id: str | None = None) -> list[dict[str, Any]]:
    """The run_event payloads received so far (optionally of one run)."""
    out = []
    for msg in sock.get_received(NAMESPACE):
        if msg["name"] == RUN_EVENT:
            event = msg["args"][0]
            if run_id is None or event["run_id"] == run_id:
                out.append(event)
    return out


def collect_until(sock: Any, done: Callable[[list[dict[str, Any]]], bool],
                  timeout: float = 20.0) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        events.extend(run_events(sock))
        if done(events):
            return events
        time.sleep(0.01)
    raise AssertionError(f"timed out; received: {[e['type'] for e in events]}")


def terminal(events: list[dict[str, Any]]) -> bool:
    return any(e["type"] in ("run_finished", "run_failed", "run_cancelled") for e in events)


def start(sock: Any, session_id: str, **options: Any) -> str:
    ack = sock.emit("start_run", {"session_id": session_id, "options": options},
                    namespace=NAMESPACE, callback=True)
    assert "run_id" in ack, ack
    return ack["run_id"]


def subscribe(sock: Any, run_id: str, since: int = 0) -> dict[str, Any]:
    return sock.emit("subscribe", {"run_id": run_id, "since": since}, namespace=NAMESPACE,
                     callback=True)


def run_leaves(sock: Any, session_id: str, **options: Any) -> tuple[list[dict], dict]:
    """Run to the end (it must finish): the leaf passes' pass_finished data, the summary."""
    run_id = start(sock, session_id, **options)
    subscribe(sock, run_id)
    events = collect_until(sock, terminal, timeout=120)
    assert events[-1]["type"] == "run_finished", events[-1]
    leaves = [e["data"] for e in events if e["type"] == "pass_finished" and e["data"]["leaf"]]
    return leaves, events[-1]["data"]["summary"]


class _Perturb(ExprMutator):
    """Changes the weights of the `down.conv` layer: numerics break there and downstream."""

    def visit_constant(self, const: Any) -> Any:
        if any(n.startswith("down.conv.") for n in const.span.source_names()):
            return Constant(const.data.numpy() * -4.0 + 0.5, span=const.span)
        return const


def _register_mutator(name: str, mutator: type[ExprMutator]) -> None:
    body = _each_function(mutator)
    register_pass(name, lambda: module_pass(body, opt_level=0, name=name), override=True)


_register_mutator("ExplorerTestPerturb", _Perturb)


class _ShiftZeroPoint(ExprMutator):
    """Lowers every qnn.dequantize's zero point by one: its output grows by one step."""

    def visit_call(self, call: Call) -> Expr:
        new = super().visit_call(call)
        if not (isinstance(new, Call) and getattr(new.op, "name", "") == "qnn.dequantize"):
            return new
        zp = new.args[2]
        assert isinstance(zp, Constant)
        shifted = Constant(zp.data.numpy() - 1, span=zp.span)
        return Call(new.op, (new.args[0], new.args[1], shifted), new.attrs, new.type_args,
                    span=new.span)


_register_mutator("ExplorerTestShiftZeroPoint", _ShiftZeroPoint)


NEEDS_NODE = pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
RUN_MODEL_JS = Path(__file__).resolve().parents[2] / "static" / "src" / "run-model.js"


def run_model_script(script: str, *args: str) -> Any:
    """Run an ES-module `script` in node, static/src/run-model.js's URL its first argument
    and `args` the next ones; what it printed, read as JSON."""
    done = subprocess.run(["node", "--input-type=module", "-e", script, RUN_MODEL_JS.as_uri(),
                           *args], capture_output=True, text=True, timeout=60, check=True)
    return json.loads(done.stdout)
