"""Every registered op has the attributes the engine relies on; namespaces mirror TVM."""

from __future__ import annotations

import pytest

from engine import relay
from engine.ir.op import Op, list_ops
from engine.relay.op import OpPattern, TOpPattern

REQUIRED = ("FTVMTypeRelation", "TOpPattern", "TOpIsStateful", "FNumpyCompute")

ISSUE_OPS = [
    "nn.conv2d", "nn.conv2d_transpose", "nn.dense", "nn.batch_matmul", "nn.matmul",
    "nn.bias_add", "nn.batch_norm", "nn.layer_norm", "nn.relu", "nn.leaky_relu", "nn.prelu",
    "clip", "sigmoid", "tanh", "erf", "exp", "log", "sqrt", "rsqrt", "negative", "abs", "add",
    "subtract", "multiply", "divide", "power", "maximum", "minimum", "nn.softmax",
    "nn.log_softmax", "nn.max_pool2d", "nn.avg_pool2d", "nn.global_avg_pool2d",
    "nn.global_max_pool2d", "nn.lrn", "nn.pad", "nn.batch_flatten", "nn.dropout", "reshape",
    "contrib_reverse_reshape", "transpose", "squeeze", "expand_dims", "concatenate", "split",
    "strided_slice", "take", "gather", "where", "cast", "mean", "sum", "max", "min", "variance",
    "argmax", "shape_of", "zeros", "ones", "full", "zeros_like", "ones_like", "full_like",
    "image.resize2d", "nn.depth_to_space", "layout_transform", "copy", "equal", "not_equal",
    "less", "less_equal", "greater", "greater_equal", "tile", "arange", "one_hot",
    "nn.upsampling",
]


@pytest.mark.parametrize("name", ISSUE_OPS)
def test_issue_op_is_registered_with_all_attributes(name: str) -> None:
    op = Op.get(name)
    for key in REQUIRED:
        assert op.has_attr(key), f"{name} lacks {key}"
    assert isinstance(op.get_attr("TOpPattern"), int)
    assert op.get_attr("TOpIsStateful") is False


def test_every_op_with_a_numpy_compute_is_fully_registered() -> None:
    # Ops named "test.*" are registered by other tests for their own purposes.
    ours = [n for n in list_ops()
            if Op.get(n).has_attr("FNumpyCompute") and not n.startswith("test.")]
    assert set(ISSUE_OPS) <= set(ours)
    for name in ours:
        op = Op.get(name)
        assert callable(op.get_attr("FTVMTypeRelation")), name
        assert op.get_attr("TOpPattern") in (0, 1, 2, 3, 4, 7, 8), name
        assert isinstance(op.get_attr("TOpIsStateful"), bool), name


def test_pattern_constants_match_tvm() -> None:
    assert (OpPattern.ELEMWISE, OpPattern.BROADCAST, OpPattern.INJECTIVE,
            OpPattern.COMM_REDUCE, OpPattern.OUT_ELEMWISE_FUSABLE, OpPattern.TUPLE,
            OpPattern.OPAQUE) == (0, 1, 2, 3, 4, 7, 8)
    assert TOpPattern is OpPattern
    assert Op.get("add").get_attr("TOpPattern") == OpPattern.BROADCAST
    assert Op.get("nn.conv2d").get_attr("TOpPattern") == OpPattern.OUT_ELEMWISE_FUSABLE
    assert Op.get("sum").get_attr("TOpPattern") == OpPattern.COMM_REDUCE
    assert Op.get("reshape").get_attr("TOpPattern") == OpPattern.INJECTIVE


def test_namespaces_and_attrs_type_keys() -> None:
    x = relay.var("x", shape=(1, 3, 8, 8))
    w = relay.var("w", shape=(4, 3, 3, 3))
    call = relay.nn.conv2d(x, w, padding=1)
    assert call.op is Op.get("nn.conv2d")
    assert call.attrs.type_key == "relay.attrs.Conv2DAttrs"
    assert call.attrs.padding == (1, 1, 1, 1)
    assert call.attrs["strides"] == (1, 1)
    assert Op.get("nn.conv2d").info.attrs_type_key == "relay.attrs.Conv2DAttrs"
    assert Op.get("nn.conv2d").arguments == ("data", "weight")
    assert relay.op.nn.relu is relay.nn.relu
    assert relay.image.resize2d is relay.op.image.resize2d
    assert relay.add(x, x).op.name == "add"


def test_padding_normalisation_follows_get_pad_tuple2d() -> None:
    x = relay.var("x", shape=(1, 3, 8, 8))
    w = relay.var("w", shape=(4, 3, 3, 3))
    assert relay.nn.conv2d(x, w, padding=(1, 2)).attrs.padding == (1, 2, 1, 2)
    assert relay.nn.conv2d(x, w, padding=(1, 2, 3, 4)).attrs.padding == (1, 2, 3, 4)
    assert relay.nn.max_pool2d(x, padding=2).attrs.padding == (2, 2, 2, 2)


def test_tuple_wrappers_index_to_tuple_getitem() -> None:
    x = relay.var("x", shape=(4, 6))
    parts = relay.split(x, 3, axis=1)
    assert len(parts) == 3
    item = parts[2]
    assert isinstance(item, relay.TupleGetItem) and item.index == 2
    assert parts.astuple().op.name == "split"
    v = relay.var("v", shape=(6,))
    bn = relay.nn.batch_norm(x, v, v, v, v, axis=1)
    assert len(bn) == 3 and bn[0].tuple_value.op.name == "nn.batch_norm"
    with pytest.raises(IndexError):
        bn[3]
