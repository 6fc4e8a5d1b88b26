#!/usr/bin/env python3
"""Interpreter benchmark: ResNet-50, MobileNetV2 and BERT-2 forward time vs onnxruntime.

Both run the same ONNX files from bench/make_models.py on the same seeded
inputs, with one thread each (onnxruntime's intra- and inter-op pools and
numpy's OpenBLAS; set OMP_NUM_THREADS / OPENBLAS_NUM_THREADS in the
environment to change it): onnxruntime directly, our interpreter on the module
the ONNX frontend imports. Goals: MobileNetV2 <= 2.5x onnxruntime (depthwise
convolutions as fast as dense ones), ResNet-50 <= 1.6x. The interpreter's compiled loops
(engine/relay/op/nn/compiled_kernels.py) run when numba is installed; set
ENGINE_COMPILED_KERNELS=0 to time numpy alone (the table says which ran). If the frontend cannot
import a model, the relay-built workload from engine.relay.testing is timed
instead (and the row says so). Prints a table and appends it to
bench/results/interpreter.md with the machine description.

    .venv/bin/python bench/bench_interpreter.py [--repeat 5] [--models resnet50,mobilenetv2]
        (a name `torchvision.NAME`, e.g. torchvision.resnext50_32x4d, exports that model)
"""

from __future__ import annotations

import os

# Before numpy loads OpenBLAS: its thread pool is sized once, at import.
THREADS = int(os.environ.setdefault("OPENBLAS_NUM_THREADS",
                                    os.environ.setdefault("OMP_NUM_THREADS", "1")))

import argparse  # noqa: E402
import datetime  # noqa: E402
import platform  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from shared_models import model_path  # noqa: E402

from engine.relay.interpreter import evaluate  # noqa: E402
from engine.relay.op.nn import compiled_kernels  # noqa: E402

RESULTS = ROOT / "bench" / "results" / "interpreter.md"


def best_of(fns: list[Callable[[], Any]], repeat: int) -> list[tuple[float, float, float]]:
    """(median, best) wall time and median CPU time of this process, in ms, of each
    function after one warm-up run each. The functions take turns, so a change in the
    machine's load reaches all of them alike; CPU time leaves out the time other processes
    held the core (on a shared machine the wall times of long runs suffer most)."""
    for fn in fns:
        fn()
    times: list[list[float]] = [[] for _ in fns]
    cpu: list[list[float]] = [[] for _ in fns]
    for _ in range(repeat):
        for fn, spent, used in zip(fns, times, cpu):
            start, start_cpu = time.perf_counter(), time.process_time()
            fn()
            spent.append((time.perf_counter() - start) * 1000)
            used.append((time.process_time() - start_cpu) * 1000)
    return [(float(np.median(t)), min(t), float(np.median(c))) for t, c in zip(times, cpu)]


def onnx_inputs(path: Path) -> dict[str, np.ndarray]:
    import onnx

    model = onnx.load(str(path), load_external_data=False)
    inits = {i.name for i in model.graph.initializer}
    rng = np.random.default_rng(0)
    feeds: dict[str, np.ndarray] = {}
    for inp in model.graph.input:
        if inp.name in inits:
            continue
        shape = [d.dim_value or 1 for d in inp.type.tensor_type.shape.dim]
        elem = inp.type.tensor_type.elem_type
        if elem == onnx.TensorProto.INT64:
            hi = 2 if "type" in inp.name else (2 if "mask" in inp.name else 30522)
            feeds[inp.name] = rng.integers(0, hi, shape).astype("int64")
            if "mask" in inp.name:
                feeds[inp.name][:] = 1
        else:
            feeds[inp.name] = rng.standard_normal(shape).astype("float32")
    return feeds


def ort_runner(path: Path, feeds: dict[str, np.ndarray]) -> Callable[[], Any]:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = options.inter_op_num_threads = THREADS
    sess = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    return lambda: sess.run(None, feeds)


FOLDED = "ONNX import, batch_norm folded (O3 passes)"


def fold_inference(mod: Any, params: dict[str, Any]) -> Any:
    """The imported module with its weights bound and batch_norm folded into the convolutions
    by our O3 passes (SimplifyInference, FoldConstant, FoldScaleAxis): what onnxruntime's
    default session optimizations do at session creation (it also fuses the activations,
    which this does not)."""
    from engine.relay import transform
    from engine.relay.transform.pipeline import bind_params

    passes = transform.Sequential([transform.InferType(), transform.SimplifyInference(),
                                   transform.FoldConstant(), transform.FoldScaleAxis(),
                                   transform.FoldConstant()])
    with transform.PassContext(opt_level=3):
        return passes(bind_params(mod, params))


