"""ONNX's own backend node cases run through `relay.frontend.from_onnx` and the interpreter.

The installed onnx package defines its node cases in code
(`onnx.backend.test.case.node`: one model and one data set per case, expected outputs
computed by onnx). Generating them takes seconds, so `node_cases()` writes them once to a
cache folder (`model.onnx`, `input_<i>.pb`, `output_<i>.pb` per case, an `index.json`), keyed by the onnx
version, and later runs read the files. `run_case(case)` imports, evaluates and compares
(rtol 1e-3, atol 1e-5 for floats; exact for integers, booleans and, by value, the
low-precision floats: bfloat16, float8, float4) and returns an
`Outcome` whose `reason` is a short, stable-ish text when the case fails.
"""

from __future__ import annotations

import json
import os
import re
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import onnx

from engine.ir.dtype import is_low_precision_float

RTOL, ATOL = 1e-3, 1e-5
CACHE_ENV = "IR_EXPLORER_CACHE"


@dataclass(frozen=True)
class NodeCase:
    """One node case on disk: `folder/model.onnx`, `input_<i>.pb`, `output_<i>.pb`."""

    name: str
    folder: Path
    op_types: tuple[str, ...]
    tensor_io: bool  # False when an input or output is a sequence, map or optional

    def model(self) -> onnx.ModelProto:
        return onnx.load(str(self.folder / "model.onnx"))

    def data(self) -> tuple[list[np.ndarray], list[np.ndarray]]:
        return _read_tensors(self.folder, "input"), _read_tensors(self.folder, "output")


@dataclass(frozen=True)
class Outcome:
    name: str
    passed: bool
    reason: str = ""


def cache_root() -> Path:
    base = os.environ.get(CACHE_ENV) or os.path.join(os.path.expanduser("~"), ".cache",
                                                      "ir-explorer")
    return Path(base) / f"onnx-node-cases-{onnx.__version__}"


def node_cases(root: Path | None = None) -> list[NodeCase]:
    """Every node case of the installed onnx, generated into the cache on first use."""
    root = root or cache_root()
    index = root / "index.json"
    if not index.exists():
        _generate(root)
    entries = json.loads(index.read_text())
    return [NodeCase(e["name"], root / e["name"], tuple(e["op_types"]), e["tensor_io"])
            for e in entries]


def _generate(root: Path) -> None:
    from onnx.backend.test.loader import load_node_model_tests

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the case scripts divide by zero on purpose
        cases = load_node_model_tests()
    root.mkdir(parents=True, exist_ok=True)
    entries = []
    for case in sorted(cases, key=lambda c: c.name):
        assert case.model is not None and case.data_sets
        folder = root / case.name
        folder.mkdir(exist_ok=True)
        (folder / "model.onnx").write_bytes(case.model.SerializeToString())
        inputs, outputs = case.data_sets[0]
        tensor_io = _write_data(folder, inputs, outputs)
        entries.append({"name": case.name, "tensor_io": tensor_io,
                        "op_types": sorted({n.op_type for n in case.model.graph.node})})
    tmp = root / "index.json.tmp"
    tmp.write_text(json.dumps(entries, indent=0))
    tmp.replace(root / "index.json")


def _as_array(value: Any) -> np.ndarray | None:
    if isinstance(value, onnx.TensorProto):
        return onnx.numpy_helper.to_array(value)
    if isinstance(value, np.ndarray):
        return value
    if isinstance(value, np.generic):
        return np.asarray(value)
    return None


def _write_data(folder: Path, inputs: Sequence[Any], outputs: Sequence[Any]) -> bool:
    """`input_<i>.pb` / `output_<i>.pb` TensorProtos (as onnx's old data layout); False when
    a value is not a tensor (nothing is written then)."""
    arrays: dict[str, list[np.ndarray]] = {}
    for prefix, values in (("input", inputs), ("output", outputs)):
        maybe = [_as_array(v) for v in values]
        tensors = [a for a in maybe if a is not None and a.dtype != object]
        if len(tensors) != len(maybe):
            return False
        arrays[prefix] = tensors
    for prefix, written in arrays.items():
        for i, array in enumerate(written):
            tensor = onnx.numpy_helper.from_array(array)
            (folder / f"{prefix}_{i}.pb").write_bytes(tensor.SerializeToString())
    return True


def _read_tensors(folder: Path, prefix: str) -> list[np.ndarray]:
    out: list[np.ndarray] = []
    while (path := folder / f"{prefix}_{len(out)}.pb").exists():
        out.append(onnx.numpy_helper.to_array(onnx.load_tensor(str(path))))
    return out


