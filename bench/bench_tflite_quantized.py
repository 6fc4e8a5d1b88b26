#!/usr/bin/env python3
"""TFLiteConverter-quantized Keras models through our stack, against TFLite's interpreter.

For each cached model of bench/make_tflite_models.py (`make tflite-models`: MobileNetV2,
MobileNetV3-Small, EfficientNet-B0, ResNet-50, a transformer block) and quantized variant
(int8 with float I/O, int8 with uint8 I/O, int16x8, dynamic-range): our largest error before
the O3 pipeline (the interpreter on the import), after it (the interpreter on the optimized
module) and built (relay.build + graph runtime), in the output's quantization steps (LSBs),
against TFLite's builtin reference kernels and its default optimized kernels; how far
TFLite's optimized and XNNPACK kernels are from its reference ones; span-coverage failures
and the pass count of the instrumented O3 pipeline; the median import / O3 / build times.
Appended to bench/results/tflite_quantized.md.

    .venv/bin/python bench/bench_tflite_quantized.py [--models resnet50,...]
        [--variants int8,...] [--repeat 3] [--no-write]
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

import numpy as np
from _common import RESULTS, ROOT, Row, median_of, report, timed

sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "frontends"))

from tflite_cases import (
    KERAS_MODELS,
    NO_REFERENCE,
    TFLiteCase,
    build,
    cached,
    cached_feeds,
    lsb_errors,
    optimize,
    output_steps,
    run_case,
)

from engine.relay.frontend import load

VARIANTS = ("int8", "uint8io", "int16x8", "dynamic")
COLUMNS = ("model", "variant", "ref_before_lsb", "ref_after_lsb", "ref_built_lsb",
           "opt_before_lsb", "opt_after_lsb", "opt_built_lsb", "tflite_opt_lsb",
           "xnnpack_lsb", "opt_before_rel", "opt_after_rel", "opt_built_rel", "xnnpack_rel",
           "coverage_failures", "passes", "import_s", "pipeline_s", "build_s")
CHEAP_S = 30.0
"""Only a model whose import + O3 + build took less than this is timed again (`--repeat`)."""

TITLE = ("TFLiteConverter-quantized Keras models: our error against TFLite's reference and "
         "optimized kernels")
REFERENCE = (
    "The reference is TFLite's builtin *reference* kernels (`ref:`, "
    "OpResolverType.BUILTIN_REF): the importer follows their integer arithmetic bit for bit. "
    "TFLite's default optimized kernels (`out:`) differ from them by design: on x86 the int8 "
    "convolutions and fully connected layers (ruy) round the rescaling's final shift half up "
    "where the reference rounds half away from zero, so a negative exact tie lands 1 LSB "
    "higher and those LSBs travel through the network. One known exception: int16x8 "
    "EfficientNet-B0 is 3 steps from the reference, because TFLite's int16 LOGISTIC "
    "interpolates its own hand-tuned 256-entry table where the importer's table comes from "
    "the float sigmoid (1 LSB on about a fifth of the values, in each of 65 sigmoid gates).")
NOTES = [
    "*_lsb: the largest error in the output's quantization steps (1 for an integer output, "
    "the scale of the DEQUANTIZE input for a float one); ref_*: against the reference "
    "kernels, opt_*: against the optimized kernels; tflite_opt_lsb / xnnpack_lsb: TFLite's "
    "optimized / XNNPACK kernels against its own reference kernels",
    "*_rel (dynamic-range, float outputs, no step; TFLite stores no reference-kernel output "
    "for them): the largest absolute error over max |optimized-kernel output|; "
    "xnnpack_rel: TFLite's XNNPACK kernels against its optimized ones, the same measure",
    "before: the interpreter on the import; after: on the O3-optimized module; built: "
    "relay.build + graph runtime; passes: passes the CoverageCheck instrument saw in O3",
    "import_s / pipeline_s / build_s: median of --repeat runs (one run when the first took "
    f"over {CHEAP_S:.0f} s); build_s is relay.build from the import (its own O3 included)",
]


def _write_header() -> None:
    """A new results file opens with which reference the errors are measured against."""
    path = RESULTS / "tflite_quantized.md"
    if not path.exists():
        path.write_text(f"# {TITLE}\n\nWritten by bench/bench_tflite_quantized.py; newest "
                        f"last.\n\n{REFERENCE}\n")


def _worst_lsb(outputs: list[np.ndarray], expected: list[np.ndarray], steps: list[float]
               ) -> float:
    return round(max(lsb_errors(outputs, expected, steps)), 3)


def _worst_rel(outputs: list[np.ndarray], expected: list[np.ndarray]) -> str:
    errors = [float(np.abs(got.astype("float64") - want).max() / np.abs(want).max())
              for got, want in zip(outputs, expected, strict=True)]
    return f"{max(errors):.1e}"


def _stages(run: TFLiteCase) -> dict[str, list[np.ndarray]]:
    return {"before": run.outputs, "after": run.optimized, "built": run.built}


def _errors(run: TFLiteCase, data: dict[str, np.ndarray]) -> Row:
    """The error columns: LSBs for a full-integer model, relative for a dynamic-range one."""
    optimized = run.expected(data, "out:")
    if not any(k.startswith("ref:") for k in data):
        row = {f"opt_{stage}_rel": _worst_rel(outputs, optimized)
               for stage, outputs in _stages(run).items()}
        return {**row, "xnnpack_rel": _worst_rel(run.expected(data, "xnnpack:"), optimized)}
    steps, reference = output_steps(run.path), run.expected(data, "ref:")
    row: Row = {}
    for stage, outputs in _stages(run).items():
        row[f"ref_{stage}_lsb"] = _worst_lsb(outputs, reference, steps)
        row[f"opt_{stage}_lsb"] = _worst_lsb(outputs, optimized, steps)
    row["tflite_opt_lsb"] = _worst_lsb(optimized, reference, steps)
    row["xnnpack_lsb"] = _worst_lsb(run.expected(data, "xnnpack:"), reference, steps)
    return row


def _median_seconds(run: TFLiteCase, repeat: int) -> dict[str, float]:
    """The first run's stage times, with `repeat - 1` more runs when they were cheap."""
    if repeat <= 1 or sum(run.seconds.values()) > CHEAP_S:
        return run.seconds
    again: dict[str, Any] = {
        "import_s": timed(lambda: load(run.path), repeat - 1),
        "pipeline_s": timed(lambda: optimize(run.result), repeat - 1),
        "build_s": timed(lambda: build(run.result), repeat - 1)}
    return {k: median_of([run.seconds[k], *again[k].runs]) for k in run.seconds}


def bench_case(model: str, variant: str, repeat: int) -> Row | None:
    stem = f"{model}_{variant}"
    if stem in NO_REFERENCE:
        print(f"{stem}: skipped, {NO_REFERENCE[stem]}", flush=True)
        return None
    try:
        path, data = cached(stem)
    except FileNotFoundError as missing:
        print(f"{stem}: skipped, {missing}", flush=True)
        return None
    run = run_case(path, cached_feeds(data))
    row: Row = {"model": model, "variant": variant, **_errors(run, data),
                "coverage_failures": len(run.coverage.failures),
                "passes": len(run.coverage.passes), **_median_seconds(run, repeat)}
    print(f"{stem}: done", flush=True)
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(KERAS_MODELS))
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args(argv)
    rows = [row for model in args.models.split(",") for variant in args.variants.split(",")
            if (row := bench_case(model, variant, args.repeat)) is not None]
    print(f"\n{REFERENCE}")
    if not args.no_write:
        _write_header()
    report("tflite_quantized", TITLE, COLUMNS, rows,
           [*NOTES, *(f"not run: {stem}: {why}" for stem, why in NO_REFERENCE.items())],
           write=not args.no_write)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
