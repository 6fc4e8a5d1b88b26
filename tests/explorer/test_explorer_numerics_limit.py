"""The numerics check's weight limit: a model whose weights are over NUMERICS_WEIGHT_LIMIT
(`--numerics-limit GB`) runs without the check, and numerics_unavailable says why; the tensor
inspector refuses it by name. The weights are measured from their shapes, never read, so a
7B decoder opened from its path (memory-mapped weights) with the page's default options
(numerics on) stays within its memory budget instead of evaluating 13 GB at every pass."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from explorer_helpers import PLUGIN, run_leaves
from numerics_plugin import PIPELINE, conv_chain_onnx

from engine import relay
from engine.ir import IRModule
from engine.runtime.lazy import deferred
from engine.runtime.ndarray import NDArray
from explorer import socketio_of
from explorer.cli import main
from explorer.compiler import weight_bytes
from explorer.protocol import NAMESPACE
from explorer.testing import app_for_tests


@pytest.fixture(scope="module")
def conv_chain(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return conv_chain_onnx(tmp_path_factory.mktemp("limit") / "conv_chain.onnx")


def test_weight_bytes_come_from_shapes_not_bytes() -> None:
    calls: list[int] = []

    def compute() -> np.ndarray:
        calls.append(1)
        return np.zeros((1 << 14, 1 << 14), np.float32)

    big = relay.Constant(NDArray(deferred((1 << 14, 1 << 14), "float32", "big", compute)))
    x = relay.var("x", shape=(1, 1 << 14))
    w = relay.var("w", shape=(16, 1 << 14))
    body = relay.nn.dense(relay.add(x, relay.const(np.ones((1, 1 << 14), np.float16))), w)
    mod = IRModule.from_expr(relay.Function([x, w], relay.add(body, relay.sum(big))))
    params = {"w": NDArray(np.zeros((16, 1 << 14), np.float32))}
    assert weight_bytes(mod, params) == (1 << 30) + 2 * (1 << 14) + 4 * 16 * (1 << 14)
    assert calls == []


@pytest.fixture()
def limited(tmp_path: Path) -> Any:
    with app_for_tests(tmp_path / "data", PLUGIN, NUMERICS_WEIGHT_LIMIT=1000) as app:
        yield app


def test_a_model_over_the_limit_runs_without_the_check(limited: Any, conv_chain: Path) -> None:
    client = limited.test_client()
    sock = socketio_of(limited).test_client(limited, namespace=NAMESPACE)
    resp = client.post("/api/sessions", data={"file": (io.BytesIO(conv_chain.read_bytes()),
                                                       conv_chain.name)},
                       content_type="multipart/form-data")
    assert resp.status_code == 201, resp.get_json()
    session = resp.get_json()["session"]
    leaves, summary = run_leaves(sock, session["id"], check_numerics=True, build=False,
                                 passes=PIPELINE)
    assert leaves and all(leaf["numerics"] is None for leaf in leaves)
    events = client.get(f"/api/runs/{summary['id']}/events").get_json()["events"]
    types = [e["type"] for e in events]
    assert types.index("run_started") < types.index("numerics_unavailable") \
        < types.index("pass_finished")
    unavailable = next(e["data"] for e in events if e["type"] == "numerics_unavailable")
    assert "over the numerics check's limit of 0.00 GB" in unavailable["message"]
    assert "the model's weights are" in unavailable["message"]
    snapshot = summary["final_snapshot"]
    node = next(e["node_id"] for e in client.get(f"/api/snapshots/{snapshot}").get_json()
                ["snapshot"]["source_map"] if e["op"] == "nn.conv2d")
    refused = client.get(f"/api/runs/{summary['id']}/tensors/{snapshot}/{node}")
    assert refused.status_code == 422
    error = refused.get_json()["error"]
    assert error["code"] == "too_large" and "numerics check's limit" in error["message"]
    sock.disconnect(namespace=NAMESPACE)


def test_the_cli_says_why_numerics_were_not_checked(conv_chain: Path, capsys: Any) -> None:
    assert main(["run", str(conv_chain), "--no-build", "--check-numerics",
                 "--numerics-limit", "0.000001"]) == 0
    out = capsys.readouterr().out
    assert "numerics not checked: the model's weights are 0.00 GB, over the numerics " \
           "check's limit of 0.00 GB" in out
    assert main(["run", str(conv_chain), "--no-build", "--check-numerics"]) == 0
    assert "passes checked against the imported model" in capsys.readouterr().out