# --- running one case --------------------------------------------------------------------
def _short(err: BaseException) -> str:
    text = str(err).strip().splitlines()[0] if str(err).strip() else ""
    text = re.sub(r"0x[0-9a-f]+", "0x..", text)
    return f"{type(err).__name__}: {text}"[:160]


def compare(expected: np.ndarray, actual: Any) -> str:
    """'' when `actual` matches `expected`, else what differs."""
    actual = np.asarray(actual)
    if actual.shape != expected.shape:
        return f"shape {list(actual.shape)} != expected {list(expected.shape)}"
    if actual.dtype != expected.dtype:
        return f"dtype {actual.dtype} != expected {expected.dtype}"
    if is_low_precision_float(expected.dtype):
        # bfloat16, float8, float4: a value is exactly right or a rounding is wrong
        if not np.array_equal(actual.astype(np.float32), expected.astype(np.float32),
                              equal_nan=True):
            return "values differ (exact compare)"
        return ""
    if expected.dtype.kind in "fc":
        ok = np.isclose(actual, expected, rtol=RTOL, atol=ATOL, equal_nan=True)
        if not ok.all():
            return f"values differ at {int((~ok).sum())} of {ok.size} elements"
        return ""
    if not np.array_equal(actual, expected):
        return "values differ (exact compare)"
    return ""


def run_case(case: NodeCase) -> Outcome:
    """Import the case with `from_onnx`, evaluate it with the interpreter, compare."""
    if not case.tensor_io:
        return Outcome(case.name, False, "sequence/map/optional inputs or outputs")
    from engine.ir.errors import UnsupportedOperatorError
    from engine.relay.frontend.onnx import from_onnx
    from engine.relay.interpreter import evaluate

    model = case.model()
    inputs, expected = case.data()
    inits = {t.name for t in model.graph.initializer}
    names = [i.name for i in model.graph.input if i.name not in inits]
    try:
        mod, params = from_onnx(model)
    except UnsupportedOperatorError as err:
        return Outcome(case.name, False, "unsupported: " + ", ".join(sorted(err.ops)))
    except Exception as err:
        return Outcome(case.name, False, "import: " + _short(err))
    try:
        feeds = {**dict(zip(names, inputs)), **{k: v.numpy() for k, v in params.items()}}
        with warnings.catch_warnings():
            # NaN and inf are values here (fully masked rows, x/0): compared, not raised
            warnings.simplefilter("ignore", RuntimeWarning)
            out = evaluate(mod, feeds)
    except Exception as err:
        return Outcome(case.name, False, "run: " + _short(err))
    outs = list(out) if isinstance(out, tuple) else [out]
    if len(outs) != len(expected):
        return Outcome(case.name, False, f"{len(outs)} outputs, expected {len(expected)}")
    for i, (want, got) in enumerate(zip(expected, outs)):
        diff = compare(want, got)
        if diff:
            return Outcome(case.name, False, f"output {i}: {diff}")
    return Outcome(case.name, True)


# --- the known-failures list --------------------------------------------------------------
def read_known_failures(path: Path) -> dict[str, str]:
    """case name -> reason, from the committed JSON (`{"onnx": version, "failures": {...}}`);
    a list written for another onnx version is an error, not a silent mismatch."""
    data = json.loads(path.read_text())
    if data.get("onnx") != onnx.__version__:
        raise RuntimeError(f"{path.name} was written for onnx {data.get('onnx')}, onnx "
                           f"{onnx.__version__} is installed: rewrite it with "
                           "bench/bench_onnx_conformance.py --write-known-failures")
    return dict(data["failures"])


def write_known_failures(path: Path, outcomes: Sequence[Outcome]) -> None:
    failures = {o.name: o.reason for o in sorted(outcomes, key=lambda o: o.name) if not o.passed}
    text = json.dumps({"onnx": onnx.__version__, "failures": failures}, indent=1)
    path.write_text(text + "\n")


def case_operator(name: str, ops: Sequence[str]) -> str:
    """The operator a case is about: the longest op name (of `ops`, e.g. every onnx schema)
    the case's name starts with (`test_reduce_sum_keepdims` -> ReduceSum)."""
    key = name.removeprefix("test_").replace("_", "").lower()
    best = ""
    for op in ops:
        if key.startswith(op.lower()) and len(op) > len(best):
            best = op
    return best or name.removeprefix("test_").split("_")[0]
