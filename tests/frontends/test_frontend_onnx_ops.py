"""ONNX converters one by one against onnxruntime, plus spans, params and import-time folding."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from frontend_helpers import assert_close, assert_fully_spanned, infer_type, run_module
from onnx import TensorProto, helper, numpy_helper

from engine.ir.expr import Constant
from engine.relay import frontend
from engine.transform import PassContext

ort = pytest.importorskip("onnxruntime")
F = TensorProto.FLOAT


def _build(nodes, inputs, outputs, inits=(), opset=13) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "t", [helper.make_tensor_value_info(n, t, s)
                                          for n, t, s in inputs],
                              [helper.make_tensor_value_info(n, F, None) for n in outputs],
                              initializer=[numpy_helper.from_array(v, k) for k, v in inits])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return onnx.shape_inference.infer_shapes(model)  # declares the output shapes


def _check(model: onnx.ModelProto, feeds: dict[str, np.ndarray], **kwargs):
    data = model.SerializeToString()
    options = ort.SessionOptions()
    options.log_severity_level = 3
    expected = ort.InferenceSession(data, options,
                                    providers=["CPUExecutionProvider"]).run(None, feeds)
    result = frontend.load(data, **kwargs)
    infer_type(result.mod)
    assert_close(run_module(result.mod, feeds), expected)
    assert_fully_spanned(result)
    return result


RNG = np.random.default_rng(0)
X4 = RNG.standard_normal((1, 3, 8, 8)).astype("float32")

CASES = {
    "conv_same_upper": ([helper.make_node("Conv", ["x", "w", "b"], ["y"], auto_pad="SAME_UPPER",
                                          strides=[2, 2])],
                        [("w", RNG.standard_normal((4, 3, 3, 3)).astype("float32")),
                         ("b", RNG.standard_normal(4).astype("float32"))], 13),
    "conv_transpose": ([helper.make_node("ConvTranspose", ["x", "w"], ["y"], strides=[2, 2],
                                         pads=[1, 1, 1, 1], output_padding=[1, 1])],
                       [("w", RNG.standard_normal((3, 2, 3, 3)).astype("float32"))], 13),
    "conv_transpose_output_shape_grows": (  # 24 x 17 unpadded: zeros (and bias) at the ends
        [helper.make_node("ConvTranspose", ["x", "w", "b"], ["y"], strides=[3, 2],
                          output_shape=[25, 18])],
        [("w", RNG.standard_normal((3, 2, 3, 3)).astype("float32")),
         ("b", RNG.standard_normal(2).astype("float32"))], 13),
    "conv_transpose_output_shape_odd_pads": (  # 24 x 17 cut to 23 x 16: one pad at the begin
        [helper.make_node("ConvTranspose", ["x", "w"], ["y"], strides=[3, 2],
                          output_shape=[23, 16])],
        [("w", RNG.standard_normal((3, 2, 3, 3)).astype("float32"))], 13),
    "avgpool_pad": ([helper.make_node("AveragePool", ["x"], ["y"], kernel_shape=[3, 3],
                                      pads=[1, 1, 1, 1], strides=[2, 2])], [], 13),
    "maxpool_ceil": ([helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[3, 3],
                                       strides=[2, 2], ceil_mode=1)], [], 13),
    "softmax_opset11_axis1": ([helper.make_node("Softmax", ["x"], ["y"], axis=1)], [], 11),
    "logsoftmax": ([helper.make_node("LogSoftmax", ["x"], ["y"], axis=-1)], [], 13),
    "lrn": ([helper.make_node("LRN", ["x"], ["y"], size=3, alpha=1e-3)], [], 13),
    "leaky_prelu": ([helper.make_node("LeakyRelu", ["x"], ["a"], alpha=0.2),
                     helper.make_node("PRelu", ["a", "s"], ["y"])],
                    [("s", np.array([[[0.1]], [[0.2]], [[0.3]]], "float32"))], 13),
    "clip_opset11_and_gelu": ([helper.make_node("Clip", ["x", "lo", "hi"], ["a"]),
                               helper.make_node("Gelu", ["a"], ["y"])],
                              [("lo", np.array(-0.5, "float32")),
                               ("hi", np.array(0.7, "float32"))], 20),
    "slice_steps": ([helper.make_node("Slice", ["x", "st", "en", "ax", "sp"], ["y"])],
                    [("st", np.array([1, -1], "int64")), ("en", np.array([7, -100], "int64")),
                     ("ax", np.array([2, 3], "int64")), ("sp", np.array([2, -2], "int64"))], 13),
    "split_concat": ([helper.make_node("Split", ["x", "sz"], ["a", "b"], axis=2),
                      helper.make_node("Concat", ["b", "a"], ["y"], axis=2)],
                     [("sz", np.array([3, 5], "int64"))], 13),
    "pad_reflect": ([helper.make_node("Pad", ["x", "p"], ["y"], mode="reflect")],
                    [("p", np.array([0, 0, 1, 2, 0, 0, 2, 1], "int64"))], 13),
    "pad_negative_time_shift": (  # RWKV's ZeroPad2d((0, 0, 1, -1)): crop one row, pad one
        [helper.make_node("Pad", ["x", "p"], ["y"])],
        [("p", np.array([0, 0, 1, 0, 0, 0, -1, 0], "int64"))], 13),
    "pad_negative_only_and_edge": (  # a pure crop on one axis, edge padding on another
        [helper.make_node("Pad", ["x", "p"], ["a"]),
         helper.make_node("Pad", ["a", "q"], ["y"], mode="edge")],
        [("p", np.array([0, 0, -2, 0, 0, -1, 0, -3], "int64")),
         ("q", np.array([0, 0, 0, -1, 0, 0, 0, 2], "int64"))], 13),
    "resize_linear": ([helper.make_node("Resize", ["x", "", "sc"], ["y"], mode="linear")],
                      [("sc", np.array([1, 1, 2, 2], "float32"))], 13),
    "resize_nearest_sizes": ([helper.make_node("Resize", ["x", "", "", "sz"], ["y"],
                                               mode="nearest",
                                               coordinate_transformation_mode="asymmetric",
                                               nearest_mode="floor")],
                             [("sz", np.array([1, 3, 12, 20], "int64"))], 13),
    "resize_cubic_scales_not_size_ratio": (  # coordinates divide by 0.6, not 4 / 8
        [helper.make_node("Resize", ["x", "", "sc"], ["y"], mode="cubic")],
        [("sc", np.array([1, 1, 0.6, 0.7], "float32"))], 13),
    "resize_axes_not_larger": ([helper.make_node("Resize", ["x", "", "", "sz"], ["y"],
                                                 mode="linear", axes=[3, 2],
                                                 keep_aspect_ratio_policy="not_larger")],
                               [("sz", np.array([5, 13], "int64"))], 18),
    "resize_tf_crop": ([helper.make_node("Resize", ["x", "roi", "", "sz"], ["y"], mode="linear",
                                         coordinate_transformation_mode="tf_crop_and_resize",
                                         extrapolation_value=2.0)],
                       [("roi", np.array([0, 0, 0.2, -0.1, 1, 1, 0.7, 1.2], "float32")),
                        ("sz", np.array([1, 3, 5, 6], "int64"))], 13),
    "upsample_opset9": ([helper.make_node("Upsample", ["x", "sc"], ["y"], mode="nearest")],
                        [("sc", np.array([1, 1, 2, 3], "float32"))], 9),
    "depth_to_space": ([helper.make_node("Tile", ["x", "r"], ["a"]),
                        helper.make_node("DepthToSpace", ["a"], ["y"], blocksize=2, mode="CRD")],
                       [("r", np.array([1, 4, 1, 1], "int64"))], 13),
    "reduce_opset18": ([helper.make_node("ReduceMax", ["x", "ax"], ["a"], keepdims=0),
                        helper.make_node("ReduceSum", ["a", "ax2"], ["y"])],
                       [("ax", np.array([1], "int64")), ("ax2", np.array([-1], "int64"))], 18),
    "argmax_where": ([helper.make_node("ArgMax", ["x"], ["i"], axis=1),
                      helper.make_node("Cast", ["i"], ["f"], to=F),
                      helper.make_node("Greater", ["x", "f"], ["c"]),
                      helper.make_node("Where", ["c", "x", "f"], ["y"])], [], 13),
    "transpose_squeeze_unsqueeze": ([helper.make_node("Transpose", ["x"], ["a"],
                                                      perm=[0, 2, 3, 1]),
                                     helper.make_node("Unsqueeze", ["a", "u"], ["b"]),
                                     helper.make_node("Squeeze", ["b", "u"], ["y"])],
                                    [("u", np.array([0, -1], "int64"))], 13),
    "instance_norm": ([helper.make_node("InstanceNormalization", ["x", "g", "b"], ["y"],
                                        epsilon=1e-3)],
                      [("g", RNG.standard_normal(3).astype("float32")),
                       ("b", RNG.standard_normal(3).astype("float32"))], 13),
    "mvn_spatial_axes": ([helper.make_node("MeanVarianceNormalization", ["x"], ["y"],
                                           axes=[2, 3])], [], 13),
    "layernorm_two_axes": ([helper.make_node("LayerNormalization", ["x", "g"], ["y"], axis=2)],
                           [("g", RNG.standard_normal((8, 8)).astype("float32"))], 17),
    "variadic_and_math": ([helper.make_node("Abs", ["x"], ["a"]),
                           helper.make_node("Sqrt", ["a"], ["b"]),
                           helper.make_node("Max", ["x", "b", "a"], ["c"]),
                           helper.make_node("Mean", ["c", "a"], ["d"]),
                           helper.make_node("Reciprocal", ["d"], ["e"]),
                           helper.make_node("Min", ["e", "x"], ["y"])], [], 13),
    "expand_flatten_gemm": ([helper.make_node("Flatten", ["x"], ["a"], axis=2),
                             helper.make_node("Gemm", ["a", "w"], ["y"], alpha=0.5,
                                              transA=0, transB=0)],
                            [("w", RNG.standard_normal((64, 5)).astype("float32"))], 13),
    "batched_matmul_broadcast": ([helper.make_node("MatMul", ["x", "w"], ["y"])],
                                 [("w", RNG.standard_normal((3, 8, 2)).astype("float32"))], 13),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_op_matches_onnxruntime(case: str) -> None:
    nodes, inits, opset = CASES[case]
    model = _build(nodes, [("x", F, list(X4.shape))], ["y"], inits, opset)
    _check(model, {"x": X4})


def _shape_subgraph_model() -> onnx.ModelProto:
    """x -> Reshape(x, Concat(Gather(Shape(x), 0), [-1])), as exported BERTs compute shapes."""
    nodes = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("Gather", ["s", "zero"], ["n"], axis=0),
             helper.make_node("Unsqueeze", ["n", "axes0"], ["n1"]),
             helper.make_node("Concat", ["n1", "minus1"], ["target"], axis=0),
             helper.make_node("Reshape", ["x", "target"], ["r"]),
             helper.make_node("Relu", ["r"], ["y"])]
    inits = [("zero", np.array(0, "int64")), ("axes0", np.array([0], "int64")),
             ("minus1", np.array([-1], "int64"))]
    model = _build(nodes, [("x", F, ["batch", 3, 8, 8])], ["y"], inits)
    model.graph.output[0].CopyFrom(helper.make_tensor_value_info("y", F, ["batch", 192]))
    return model


def test_shape_subgraph_is_folded_when_shape_is_pinned() -> None:
    model = _shape_subgraph_model()
    result = _check(model, {"x": X4}, shape={"x": [1, 3, 8, 8]})
    text = result.mod.astext(show_meta_data=False)
    assert "shape_of" not in text and "concatenate" not in text
    assert "reshape" in text and "newshape=[1, 192]" in text.replace("(", "[").replace(")", "]")


def test_model_local_functions_are_inlined() -> None:
    """torch.onnx's export_modules_as_functions: the graph calls one function per module
    class (in the module's domain); each call's nodes are imported where it is made."""
    block = helper.make_function(
        "torch.nn.modules.block", "Block", ["a", "w"], ["out"],
        [helper.make_node("MatMul", ["a", "w"], ["m"], name="/MatMul"),
         helper.make_node("Relu", ["m"], ["out"], name="/Relu")],
        [helper.make_opsetid("", 17)])
    nodes = [helper.make_node("Block", ["x", "w1"], ["h"], domain=block.domain, name="/b1"),
             helper.make_node("Block", ["h", "w2"], ["y"], domain=block.domain, name="/b2")]
    weights = [numpy_helper.from_array(RNG.standard_normal(shape).astype("float32"), name)
               for name, shape in (("w1", (8, 8)), ("w2", (8, 4)))]
    graph = helper.make_graph(nodes, "t", [helper.make_tensor_value_info("x", F, [2, 8])],
                              [helper.make_tensor_value_info("y", F, [2, 4])], weights)
    model = helper.make_model(graph, functions=[block], opset_imports=[
        helper.make_opsetid("", 17), helper.make_opsetid(block.domain, 1)])
    model.ir_version = 8
    feeds = {"x": RNG.standard_normal((2, 8)).astype("float32")}
    result = _check(model, feeds)
    layers = [layer["name"] for layer in result.graph["layers"]]
    assert len(layers) == len(set(layers)) == 4 and all(layers)


def test_unnamed_nodes_get_optype_n_names() -> None:
    nodes = [helper.make_node("Relu", ["x"], ["a"]), helper.make_node("Relu", ["a"], ["b"]),
             helper.make_node("Add", ["b", "c"], ["y"], name="named_add")]
    model = _build(nodes, [("x", F, [2, 3])], ["y"], [("c", np.ones((2, 3), "float32"))])
    result = frontend.load(model.SerializeToString())
    names = [layer["name"] for layer in result.graph["layers"]]
    assert names == ["Relu_0", "Relu_1", "named_add"]
    main = result.mod["main"]
    add = main.body
    assert add.span.source_names() == ("named_add",)
    assert add.args[1].span.source_names() == ("named_add.c",)  # weight: consumer.name
    assert main.params[0].span.source_names() == ("Relu_0.x",)  # input: first consumer
    assert add.args[0].span.source_names() == ("Relu_1",)
    assert add.args[0].args[0].span.source_names() == ("Relu_0",)


def test_freeze_params_false_makes_params() -> None:
    w = RNG.standard_normal((4, 3, 3, 3)).astype("float32")
    model = _build([helper.make_node("Conv", ["x", "w"], ["y"], name="conv")],
                   [("x", F, [1, 3, 8, 8])], ["y"], [("w", w)])
    mod, params = frontend.from_onnx(model, freeze_params=False)
    assert list(params) == ["w"]
    np.testing.assert_array_equal(params["w"].numpy(), w)
    assert [p.name_hint for p in mod["main"].params] == ["x", "w"]
    assert mod["main"].params[1].span.source_names() == ("conv.w",)
    out = run_module(mod, {"x": X4, "w": w})
    expected = ort.InferenceSession(model.SerializeToString(),
                                    providers=["CPUExecutionProvider"]).run(None, {"x": X4})
    assert_close(out, expected)


def test_span_filling_switched_off_by_config() -> None:
    model = _build([helper.make_node("Relu", ["x"], ["y"], name="r")], [("x", F, [2])], ["y"])
    with PassContext(config={"relay.frontend.fill_span": False}):
        mod, _ = frontend.from_onnx(model)
    assert not mod["main"].body.span
    assert not mod["main"].params[0].span


def test_dynamic_batch_stays_any_without_pinning() -> None:
    model = _build([helper.make_node("Relu", ["x"], ["y"])], [("x", F, ["n", 4])], ["y"])
    mod, _ = frontend.from_onnx(model)
    shape = mod["main"].params[0].type_annotation.shape
    assert str(shape[0]) == "?" and shape[1] == 4


def test_constant_nodes_fold_and_keep_their_layer() -> None:
    nodes = [helper.make_node("Constant", [], ["c"], name="k",
                              value=numpy_helper.from_array(np.full((2,), 3.0, "float32"))),
             helper.make_node("Mul", ["c", "c"], ["c2"], name="sq"),
             helper.make_node("Add", ["x", "c2"], ["y"], name="add")]
    model = _build(nodes, [("x", F, [2])], ["y"])
    result = _check(model, {"x": np.ones(2, "float32")})
    folded = result.mod["main"].body.args[1]
    assert isinstance(folded, Constant)
    np.testing.assert_array_equal(folded.data.numpy(), [9.0, 9.0])
    assert folded.span.source_names() == ("sq",)


@pytest.mark.parametrize("rows", [5, "n"])
@pytest.mark.parametrize("op,indices", [
    ("Gather", np.array([[0, -1], [-5, 2]], "int64")),
    ("GatherElements", np.array([[-1, 0, 2, -3]] * 2, "int64")),
    ("GatherND", np.array([[-1, 3], [0, -4]], "int64")),
])
def test_gathers_wrap_negative_run_time_indices(op: str, indices: np.ndarray, rows) -> None:
    """Indices fed at run time (not foldable at import): negatives count from the end, along
    a static or a dynamic dimension."""
    x = RNG.standard_normal((5, 4)).astype("float32")
    axis = {"axis": 1} if op == "GatherElements" else {}
    model = _build([helper.make_node(op, ["x", "i"], ["y"], **axis)],
                   [("x", F, [rows, 4]), ("i", TensorProto.INT64, list(indices.shape))], ["y"])
    _check(model, {"x": x, "i": indices})


@pytest.mark.parametrize("shape_input", [False, True])
def test_maxpool_indices_feed_maxunpool(shape_input: bool) -> None:
    """MaxPool's Indices (storage_order 0) put the maxima back with MaxUnpool into the
    pooled input's shape: given as a constant, or computed at run time by Shape(x) of a
    dynamic batch."""
    pool = helper.make_node("MaxPool", ["x"], ["p", "i"], kernel_shape=[2, 3], strides=[2, 2],
                            pads=[0, 1, 1, 1])
    unpool_inputs = ["p", "i", "s"]
    nodes = [pool, helper.make_node("MaxUnpool", unpool_inputs, ["y"], kernel_shape=[2, 3],
                                    strides=[2, 2], pads=[0, 1, 1, 1])]
    inits: list[tuple[str, np.ndarray]] = []
    if shape_input:
        nodes.insert(0, helper.make_node("Shape", ["x"], ["s"]))
    else:
        inits.append(("s", np.array(X4.shape, "int64")))
    model = _build(nodes, [("x", F, ["n", *X4.shape[1:]] if shape_input else list(X4.shape))],
                   ["y"], inits)
    _check(model, {"x": X4})
