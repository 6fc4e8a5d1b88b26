"""The same tensor in the model's own runtime, for the tensor inspector.

ONNX: onnxruntime runs the stored model with the output of the layer's node added to
the graph's outputs. TFLite: tflite-runtime (it needs numpy<2, so it lives in the
checkout's `.venv-tflite`, as the frontend tests use it) runs the model keeping every
tensor and reads the one the layer names; without that environment the reference is
skipped with a sentence saying so. The layer is the latest of the expression's layers
in the model's order (a fused or folded expression computes that one's output).
"""

from __future__ import annotations

import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np

from explorer.protocol import TensorReference, TensorStats

ROOT = Path(__file__).resolve().parents[2]
TFLITE_PYTHON = ROOT / ".venv-tflite" / "bin" / "python"
TFLITE_SCRIPT = Path(__file__).with_name("tflite_tensor.py")
TFLITE_TIMEOUT = 120

Stats = Callable[[np.ndarray], TensorStats]


def reference_tensor(fmt: str, model: Path, layers: list[str], inputs: dict[str, np.ndarray],
                     value: np.ndarray, stats: Stats) -> TensorReference | None:
    """The reference runtime's view of the tensor; None for formats without one."""
    readers = {"onnx": ("onnxruntime", _onnx_tensor), "tflite": ("tflite-runtime", _tflite_tensor)}
    if fmt not in readers:
        return None
    runtime, read = readers[fmt]
    try:
        layer, name, ref = read(model, layers, inputs)
    except Exception as exc:  # the reference is best effort: say why it is missing
        return TensorReference(runtime=runtime, layer=None, tensor=None, stats=None,
                               max_abs_diff=None, error=f"{type(exc).__name__}: {exc}",
                               layer_output=False)
    diff = None
    if ref.shape == value.shape:
        diff = float(np.max(np.abs(ref.astype(np.float64) - value.astype(np.float64)))) \
            if ref.size else 0.0
    return TensorReference(runtime=runtime, layer=layer, tensor=name, stats=stats(ref),
                           max_abs_diff=diff if diff is None or np.isfinite(diff) else None,
                           error=None, layer_output=True)


def _latest(layers: list[str], order: list[str]) -> str:
    rank = {name: i for i, name in enumerate(order)}
    known = [name for name in layers if name in rank]
    if not known:
        raise LookupError(f"none of the expression's layers ({', '.join(layers) or 'none'}) "
                          "is a node of the model")
    return max(known, key=rank.__getitem__)


def _onnx_tensor(model: Path, layers: list[str], inputs: dict[str, np.ndarray]
                 ) -> tuple[str, str, np.ndarray]:
    import onnx
    import onnxruntime as ort

    from explorer.compiler import inline_local_functions

    proto = inline_local_functions(onnx.load(str(model)))  # the layers the import named
    nodes = {node.name: node for node in proto.graph.node}
    layer = _latest(layers, [node.name for node in proto.graph.node])
    tensor = nodes[layer].output[0]
    if tensor not in {o.name for o in proto.graph.output}:
        proto.graph.output.append(onnx.ValueInfoProto(name=tensor))
    session = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    feeds = {i.name: inputs[i.name] for i in session.get_inputs()}
    return layer, tensor, np.asarray(session.run([tensor], feeds)[0])


def _tflite_tensor(model: Path, layers: list[str], inputs: dict[str, np.ndarray]
                   ) -> tuple[str, str, np.ndarray]:
    if not TFLITE_PYTHON.exists():
        raise FileNotFoundError("tflite-runtime is not installed (.venv-tflite is absent)")
    with tempfile.TemporaryDirectory() as tmp:
        feeds, out = Path(tmp) / "inputs.npz", Path(tmp) / "tensor.npz"
        np.savez(feeds, **inputs)  # type: ignore[arg-type]
        done = subprocess.run([str(TFLITE_PYTHON), str(TFLITE_SCRIPT), str(model), str(feeds),
                               str(out), *layers], capture_output=True, text=True,
                              timeout=TFLITE_TIMEOUT, check=False)
        if done.returncode != 0:
            raise RuntimeError(done.stderr.strip().splitlines()[-1] if done.stderr.strip()
                               else f"tflite-runtime exited with {done.returncode}")
        with np.load(out) as found:
            return str(found["layer"]), str(found["layer"]), np.asarray(found["value"])


__all__ = ["reference_tensor"]
