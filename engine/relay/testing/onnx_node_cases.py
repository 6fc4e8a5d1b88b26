"""ONNX's own backend node cases run through `relay.frontend.from_onnx` and the interpreter.

The installed onnx package defines its node cases in code
(`onnx.backend.test.case.node`: one model and one data set per case, expected outputs
computed by onnx). Generating them takes seconds, so `node_cases()` writes them once to a
cache folder (`model.onnx`, `input_<i>.pb`, `output_<i>.pb` per case, an `index.json`), keyed by the onnx
version, and later runs read the files. A value is a TensorProto, a SequenceProto (a list
of arrays) or an OptionalProto (None when empty), as the model's input or output type
says, the layout of onnx's own data sets. A sequence or optional input is pinned for the
import (`shape=`: its element shapes, or None when empty). `run_case(case)` imports,
evaluates and compares (rtol 1e-3, atol 1e-5 for floats; exact for integers, booleans and,
by value, the low-precision floats: bfloat16, float8, float4) and returns an
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
LAYOUT = 2  # 2: sequences and optionals are written too


@dataclass(frozen=True)
class NodeCase:
    """One node case on disk: `folder/model.onnx`, `input_<i>.pb`, `output_<i>.pb`."""

    name: str
    folder: Path
    op_types: tuple[str, ...]
    tensor_io: bool  # False when an input or output is a map or a string tensor

    def model(self) -> onnx.ModelProto:
        return onnx.load(str(self.folder / "model.onnx"))

    def data(self) -> tuple[list[Any], list[Any]]:
        """Inputs and expected outputs: arrays, lists of arrays (sequences), None (empty)."""
        graph = self.model().graph
        inits = {t.name for t in graph.initializer}
        inputs = [i for i in graph.input if i.name not in inits]
        return (_read_values(self.folder, "input", inputs),
                _read_values(self.folder, "output", list(graph.output)))


@dataclass(frozen=True)
class Outcome:
    name: str
    passed: bool
    reason: str = ""


def cache_root() -> Path:
    base = os.environ.get(CACHE_ENV) or os.path.join(os.path.expanduser("~"), ".cache",
                                                      "ir-explorer")
    return Path(base) / f"onnx-node-cases-{onnx.__version__}-{LAYOUT}"


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
        tensor_io = _write_data(folder, case.model, inputs, outputs)
        entries.append({"name": case.name, "tensor_io": tensor_io,
                        "op_types": sorted({n.op_type for n in case.model.graph.node})})
    tmp = root / "index.json.tmp"
    tmp.write_text(json.dumps(entries, indent=0))
    tmp.replace(root / "index.json")


def _proto(value: Any, declared: onnx.TypeProto | None) -> Any:
    """A value as the protobuf onnx writes for it (an optional as declared), or None when
    we do not compare it (a map, a string tensor)."""
    if declared is not None and declared.WhichOneof("value") == "optional_type":
        inner = _proto(value, declared.optional_type.elem_type) if value is not None else None
        if value is not None and inner is None:
            return None
        if value is not None and not isinstance(value, list):
            value = np.asarray(value)
        return onnx.numpy_helper.from_optional(value)
    if isinstance(value, onnx.TensorProto):
        value = onnx.numpy_helper.to_array(value)
    if isinstance(value, (np.ndarray, np.generic)):
        array = np.asarray(value)
        return None if array.dtype == object else onnx.numpy_helper.from_array(array)
    if isinstance(value, list):
        parts = [_proto(v, None) for v in value]
        if any(p is None or not isinstance(p, onnx.TensorProto) for p in parts):
            return None
        return onnx.numpy_helper.from_list([np.asarray(v) for v in value])
    return None


def _write_data(folder: Path, model: onnx.ModelProto, inputs: Sequence[Any],
                outputs: Sequence[Any]) -> bool:
    """`input_<i>.pb` / `output_<i>.pb` protobufs (onnx's data layout); False when a value is
    a map or a string tensor (nothing is written then)."""
    inits = {t.name for t in model.graph.initializer}
    declared = {"input": [i.type for i in model.graph.input if i.name not in inits],
                "output": [o.type for o in model.graph.output]}
    protos: dict[str, list[Any]] = {}
    for prefix, values in (("input", inputs), ("output", outputs)):
        types: list[Any] = declared[prefix]
        protos[prefix] = [_proto(v, types[k] if k < len(types) else None)
                          for k, v in enumerate(values)]
        if any(p is None for p in protos[prefix]):
            return False
    for prefix, written in protos.items():
        for i, proto in enumerate(written):
            (folder / f"{prefix}_{i}.pb").write_bytes(proto.SerializeToString())
    return True


def _read_value(path: Path, kind: str | None) -> Any:
    data = path.read_bytes()
    if kind == "sequence_type":
        seq = onnx.SequenceProto()
        seq.ParseFromString(data)
        return onnx.numpy_helper.to_list(seq)
    if kind == "optional_type":
        opt = onnx.OptionalProto()
        opt.ParseFromString(data)
        return onnx.numpy_helper.to_optional(opt)
    tensor = onnx.TensorProto()
    tensor.ParseFromString(data)
    return onnx.numpy_helper.to_array(tensor)


def _read_values(folder: Path, prefix: str, infos: Sequence[onnx.ValueInfoProto]) -> list[Any]:
    out: list[Any] = []
    while (path := folder / f"{prefix}_{len(out)}.pb").exists():
        kind = infos[len(out)].type.WhichOneof("value") if len(out) < len(infos) else None
        out.append(_read_value(path, kind))
    return out


def _feed(name: str, value: Any, feeds: dict[str, Any], pins: dict[str, Any]) -> None:
    """Feed one input: a sequence as a tuple with its element shapes pinned; an empty
    optional pinned None and not fed."""
    if value is None:
        pins[name] = None
    elif isinstance(value, list):
        pins[name] = [list(np.shape(v)) for v in value]
        feeds[name] = tuple(value)
    else:
        feeds[name] = value


# --- running one case --------------------------------------------------------------------
def _short(err: BaseException) -> str:
    text = str(err).strip().splitlines()[0] if str(err).strip() else ""
    text = re.sub(r"0x[0-9a-f]+", "0x..", text)
    return f"{type(err).__name__}: {text}"[:160]


def compare(expected: Any, actual: Any) -> str:
    """'' when `actual` matches `expected` (a sequence: a list, element by element), else
    what differs."""
    if isinstance(expected, list):
        if not isinstance(actual, (tuple, list)) or len(actual) != len(expected):
            return f"a sequence of {len(expected)} expected, got {_kind(actual)}"
        for k, (want, got) in enumerate(zip(expected, actual)):
            diff = compare(want, got)
            if diff:
                return f"element {k}: {diff}"
        return ""
    if isinstance(actual, tuple):
        return f"a tensor expected, got {_kind(actual)}"
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


def _kind(value: Any) -> str:
    return f"a sequence of {len(value)}" if isinstance(value, tuple) else "a tensor"


def run_case(case: NodeCase) -> Outcome:
    """Import the case with `from_onnx`, evaluate it with the interpreter, compare."""
    if not case.tensor_io:
        return Outcome(case.name, False, "map or string inputs or outputs")
    from engine.ir.errors import UnsupportedOperatorError
    from engine.relay.frontend.onnx import from_onnx
    from engine.relay.interpreter import evaluate

    model = case.model()
    inputs, expected = case.data()
    inits = {t.name for t in model.graph.initializer}
    names = [i.name for i in model.graph.input if i.name not in inits]
    feeds: dict[str, Any] = {}
    pins: dict[str, Any] = {}
    for name, value in zip(names, inputs):
        _feed(name, value, feeds, pins)
    try:
        mod, params = from_onnx(model, shape=pins or None)
    except UnsupportedOperatorError as err:
        return Outcome(case.name, False, "unsupported: " + ", ".join(sorted(err.ops)))
    except Exception as err:
        return Outcome(case.name, False, "import: " + _short(err))
    try:
        feeds.update({k: v.numpy() for k, v in params.items()})
        with warnings.catch_warnings():
            # NaN and inf are values here (fully masked rows, x/0): compared, not raised
            warnings.simplefilter("ignore", RuntimeWarning)
            out = evaluate(mod, feeds)
    except Exception as err:
        return Outcome(case.name, False, "run: " + _short(err))
    outs = list(out) if len(model.graph.output) > 1 else [out]
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
