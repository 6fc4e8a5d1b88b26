"""TFLite converters one op at a time, on graphs built as records (no flatbuffer, no
TensorFlow): shape ops against numpy's semantics, TFLite's float formulas, the hybrid
arithmetic against a transcription of TFLite's portable kernels, and sparse densification
against the NNAPI DENSIFY examples."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from engine.relay.frontend.common import ConversionError
from engine.relay.frontend.tflite.importer import TFLiteImporter
from engine.relay.frontend.tflite.model import OpRecord, Quantization, TensorRecord, TFLiteGraph
from engine.relay.frontend.tflite.sparse import DimLevel, Sparsity, densify
from engine.relay.interpreter import evaluate


class Graph:
    """A one-op TFLite graph: run-time inputs are graph inputs, the rest constants."""

    def __init__(self) -> None:
        self.tensors: list[TensorRecord] = []
        self.inputs: list[int] = []
        self.feeds: dict[str, np.ndarray] = {}

    def tensor(self, value: np.ndarray | None = None, shape: tuple[int, ...] = (),
               dtype: str = "float32", runtime: bool = False,
               quant: Quantization | None = None) -> int:
        index = len(self.tensors)
        name = f"t{index}"
        if value is not None:
            shape, dtype = tuple(value.shape), str(value.dtype)
        self.tensors.append(TensorRecord(index, name, shape, dtype,
                                         None if runtime else value, quant))
        if runtime:
            self.inputs.append(index)
            assert value is not None
            self.feeds[name] = value
        return index

    def run(self, op_type: str, inputs: list[int], outputs: list[tuple[tuple[int, ...], str]],
            out_quant: Quantization | None = None, **options: Any) -> list[np.ndarray]:
        outs = [self.tensor(shape=shape, dtype=dtype, quant=out_quant)
                for shape, dtype in outputs]
        graph = TFLiteGraph(self.tensors, [OpRecord(0, op_type, inputs, outs, options)],
                            self.inputs, outs)
        mod, _, _ = TFLiteImporter(graph, None, None).run()
        result = evaluate(mod, self.feeds)
        items = result if isinstance(result, (list, tuple)) else [result]
        return [np.asarray(r) for r in items]


X = np.arange(4 * 5 * 6, dtype="float32").reshape(4, 5, 6)


def _strided(begin: list[int], end: list[int], strides: list[int], out: np.ndarray,
             **masks: int) -> np.ndarray:
    g = Graph()
    args = [g.tensor(X, runtime=True)] + [g.tensor(np.asarray(v, dtype="int32"))
                                          for v in (begin, end, strides)]
    (got,) = g.run("STRIDED_SLICE", args, [(out.shape, "float32")], **masks)
    return got


@pytest.mark.parametrize("begin,end,strides,masks,expected", [
    ([1, 0, 2], [3, 0, 0], [1, -1, 1], {"BeginMask": 2, "EndMask": 2, "ShrinkAxisMask": 4},
     X[1:3, ::-1, 2]),
    ([0, 1], [0, 4], [1, 1], {"EllipsisMask": 1, "NewAxisMask": 0}, X[..., 1:4]),
    ([0, 0, 1], [0, 0, 4], [1, 1, 1], {"EllipsisMask": 1, "NewAxisMask": 2},
     X[..., None, 1:4]),
    ([3, 0, -1], [0, 0, 0], [-2, 1, 1], {"BeginMask": 0, "EndMask": 6}, X[3:0:-2, :, -1:]),
    ([-1, 1], [0, 2], [1, 1], {"ShrinkAxisMask": 1, "Offset": 1}, X[-1, 1:3]),
    ([0], [0], [-1], {"BeginMask": 1, "EndMask": 1}, X[::-1]),
    ([0, 0], [0, 0], [1, -1], {"EndMask": 2}, X[:0, 0::-1]),
])
def test_strided_slice_follows_tf_semantics(begin, end, strides, masks, expected) -> None:
    got = _strided(begin, end, strides, expected, **masks)
    np.testing.assert_array_equal(got, expected)


def test_gather_with_run_time_indices_and_shape_arithmetic() -> None:
    g = Graph()
    table = g.tensor(X, runtime=True)
    idx = g.tensor(np.asarray([[3, 0], [1, 1]], dtype="int32"), runtime=True)
    (got,) = g.run("GATHER", [table, idx], [((4, 2, 2, 6), "float32")], Axis=1)
    np.testing.assert_array_equal(got, np.take(X, [[3, 0], [1, 1]], axis=1))


def test_shape_pack_and_reshape_fold_at_import() -> None:
    g = Graph()
    x = g.tensor(X, runtime=True)
    shape = g.tensor(shape=(3,), dtype="int32")
    graph_ops = [OpRecord(0, "SHAPE", [x], [shape], {})]
    first = g.tensor(shape=(), dtype="int32")
    graph_ops.append(OpRecord(1, "GATHER", [shape, g.tensor(np.asarray(0, dtype="int32"))],
                              [first], {"Axis": 0}))
    packed = g.tensor(shape=(2,), dtype="int32")
    graph_ops.append(OpRecord(2, "PACK", [first, g.tensor(np.asarray(-1, dtype="int32"))],
                              [packed], {"Axis": 0, "ValuesCount": 2}))
    out = g.tensor(shape=(4, 30))
    graph_ops.append(OpRecord(3, "RESHAPE", [x, packed], [out], {}))
    graph = TFLiteGraph(g.tensors, graph_ops, g.inputs, [out])
    mod, _, _ = TFLiteImporter(graph, None, None).run()
    assert "shape_of" not in mod.astext() and "stack" not in mod.astext()
    np.testing.assert_array_equal(evaluate(mod, g.feeds), X.reshape(4, 30))


def test_unpack_gives_every_slice() -> None:
    g = Graph()
    outs = g.run("UNPACK", [g.tensor(X, runtime=True)], [((4, 6), "float32")] * 5, Axis=1,
                 Num=5)
    for i, got in enumerate(outs):
        np.testing.assert_array_equal(got, X[:, i])


def _unary(op: str, x: np.ndarray, **options: Any) -> np.ndarray:
    g = Graph()
    (got,) = g.run(op, [g.tensor(x, runtime=True)], [(x.shape, "float32")], **options)
    return got


V = np.linspace(-5, 5, 41, dtype="float32")


@pytest.mark.parametrize("op,options,expected", [
    ("HARD_SWISH", {}, V * np.clip(V + 3, 0, 6) / 6),
    ("NEG", {}, -V),
    ("RSQRT", {}, 1 / np.sqrt(np.abs(V) + 1)),
    ("GELU", {"Approximate": False},
     0.5 * V * (1 + np.vectorize(math.erf)(V / math.sqrt(2)))),
    ("GELU", {"Approximate": True},
     0.5 * V * (1 + np.tanh(math.sqrt(2 / math.pi) * (V + 0.044715 * V ** 3)))),
])
def test_activations_compute_tflites_formulas(op, options, expected) -> None:
    x = np.abs(V) + 1 if op == "RSQRT" else V
    np.testing.assert_allclose(_unary(op, x, **options), expected, rtol=1e-5, atol=1e-6)


def test_squared_difference_and_batch_matmul_broadcast() -> None:
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(2, 1, 3, 4)).astype("float32"), \
        rng.normal(size=(5, 2, 4)).astype("float32")
    g = Graph()
    (got,) = g.run("BATCH_MATMUL", [g.tensor(a, runtime=True), g.tensor(b, runtime=True)],
                   [((2, 5, 3, 4), "float32")], AdjY=True)
    np.testing.assert_allclose(got, a @ np.swapaxes(b, -1, -2), rtol=1e-5, atol=1e-6)
    g = Graph()
    (got,) = g.run("SQUARED_DIFFERENCE", [g.tensor(a, runtime=True), g.tensor(a[..., :1])],
                   [(a.shape, "float32")])
    np.testing.assert_allclose(got, (a - a[..., :1]) ** 2, rtol=1e-6)


# --- quantization --------------------------------------------------------------------------
def _round(v: np.ndarray) -> np.ndarray:
    return np.sign(v) * np.floor(np.abs(v) + 0.5)  # C's round (ties away from zero)


def _tflite_hybrid_fc(x: np.ndarray, w: np.ndarray, scale: np.ndarray, bias: np.ndarray,
                      asymmetric: bool) -> np.ndarray:
    """TFLite's hybrid FULLY_CONNECTED, row by row (portable_tensor_utils)."""
    out = []
    for row in x:
        if asymmetric:
            lo, hi = min(0.0, float(row.min())), max(0.0, float(row.max()))
            if lo == hi:
                q, s, zp = np.zeros_like(row), np.float32(1), 0
            else:
                s64 = (hi - lo) / 255.0
                z = -128 - lo / s64 if 128 + abs(lo / s64) < 127 + abs(hi / s64) \
                    else 127 - hi / s64
                zp = -128 if z <= -128 else 127 if z >= 127 else int(_round(np.float64(z)))
                s = np.float32(s64)
                q = np.clip(_round(row * np.float32(1.0 / np.float64(s))) + zp, -128, 127)
        else:
            top = np.float32(np.abs(row).max()) or np.float32(127)  # all zero: q = 0
            zp, s = 0, top / np.float32(127)
            q = np.clip(_round(row * (np.float32(127) / top)), -127, 127)
        acc = (q.astype(np.int64) - zp) @ w.astype(np.int64).T
        out.append(acc.astype(np.float32) * (scale * s) + bias)
    return np.stack(out)


