"""Real-architecture ONNX models for tests, built once per machine and cached.

Models come from bench/make_models.py (seeded random weights, no downloads) and
are cached under bench/models/ (git-ignored). Import `model_path` from here
(`from shared_models import model_path`), or use the `onnx_model` fixture.
"""

from __future__ import annotations

import fcntl
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ROOT = Path(__file__).resolve().parent.parent
MODEL_DIR = ROOT / "bench" / "models"
MAKE_MODELS = ROOT / "bench" / "make_models.py"


def model_path(name: str) -> Path:
    """Path of `NAME.onnx` from make_models.py, generating it on first use."""
    path = MODEL_DIR / f"{name}.onnx"
    if path.exists():
        return path
    MODEL_DIR.mkdir(parents=True, exist_ok=True)
    with open(MODEL_DIR / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # concurrent test runs generate each model once
        if not path.exists():
            subprocess.run([sys.executable, str(MAKE_MODELS), str(MODEL_DIR), "--only", name],
                           check=True, capture_output=True)
    return path


def symbolic_model() -> bytes:
    """A small hand-made model for the symbolic-input flow (not an importer test): a conv + relu over `pixels` [batch, 3, 8, 8] and `bias` [?]: one named symbolic
    dimension and one unnamed."""
    rng = np.random.default_rng(0)
    weight = numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32), "w")
    pixels = helper.make_tensor_value_info("pixels", TensorProto.FLOAT, ["batch", 3, 8, 8])
    bias = helper.make_tensor_value_info("bias", TensorProto.FLOAT, [None])
    out = helper.make_tensor_value_info("out", TensorProto.FLOAT, ["batch", 4, 8, 8])
    nodes = [
        helper.make_node("Conv", ["pixels", "w"], ["conv"], name="stem/conv", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["conv"], ["relu"], name="stem/relu"),
        helper.make_node("ReduceMean", ["bias"], ["b"], name="bias/mean", keepdims=1),
        helper.make_node("Add", ["relu", "b"], ["out"], name="head/add"),
    ]
    graph = helper.make_graph(nodes, "symbolic", [pixels, bias], [out], [weight])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model.SerializeToString()


# Two conv + relu blocks in Relay text, layers named by span comments: FuseOps makes two
# kernels of them (the diff-scope tests, in the page and of static/src/scope.js)
TWO_CONVS_RELAY = """#[version = "0.0.5"]
def @main(%x: Tensor[(1, 4, 8, 8), float32], %w: Tensor[(4, 4, 3, 3), float32]) {
  %0 = nn.conv2d(%x, %w, padding=[1, 1, 1, 1]) /* conv1 */;
  %1 = nn.relu(%0) /* relu1 */;
  %2 = nn.max_pool2d(%1, pool_size=[2, 2]) /* pool1 */;
  %3 = nn.conv2d(%2, %w, padding=[1, 1, 1, 1]) /* conv2 */;
  nn.relu(%3) /* relu2 */
}
"""


def dynamic_batch_head(path: Path, input_name: str = "x") -> Any:
    """A conv + linear head (seeded) written by torch.onnx's TorchScript exporter with a
    dynamic batch (dim_param 'batch' on its input and its output 'y'): its Reshape target is
    computed from the input's shape (Shape/Gather/Concat). Returns the torch module."""
    import torch

    from engine.relay.testing.torch_models import torchscript_export

    class Head(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv = torch.nn.Conv2d(3, 4, 3, padding=1)
            self.fc = torch.nn.Linear(4 * 6 * 6, 5)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            y = torch.relu(self.conv(x))
            return self.fc(y.reshape(y.shape[0], -1))

    torch.manual_seed(0)
    model = Head().eval()
    torchscript_export(model, (torch.randn(2, 3, 6, 6),), path, None, [input_name], ["y"],
                       {input_name: {0: "batch"}, "y": {0: "batch"}})
    return model


LLAMA_SMALL = dict(layers=2, hidden=64, intermediate=176, heads=4, vocab=1000, seq=16)
"""The small Llama of the lazy-weight tests: every projection weight >= 8 KB, so each one
stays in the external data file (weights.MAP_MIN_BYTES)."""


def llama_small_path() -> Path:
    """bench/make_llama.py's decoder at LLAMA_SMALL (external data beside it), exported on
    first use (torch, transformers and onnxscript needed: callers skip without them)."""
    from engine.relay.testing.llama_export import make_llama

    path = MODEL_DIR / "llama_small" / "llama_small.onnx"
    if path.exists() and path.with_name(path.name + ".data").exists():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.parent / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not path.with_name(path.name + ".data").exists():
            make_llama(path, **LLAMA_SMALL)
    return path


def chain_relay_text(n: int) -> str:
    """Relay text of a chain of `n` elementwise ops (tanh, relu), each with a layer span
    (`chain/opK`): a graph of any size without an import."""
    lines = ['#[version = "0.0.5"]', "def @main(%x: Tensor[(1, 4), float32]) {"]
    prev = "%x"
    for k in range(n - 1):
        lines.append(f"  %{k} = {'nn.relu' if k % 2 else 'tanh'}({prev}) /* chain/op{k} */;")
        prev = f"%{k}"
    lines += [f"  nn.relu({prev}) /* chain/op{n - 1} */", "}", ""]
    return "\n".join(lines)
