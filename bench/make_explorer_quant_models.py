#!/usr/bin/env python3
"""A small quantized model for the explorer's tests, made by the real tools.

    python bench/make_explorer_quant_models.py       # writes bench/models/explorer-quant/

`qoperator_onnx()`: a torch conv net (seeded weights) exported by torch.onnx and quantized by
onnxruntime.quantization.quantize_static in the QOperator format, per channel, calibrated on
seeded random data (QuantizeLinear, QLinearConv x2 with the ReLUs folded in, DequantizeLinear).
Activations are int8 (S8S8): with uint8 ones, onnxruntime 1.32's x86 QLinearConv (u8s8)
differs from exact integer arithmetic by up to 54 LSB on this net (its u8 x s8 kernels
saturate intermediate pair sums), so its outputs are no reference for exactness.

`qnn_relay_text()`: the same network written as TVM's qnn ops from that file's own
initializers (weights, scales, zero points): qnn.quantize -> qnn.conv2d -> nn.bias_add ->
qnn.requantize (per-channel input scale) -> ... -> qnn.dequantize, each call spanned by its
ONNX node: the Relay-text path for the same model (the ONNX importer emits qnn ops itself,
with onnxruntime's float requantize). It computes what onnxruntime does up to requantize
rounding (TONEAREST here; onnxruntime rounds a float product half to even: at most 1 LSB on
exact ties; 0 on this net's test inputs).

Both are cached: made on first use, then read back.
"""

from __future__ import annotations

import fcntl
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent
if str(ROOT.parent) not in sys.path:
    sys.path.insert(0, str(ROOT.parent))

from engine.relay.testing import torch_models  # noqa: E402

OUT = ROOT / "models" / "explorer-quant"
INPUT = "input"
SHAPE = (1, 3, 12, 12)
SEED = 15


def _float_onnx(path: Path) -> None:
    import torch

    torch.manual_seed(SEED)
    net = torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.ReLU(),
        torch.nn.Conv2d(8, 16, 3, stride=2, padding=1), torch.nn.ReLU(),
    ).eval()
    torch_models.torchscript_export(net, (torch.zeros(SHAPE),), path, 17, [INPUT], ["output"])


class _Calibration:
    """Seeded random calibration batches (onnxruntime's CalibrationDataReader protocol)."""

    def __init__(self, batches: int = 8) -> None:
        rng = np.random.default_rng(SEED)
        self.items = iter([{INPUT: rng.standard_normal(SHAPE).astype("float32")}
                           for _ in range(batches)])

    def get_next(self) -> dict[str, np.ndarray] | None:
        return next(self.items, None)

    def rewind(self) -> None:
        pass


