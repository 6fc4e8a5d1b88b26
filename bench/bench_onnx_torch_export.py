#!/usr/bin/env python3
"""torch.onnx.export's models through our stack: import, the recorded O3 pipeline, build.

For each model of engine/relay/testing/torch_models.py (torchvision ResNet-18,
MobileNetV3-Small, EfficientNet-B0 and ConvNeXt-Tiny at 1x3x64x64; small Hugging Face BERT
and GPT-2, 16 tokens; seeded random weights) and each of torch's exporters (TorchScript,
dynamo): the export (torch's own time, shown when this run made it; the files are cached
in bench/models/torch_export/), its opset, node count and size, and, in a worker process
per run as bench/_ours.py runs a model (the explorer's RecordingInstrument over an
in-memory store): the import, the O3 pipeline with every snapshot recorded, and the rest
of relay.build; medians over `--repeat`. Appended to bench/results/onnx_torch_export.md.

    .venv/bin/python bench/bench_onnx_torch_export.py [--repeat 3] [--models resnet18,...]
        [--exporters torchscript,dynamo] [--quick] [--no-write]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from _common import BENCH, MODEL_DIR, Row, report, run_worker  # noqa: E402
from bench_tvm import aggregate  # noqa: E402

from engine.relay.testing import torch_models  # noqa: E402
from engine.relay.testing.torch_models import Export  # noqa: E402

CACHE = MODEL_DIR / "torch_export"
COLUMNS = ("model", "exporter", "opset", "nodes", "file_mb", "export_s", "import_s",
           "pipeline_s", "record_s", "snapshots", "build_s", "build_nodes", "peak_rss_mb", "status", "error")


def exported(name: str, how: Export) -> tuple[Path, float | None]:
    """The cached export and, when this call made it, the seconds it took."""
    fresh = not torch_models.cache_path(CACHE, name, how).exists()
    start = time.perf_counter()
    path = torch_models.cached_export(CACHE, name, how)
    return path, (time.perf_counter() - start) if fresh else None


def bench_case(name: str, how: Export, repeat: int, timeout: float) -> Row:
    import onnx

    path, export_s = exported(name, how)
    model = onnx.load(str(path), load_external_data=False)
    cmd = [sys.executable, str(BENCH / "_ours.py"), str(path)]
    first = run_worker(cmd, timeout)  # also finds any pass to route around
    disabled = first.get("disabled") or "none"
    runs = [first] + [run_worker([*cmd, "--disabled", disabled], timeout)
                      for _ in range(repeat - 1)]
    row = aggregate(runs)
    row.update({"model": name, "exporter": how.exporter, "opset": torch_models.exported_opset(path),
                "nodes": len(model.graph.node), "file_mb": path.stat().st_size / 2**20,
                "export_s": export_s if export_s is not None else "cached"})
    if disabled != "none":
        row["status"] = f"{row.get('status')} (disabled: {disabled})"
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(torch_models.MODELS))
    parser.add_argument("--exporters", default="torchscript,dynamo")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=900)
    parser.add_argument("--quick", action="store_true", help="ResNet-18, dynamo, one run")
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args(argv)
    try:
        for package in ("torch", "transformers", "onnxscript"):
            __import__(package)
        torch_models.import_torchvision()
    except ImportError as err:
        print(f"not available: {err} (make test-extras installs the torch extra)")
        return 0
    models = ["resnet18"] if args.quick else args.models.split(",")
    chosen = ["dynamo"] if args.quick else args.exporters.split(",")
    exports = [how for how in torch_models.EXPORTS if how.exporter in chosen]
    repeat = 1 if args.quick else max(1, args.repeat)
    rows = [bench_case(name, how, repeat, args.timeout) for name in models for how in exports]
    report("onnx_torch_export",
           f"torch.onnx.export models: import, recorded O3 pipeline, build (medians of {repeat})",
           COLUMNS, rows,
           ["export_s: torch.onnx.export's own time, once, when this run made the file",
            "import, pipeline (recorded snapshots) and build each in a fresh worker process "
            "(bench/_ours.py); peak_rss_mb is the worker's"],
           write=not args.no_write)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
