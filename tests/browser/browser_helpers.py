"""Helpers of the browser tests: API calls against the live server, waiting for runs,
small ONNX models built with onnx.helper, and the pipeline gate's run plugin.

Runs execute in worker processes: the test server names this module in RUN_PLUGINS, so
each worker imports it, registering the gate's passes, and calls `wrap_passes`, which
reads the gate's state from ProcessFlags the tests set (see conftest.PipelineGate)."""

from __future__ import annotations

import json
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numerics_plugin
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from engine import transform
from explorer.testing import ProcessFlag

TERMINAL = {"run_finished", "run_failed", "run_cancelled"}
# The page shows a run that has ended (the status is unset until the page's stream has
# its first answer, so "not running" would be true too early).
RUN_ENDED = ("['finished', 'failed', 'cancelled', 'interrupted']"
             ".includes(document.querySelector('[data-testid=run-status]')?.dataset.status)")
PLUGIN = "browser_helpers"
GATE_ARMED = ProcessFlag("browser-gate-armed")      # insert the blocking pass
GATE_FAILING = ProcessFlag("browser-gate-failing")  # append the failing pass
GATE_OPENED = ProcessFlag("browser-gate-opened")    # the blocking pass may return
GATE_REACHED = ProcessFlag("browser-gate-reached")  # a run is held by the blocking pass


@transform.module_pass(opt_level=0, name="BrowserTestGate")
def gate_pass(mod: Any, ctx: Any) -> Any:
    GATE_REACHED.set()
    if not GATE_OPENED.wait(timeout=60):
        raise TimeoutError("the browser test never released the pipeline gate")
    return mod


@transform.module_pass(opt_level=0, name="BrowserTestFailure")
def failing_pass(mod: Any, ctx: Any) -> Any:
    raise ValueError("deliberate failure of the browser tests' pass")


def wrap_passes(passes: list[Any], options: Any) -> list[Any]:
    """The run plugin hook: the gate's passes around every run's passes while armed."""
    if GATE_ARMED.is_set():
        # InferType first, so passes have finished while the gate holds the run open
        # (whatever the later engine passes do).
        return [transform.get_pass("InferType"), gate_pass, *passes]
    if GATE_FAILING.is_set():
        return [*passes, failing_pass]
    return numerics_plugin.with_bug(passes)


def api_get(base: str, path: str) -> Any:
    with urllib.request.urlopen(f"{base}{path}", timeout=30) as resp:
        return json.loads(resp.read())


def upload(base: str, path: Path) -> dict[str, Any]:
    """POST /api/sessions with a multipart file; returns the Session."""
    boundary = "----irx-browser-test"
    body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; "
            f"filename=\"{path.name}\"\r\nContent-Type: application/octet-stream\r\n\r\n").encode()
    body += path.read_bytes() + f"\r\n--{boundary}--\r\n".encode()
    req = urllib.request.Request(f"{base}/api/sessions", data=body, method="POST",
                                 headers={"Content-Type": f"multipart/form-data; boundary={boundary}"})
    with urllib.request.urlopen(req, timeout=60) as resp:
        return json.loads(resp.read())["session"]


def run_events(base: str, run_id: str) -> list[dict[str, Any]]:
    return api_get(base, f"/api/runs/{run_id}/events?since=0")["events"]


def wait_run_done(base: str, run_id: str, timeout: float = 60) -> list[dict[str, Any]]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        events = run_events(base, run_id)
        if events and events[-1]["type"] in TERMINAL:
            return events
        time.sleep(0.1)
    raise TimeoutError(f"run {run_id} did not finish in {timeout}s")


def run_id_of(page: Any) -> str:
    """The run shown by the page (from its URL)."""
    page.wait_for_function("new URLSearchParams(location.search).get('run')")
    return page.evaluate("new URLSearchParams(location.search).get('run')")


def start_held_run(page: Any, server: str, model: Path, gate: Any) -> str:
    """Upload `model`, open its page and press Run with the pipeline gate armed: returns the
    run id once the run is held by the gate (release it with gate.release())."""
    session = upload(server, model)
    gate.arm()
    page.goto(f"/s/{session['id']}")
    page.get_by_test_id("run-button").click()
    run_id = run_id_of(page)
    assert gate.reached.wait(30), "the run never reached the gate"
    return run_id


def run_on_page(page: Any, server: str, quick: bool = False) -> tuple[str, list[dict[str, Any]]]:
    """Press Run on the session page (quick: no build, no numerics check) and wait until the
    run has ended and the page shows it: (run id, events)."""
    if quick:
        page.get_by_test_id("build").uncheck()
        page.get_by_test_id("check-numerics").uncheck()
    shown = page.evaluate("new URLSearchParams(location.search).get('run')")
    page.get_by_test_id("run-button").click()
    page.wait_for_function("(shown) => new URLSearchParams(location.search).get('run') !== shown", arg=shown)
    run_id = run_id_of(page)
    events = wait_run_done(server, run_id)
    page.wait_for_function(RUN_ENDED)
    return run_id, events


def run_checked(page: Any, server: str, session_id: str, timeout: float = 120) -> str:
    """Open the session's page, run its pipeline with the numerics check and no build, and
    wait for the run's end: its id."""
    page.goto(f"/s/{session_id}")
    page.get_by_test_id("build").uncheck()
    page.get_by_test_id("check-numerics").check()
    page.get_by_test_id("run-button").click()
    run_id = run_id_of(page)
    wait_run_done(server, run_id, timeout=timeout)
    return run_id


def mlp_with_names(path: Path, names: list[str]) -> Path:
    """A small MLP (Gemm/Relu/Gemm) whose node names are `names` (3 of them)."""
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.standard_normal((8, 16)).astype(np.float32), "w1"),
             numpy_helper.from_array(rng.standard_normal(16).astype(np.float32), "b1"),
             numpy_helper.from_array(rng.standard_normal((16, 4)).astype(np.float32), "w2"),
             numpy_helper.from_array(rng.standard_normal(4).astype(np.float32), "b2")]
    nodes = [helper.make_node("Gemm", ["x", "w1", "b1"], ["h1"], name=names[0]),
             helper.make_node("Relu", ["h1"], ["h2"], name=names[1]),
             helper.make_node("Gemm", ["h2", "w2", "b2"], ["y"], name=names[2])]
    graph = helper.make_graph(
        nodes, "named", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, path)
    return path


def editor_text(page: Any, side: str) -> str:
    """Text of the rendered lines of one diff side ("a" = before, "b" = after)."""
    return page.locator(f".cm-editor[data-side='{side}'] .cm-content").inner_text()


@contextmanager
def sized_page(browser: Any, server: str, width: int, height: int, timeout: float = 30_000
               ) -> Iterator[tuple[Any, list[str]]]:
    """A page of a fresh browser context at width x height on the test server, and the
    list its uncaught script errors go to; the context is closed afterwards."""
    context = browser.new_context(viewport={"width": width, "height": height}, base_url=server,
                                  bypass_csp=True)
    try:
        page = context.new_page()
        page.set_default_timeout(timeout)
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        yield page, errors
    finally:
        context.close()