@pytest.mark.parametrize("asymmetric", [False, True])
def test_hybrid_fully_connected_quantizes_each_row_as_tflite(asymmetric: bool) -> None:
    rng = np.random.default_rng(1)
    x = rng.normal(size=(3, 16)).astype("float32")
    x[1] = np.abs(x[1])  # all positive: the zero point sits at -128
    x[2, :] = 0.0  # an all-zero row: the output is the bias
    w = rng.integers(-127, 128, size=(8, 16)).astype("int8")
    scale = rng.uniform(0.001, 0.01, size=8).astype("float32")
    bias = rng.normal(size=8).astype("float32")
    g = Graph()
    args = [g.tensor(x, runtime=True),
            g.tensor(w, quant=Quantization(scale, np.zeros(8, dtype="int64"), 0)),
            g.tensor(bias)]
    (got,) = g.run("FULLY_CONNECTED", args, [((3, 8), "float32")],
                   AsymmetricQuantizeInputs=asymmetric)
    np.testing.assert_allclose(got, _tflite_hybrid_fc(x, w, scale, bias, asymmetric),
                               rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(got[2], bias, rtol=0, atol=0)


def test_quantize_dequantize_pair_rounds_half_away_from_zero() -> None:
    x = np.asarray([-2.5, -0.5, 0.5, 1.5, 2.5, 300.0, -300.0], dtype="float32")
    quant = Quantization(np.asarray([1.0], dtype="float32"), np.asarray([3]), 0)
    g = Graph()
    src = g.tensor(x, runtime=True)
    q = g.tensor(shape=x.shape, dtype="int8", quant=quant)
    out = g.tensor(shape=x.shape)
    ops = [OpRecord(0, "QUANTIZE", [src], [q], {}), OpRecord(1, "DEQUANTIZE", [q], [out], {})]
    mod, _, _ = TFLiteImporter(TFLiteGraph(g.tensors, ops, g.inputs, [out]), None, None).run()
    expected = (np.clip(_round(x) + 3, -128, 127) - 3).astype("float32")
    np.testing.assert_array_equal(evaluate(mod, g.feeds), expected)


def test_an_integer_op_without_an_integer_kernel_is_refused_by_name() -> None:
    g = Graph()
    quant = Quantization(np.asarray([0.5], dtype="float32"), np.asarray([0]), 0)
    a = g.tensor(np.zeros((2, 2), dtype="int8"), runtime=True, quant=quant)
    with pytest.raises(ConversionError, match="integer kernel for FLOOR is not converted"):
        g.run("FLOOR", [a], [((2, 2), "int8")], out_quant=quant)


# --- sparse tensors ------------------------------------------------------------------------
def _level(fmt: int, size: int = 0, segments: list[int] | None = None,
           indices: list[int] | None = None) -> DimLevel:
    return DimLevel(fmt, size, np.asarray(segments or [], dtype=np.int64),
                    np.asarray(indices or [], dtype=np.int64))


def test_densify_csr_levels() -> None:
    """NNAPI's densify_4 example: formats (CSR, dense, CSR) over a 3x2x2 tensor."""
    sparsity = Sparsity((0, 1, 2), (), (_level(1, 0, [0, 2], [0, 2]), _level(0, 2),
                                         _level(1, 0, [0, 1, 3, 4, 5], [0, 0, 1, 0, 1])))
    values = np.asarray([6, 9, 8, 5, 7], dtype="float32")
    expected = np.asarray([6, 0, 9, 8, 0, 0, 0, 0, 5, 0, 0, 7], dtype="float32")
    np.testing.assert_array_equal(densify(values, (3, 2, 2), sparsity).reshape(-1), expected)


def test_densify_blocked_rows() -> None:
    """A 4x4 matrix in 2x2 blocks, CSR over block columns (dims: rows/2, cols/2, 2, 2)."""
    dense = np.zeros((4, 4), dtype="float32")
    dense[0:2, 2:4] = [[1, 2], [3, 4]]
    dense[2:4, 0:2] = [[5, 6], [7, 8]]
    sparsity = Sparsity((0, 1, 2, 3), (0, 1), (
        _level(0, 2), _level(1, 0, [0, 1, 2], [1, 0]), _level(0, 2), _level(0, 2)))
    values = np.asarray([1, 2, 3, 4, 5, 6, 7, 8], dtype="float32")
    np.testing.assert_array_equal(densify(values, (4, 4), sparsity), dense)
