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
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
