#!/usr/bin/env python3
"""onnxruntime-quantized models through our stack, against onnxruntime.

For each file of bench/make_onnx_quantized.py (ResNet-18, MobileNetV2, MobileNetV3-Small,
EfficientNet-B0, BERT and GPT-2 configurations; QDQ and QOperator, per tensor and per
channel; dynamic): the import time; our largest error against onnxruntime's default
session (ORT_ENABLE_ALL) before relay.build's O3 pipeline (the interpreter on the import),
after it (the interpreter on the optimized module) and built (the graph runtime), in the
output's quantization steps (LSBs) for a dequantized output, absolute for a float one;
for QDQ files also our error against the literal session (ORT_DISABLE_ALL) and the two
sessions' distance from each other; span-coverage failures; stage times. Appended to
bench/results/onnx_quantized.md.

    .venv/bin/python bench/bench_onnx_quantized.py [--models resnet18,...]
        [--variants qdq,...] [--no-write]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import make_onnx_quantized as quantized  # noqa: E402
import onnx  # noqa: E402
from _common import Row, report  # noqa: E402

from engine.relay.frontend.onnx import import_onnx  # noqa: E402

COLUMNS = ("model", "variant", "import_s", "before_lsb", "after_lsb", "built_lsb",
           "before_abs", "after_abs", "built_abs", "literal_lsb", "ort_sessions_lsb",
           "coverage_failures", "interpret_s", "pipeline_s", "lower_s")


def bench_case(name: str, variant: str) -> Row:
    """One file: import time, our error against onnxruntime at each stage, times."""
    path = quantized.quantized_model(name, variant)
    inputs, model = quantized.test_inputs(path), onnx.load(str(path))
    steps = quantized.output_steps(model)
    default = quantized.onnxruntime_outputs(path, inputs, optimized=True)
    literal = quantized.onnxruntime_outputs(path, inputs, optimized=False)
    start = time.perf_counter()
    result = import_onnx(model)
    row: Row = {"model": name, "variant": variant,
                           "import_s": time.perf_counter() - start}
    stages = quantized.run_stages(result, inputs)

    def worst(actual: list[np.ndarray], reference: list[np.ndarray], lsb: bool) -> Any:
        found = [quantized.output_error(a, r, s) for a, r, s in zip(actual, reference, steps)
                 if bool(s) == lsb]
        return "" if not found else max(found) if lsb else f"{max(found):.1e}"

    qdq = variant.startswith("qdq")
    for stage, outputs in (("before", stages.before), ("after", stages.after),
                           ("built", stages.built)):
        row[f"{stage}_lsb"] = worst(outputs, default, lsb=True)
        row[f"{stage}_abs"] = worst(outputs, default, lsb=False)
    row.update({"literal_lsb": worst(stages.before, literal, lsb=True) if qdq else "",
                "ort_sessions_lsb": worst(default, literal, lsb=True) if qdq else "",
                "coverage_failures": len(stages.coverage.failures), **stages.seconds})
    return row



# --- why the generator's weights have 7 bits ---------------------------------------------
def saturation_rows() -> list[Row]:
    """onnxruntime's QLinearConv against exact integer arithmetic (our import: int32
    accumulation, the same float32 requantization) on one seeded random 3x3 convolution of
    64 channels, for uint8 / int8 activations and 8-bit / 7-bit (reduce_range) weights:
    the largest difference in output steps and how many outputs differ. On x86 without
    VNNI onnxruntime's u8s8 kernel (vpmaddubsw) adds pairs of products in saturating int16,
    so full 8-bit weights against uint8 activations lose whatever exceeds 32767."""
    from onnx import helper, numpy_helper

    from engine.relay.interpreter import evaluate

    rng = np.random.default_rng(0)
    rows: list[Row] = []
    for activation in ("uint8", "int8"):
        info = np.iinfo(activation)
        x = rng.integers(int(info.min), int(info.max) + 1, (1, 64, 12, 12)).astype(activation)
        x_zp = 0 if activation == "uint8" else -1
        for bits in (8, 7):
            w = rng.integers(-(2 ** (bits - 1)), 2 ** (bits - 1), (16, 64, 3, 3)).astype("int8")
            acc = _exact_conv(x.astype("int64") - x_zp, w.astype("int64"))
            y_scale = float(np.abs(acc).max()) * 0.01 * 0.01 / 100  # real max -> 100 steps
            params = {"xs": np.array(0.01, "float32"), "xz": np.array(x_zp, activation),
                      "w": w, "ws": np.array(0.01, "float32"), "wz": np.array(0, "int8"),
                      "ys": np.array(y_scale, "float32"), "yz": np.array(0, activation)}
            node = helper.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys",
                                                    "yz"], ["y"])
            elem = helper.np_dtype_to_tensor_dtype(np.dtype(activation))
            graph = helper.make_graph(
                [node], "conv", [helper.make_tensor_value_info("x", elem, list(x.shape))],
                [helper.make_tensor_value_info("y", elem, None)],
                [numpy_helper.from_array(v, k) for k, v in params.items()])
            model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
            with tempfile.TemporaryDirectory() as tmp:
                path = Path(tmp) / "conv.onnx"
                onnx.save(model, str(path))
                theirs = quantized.onnxruntime_outputs(path, {"x": x}, optimized=True)[0]
            ours = quantized.as_arrays(evaluate(import_onnx(model).mod, {"x": x}))[0]
            diff = np.abs(ours.astype("int64") - theirs.astype("int64"))
            rows.append({"activations": activation, "weight_bits": bits,
                         "max_lsb": int(diff.max()),
                         "outputs_differing": f"{np.count_nonzero(diff)} of {diff.size}"})
    return rows


def _exact_conv(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """The int64 3x3 convolution (no padding) of (1, C, H, W) by (O, C, 3, 3)."""
    windows = np.lib.stride_tricks.sliding_window_view(x[0], (3, 3), axis=(1, 2))
    return np.einsum("chwij,ocij->ohw", windows, w)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(quantized.MODELS))
    parser.add_argument("--variants", default=",".join(quantized.VARIANTS))
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args(argv)
    rows = [bench_case(name, variant)
            for name, variant in quantized.picked_cases(args.models, args.variants)]
    report("onnx_quantized", "onnxruntime-quantized models: our error against onnxruntime's "
           "default session", COLUMNS, rows,
           ["*_lsb: in the output's quantization steps; *_abs: absolute, for float outputs "
            "computed after the quantized layers (no output step)",
            "literal_lsb: our import against ORT_DISABLE_ALL (the QDQ file's float semantics); "
            "ort_sessions_lsb: onnxruntime's two sessions against each other",
            "before: the interpreter on the import; after: on the O3-optimized module; "
            "built: relay.build + graph runtime"], write=not args.no_write)
    report("onnx_quantized", "onnxruntime's QLinearConv against exact integer arithmetic "
           "(why the generator uses 7-bit weights)",
           ("activations", "weight_bits", "max_lsb", "outputs_differing"), saturation_rows(),
           ["one seeded random 3x3 QLinearConv, 64 input channels; ours computes the ONNX "
            "definition exactly (int32 accumulation)",
            "onnxruntime on x86 without VNNI: u8s8 pairs of products summed in saturating "
            "int16 (vpmaddubsw); 7-bit weights keep a pair within int16"],
           write=not args.no_write)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