def engine_runner(name: str, path: Path, feeds: dict[str, np.ndarray], folded: bool = False
                  ) -> tuple[Callable[[], Any], str]:
    try:
        import onnx

        from engine.relay.frontend import from_onnx

        mod, params = from_onnx(onnx.load(str(path)))
        if folded:
            mod = fold_inference(mod, params)
            return (lambda: evaluate(mod, feeds)), FOLDED
        inputs = {**{k: v.numpy() if hasattr(v, "numpy") else v for k, v in params.items()},
                  **feeds}
        evaluate(mod, inputs)
        return (lambda: evaluate(mod, inputs)), "ONNX import"
    except Exception as err:  # the frontend is optional here: fall back, and say so
        print(f"  {name}: ONNX import failed ({type(err).__name__}: {err}); "
              "timing the relay-built workload instead", file=sys.stderr)
    return relay_built(name), "relay-built (frontend unavailable)"


def relay_built(name: str) -> Callable[[], Any]:
    from engine.relay.testing import bert, mobilenet, resnet

    if name in ("resnet50", "mobilenetv2"):
        mod, params = (resnet.get_workload(num_layers=50) if name == "resnet50"
                       else mobilenet.get_workload())
        data = np.random.default_rng(0).standard_normal((1, 3, 224, 224)).astype("float32")
        inputs: dict[str, Any] = {"data": data, **params}
    else:
        mod, params = bert.get_workload(num_layers=2)
        rng = np.random.default_rng(0)
        inputs = {"input_ids": rng.integers(0, 30522, (1, 128)).astype("int32"),
                  "attention_mask": np.ones((1, 128), "int32"),
                  "token_type_ids": np.zeros((1, 128), "int32"), **params}
    return lambda: evaluate(mod, inputs)


def machine() -> str:
    cpu = platform.processor() or "unknown cpu"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return (f"{cpu}, {os.cpu_count()} CPUs, Python {platform.python_version()}, "
            f"numpy {np.__version__}, load avg {load:.2f}")


TORCHVISION = "torchvision."
"""A model named `torchvision.resnext50_32x4d` is torchvision's (seeded random weights, 224x224),
exported by torch.onnx's TorchScript exporter: grouped convolutions next to the dense
ResNet-50 of make_models.py."""


def torchvision_export(name: str) -> Path:
    path = ROOT / "bench" / "models" / "torchvision" / f"{name.removeprefix(TORCHVISION)}.onnx"
    if path.exists():
        return path
    import torch

    from engine.relay.testing.torch_models import import_torchvision, torchscript_export

    torch.manual_seed(0)
    model = getattr(import_torchvision().models, name.removeprefix(TORCHVISION))(weights=None)
    path.parent.mkdir(parents=True, exist_ok=True)
    torchscript_export(model.eval(), (torch.randn(1, 3, 224, 224),), path, 17, ["x"], ["y"])
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--models", default="resnet50,mobilenetv2,bert2")
    parser.add_argument("--no-folded", action="store_true",
                        help="time only the imported module, not also its batch_norm-folded form")
    args = parser.parse_args(argv)
    import onnxruntime

    rows = []
    for name in args.models.split(","):
        path = torchvision_export(name) if name.startswith(TORCHVISION) else model_path(name)
        feeds = onnx_inputs(path)
        runners = [engine_runner(name, path, feeds)]
        if not args.no_folded and runners[0][1] == "ONNX import":
            runners.append(engine_runner(name, path, feeds, folded=True))
        (ort_med, ort_best, ort_cpu), *ours = best_of(
            [ort_runner(path, feeds)] + [run for run, _ in runners], args.repeat)
        rows += [(name, source, eng_med, eng_best, ort_med, ort_best, eng_med / ort_med,
                  eng_cpu, ort_cpu, eng_cpu / ort_cpu)
                 for (_, source), (eng_med, eng_best, eng_cpu) in zip(runners, ours)]
    header = ("| model | engine input | interpreter median ms | best ms | onnxruntime median ms "
              "| best ms | ratio (median) | CPU ms ours / ort | ratio (CPU) |\n"
              "|---|---|---|---|---|---|---|---|---|")
    lines = [f"| {n} | {s} | {a:.1f} | {b:.1f} | {c:.1f} | {d:.1f} | {r:.2f}x "
             f"| {e:.1f} / {f:.1f} | {g:.2f}x |" for n, s, a, b, c, d, r, e, f, g in rows]
    stamp = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
    text = (f"\n## {stamp}\n\nMachine: {machine()}; onnxruntime {onnxruntime.__version__}; "
            f"{THREADS} thread(s) each; {args.repeat} timed runs after one warm-up; "
            f"interpreter loops: {compiled_kernels.status()}.\n\n"
            f"{header}\n" + "\n".join(lines) + "\n")
    print(text)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    if not RESULTS.exists():
        RESULTS.write_text("# Interpreter vs onnxruntime\n\nTarget: within 3x of onnxruntime "
                           "on ResNet-50 (bench/bench_interpreter.py).\n")
    with RESULTS.open("a") as out:
        out.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
