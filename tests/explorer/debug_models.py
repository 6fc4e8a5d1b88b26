"""Models and runs of the debugging tests (reproducers, remarks, the static report)."""

from __future__ import annotations

import io
from typing import Any

import numpy as np
from explorer_helpers import collect_until, start, subscribe, terminal
from onnx import TensorProto, helper, numpy_helper


def conv_model() -> bytes:
    """conv (weights) + bias + relu, then a per-channel scale and a second conv: FoldScaleAxis
    and FuseOps both have work, and the constants must travel with the text."""
    rng = np.random.default_rng(3)
    inits = [numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32), name)
             for name, shape in (("w1", (8, 3, 3, 3)), ("b1", (8,)), ("w2", (4, 8, 1, 1)))]
    inits.append(numpy_helper.from_array((rng.random((1, 8, 1, 1)) + 0.5).astype(np.float32),
                                         "s"))
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8])
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="stem/conv",
                              pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"], name="stem/relu"),
             helper.make_node("Mul", ["r1", "s"], ["m"], name="stem/scale"),
             helper.make_node("Conv", ["m", "w2"], ["y"], name="head/conv")]
    graph = helper.make_graph(nodes, "convs", [x], [y], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model.SerializeToString()


def finished_run(client: Any, sock: Any, data: bytes, name: str, **options: Any
                 ) -> tuple[str, list[dict[str, Any]]]:
    resp = client.post("/api/sessions", data={"file": (io.BytesIO(data), name)},
                       content_type="multipart/form-data")
    assert resp.status_code == 201, resp.get_json()
    run_id = start(sock, resp.get_json()["session"]["id"], **options)
    subscribe(sock, run_id)
    collect_until(sock, terminal, timeout=120)
    events = client.get(f"/api/runs/{run_id}/events").get_json()["events"]
    assert events[-1]["type"] == "run_finished", events[-1]
    return run_id, [e["data"] for e in events if e["type"] == "pass_finished"]