@contextmanager
def _locked() -> Iterator[None]:
    """One maker at a time (test processes may ask at once)."""
    OUT.mkdir(parents=True, exist_ok=True)
    with open(OUT / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def qoperator_onnx() -> Path:
    """The QOperator model (made once, cached)."""
    path = OUT / "convnet_qoperator.onnx"
    if path.exists():
        return path
    from onnxruntime.quantization import QuantFormat, QuantType, quantize_static

    with _locked():
        if not path.exists():
            float_path = OUT / "convnet_float.onnx"
            _float_onnx(float_path)
            partial = path.with_suffix(".tmp.onnx")
            quantize_static(str(float_path), str(partial), _Calibration(),
                            quant_format=QuantFormat.QOperator, per_channel=True,
                            activation_type=QuantType.QInt8, weight_type=QuantType.QInt8)
            partial.replace(path)
    return path


# --- the same network as qnn Relay text ---------------------------------------------------


def _initializers(model: Any) -> dict[str, np.ndarray]:
    from onnx import numpy_helper

    return {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}


def _meta(consts: list[np.ndarray], value: np.ndarray) -> str:
    """A scalar's literal, or `meta[relay.Constant][k]` (the array appended to `consts`)."""
    from engine.relay.printer.format import scalar_text

    text = scalar_text(np.asarray(value)) if np.ndim(value) == 0 else None
    if text is not None:
        return text
    consts.append(np.asarray(value))
    return f"meta[relay.Constant][{len(consts) - 1}]"


def _span(name: str) -> str:
    from engine.ir import layer_span
    from engine.relay.printer.format import span_comment

    return span_comment(layer_span(name))


def _conv_lines(node: Any, init: dict[str, np.ndarray], consts: list[np.ndarray], src: str,
                n: int) -> tuple[list[str], str]:
    x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp, bias = (init[i] for i in node.input[1:])
    attrs = {a.name: list(a.ints) for a in node.attribute}
    pads, strides = attrs.get("pads", [0, 0, 0, 0]), attrs.get("strides", [1, 1])
    c = int(w.shape[0])
    span = _span(node.name)
    k = _meta
    lines = [
        f"%{n} = qnn.conv2d({src}, {k(consts, w)}, {k(consts, x_zp.astype('int32'))}, "
        f"{k(consts, w_zp.astype('int32'))}, {k(consts, x_scale)}, {k(consts, w_scale)}, "
        f"strides={strides}, padding=[{pads[0]}, {pads[1]}, {pads[2]}, {pads[3]}], "
        f"channels={c}, kernel_size={list(w.shape[2:])}, out_dtype=\"int32\") {span};",
        f"%{n + 1} = nn.bias_add(%{n}, {k(consts, bias)}) {span};",
        f"%{n + 2} = qnn.requantize(%{n + 1}, {k(consts, (x_scale * w_scale).astype('float32'))}, "
        f"0, {k(consts, y_scale)}, {k(consts, y_zp.astype('int32'))}, axis=1, "
        f"rounding=\"TONEAREST\", out_dtype=\"{y_zp.dtype}\") {span};",
    ]
    return lines, f"%{n + 2}"


def qnn_relay_text() -> str:
    """The QOperator model's network as a qnn Relay module (text with its metadata)."""
    import onnx

    from engine.ir.expr import Constant
    from engine.relay.printer.document import metadata_text
    from engine.runtime.ndarray import NDArray

    model = onnx.load(str(qoperator_onnx()))
    init = _initializers(model)
    consts: list[np.ndarray] = []
    body: list[str] = []
    value, n = f"%{INPUT}", 0
    for node in model.graph.node:
        span = _span(node.name)
        if node.op_type == "QuantizeLinear":
            scale, zp = init[node.input[1]], init[node.input[2]]
            body.append(f"%{n} = qnn.quantize({value}, {_meta(consts, scale)}, "
                        f"{_meta(consts, zp.astype('int32'))}, out_dtype=\"{zp.dtype}\") {span};")
            value, n = f"%{n}", n + 1
        elif node.op_type == "QLinearConv":
            lines, value = _conv_lines(node, init, consts, value, n)
            body.extend(lines)
            n += len(lines)
        elif node.op_type == "DequantizeLinear":
            scale, zp = init[node.input[1]], init[node.input[2]]
            body.append(f"qnn.dequantize({value}, {_meta(consts, scale)}, "
                        f"{_meta(consts, zp.astype('int32'))}) {span}")
        else:
            raise ValueError(f"qnn_relay_text: unexpected {node.op_type} ({node.name})")
    shape = ", ".join(str(d) for d in SHAPE)
    head = f'#[version = "0.0.5"]\ndef @main(%{INPUT}: Tensor[({shape}), float32]) {{'
    meta = metadata_text([Constant(NDArray(c)) for c in consts])
    return "\n".join([head, *("  " + line for line in body), "}", meta, ""])


def _cached_text(name: str, make: Callable[[], str]) -> Path:
    path = OUT / name
    if not path.exists():
        text = make()
        with _locked():
            partial = path.with_suffix(".tmp")
            partial.write_text(text)
            partial.replace(path)
    return path


def qnn_relay_file() -> Path:
    """`qnn_relay_text()`, cached."""
    return _cached_text("convnet_qnn.relay", qnn_relay_text)


def reference_outputs(x: np.ndarray) -> np.ndarray:
    """onnxruntime's output of the QOperator model."""
    import onnxruntime as ort

    session = ort.InferenceSession(str(qoperator_onnx()), providers=["CPUExecutionProvider"])
    return np.asarray(session.run(None, {INPUT: x})[0])


if __name__ == "__main__":
    print(qoperator_onnx())
    print(qnn_relay_file())
    sys.exit(0)
