"""nn ops against onnxruntime (the same maths from an independent implementation)."""

from __future__ import annotations

import numpy as np
import pytest

from engine import relay
from engine.ir.errors import TypeInferenceError
from engine.relay.type_infer import infer_type

RNG = np.random.default_rng(2)


def rand(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype("float32")


def check_type(expr: relay.Expr, want: np.ndarray) -> None:
    infer_type(expr)
    assert expr.checked_type == relay.TensorType(want.shape, str(want.dtype))


CONV_CASES = [  # (cin, cout, k, stride, pad, dilation, groups)
    (3, 8, 3, 1, 1, 1, 1), (4, 6, 3, 2, (0, 1), 1, 1), (4, 8, 3, 1, 2, 2, 2),
    (8, 8, 3, 2, 1, 1, 8), (4, 8, 3, 1, 1, 1, 4), (6, 12, 1, 2, 0, 1, 1), (3, 4, 7, 2, 3, 1, 1),
]


@pytest.mark.parametrize("cin,cout,k,stride,pad,dil,groups", CONV_CASES)
def test_conv2d_nchw_matches_ort(cin, cout, k, stride, pad, dil, groups, ort_run, run_expr):
    x, w = rand(2, cin, 9, 10), rand(cout, cin // groups, k, k)
    call = relay.nn.conv2d(relay.var("x", shape=x.shape), relay.var("w", shape=w.shape),
                           strides=stride, padding=pad, dilation=dil, groups=groups,
                           channels=cout, kernel_size=k)
    pads = list(call.attrs.padding)
    want = ort_run("Conv", {"x": x, "w": w}, {"strides": [stride] * 2, "dilations": [dil] * 2,
                                             "pads": [pads[0], pads[1], pads[2], pads[3]],
                                             "group": groups})[0]
    check_type(call, want)
    np.testing.assert_allclose(run_expr(call, x=x, w=w), want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("groups,kernel_layout", [(1, "HWIO"), (1, "OHWI"), (8, "HWOI")])
def test_conv2d_nhwc_agrees_with_nchw(groups, kernel_layout, run_expr):
    x, w = rand(1, 8, 7, 7), rand(8, 8 // groups, 3, 3)
    ref = relay.nn.conv2d(relay.var("x", shape=x.shape), relay.var("w", shape=w.shape),
                          padding=1, groups=groups)
    if kernel_layout == "HWOI":  # depthwise: (kh, kw, channels, multiplier)
        wk = w.transpose(2, 3, 0, 1)
    else:
        wk = w.transpose(["OIHW".index(c) for c in kernel_layout])
    xn = x.transpose(0, 2, 3, 1)
    call = relay.nn.conv2d(relay.var("x", shape=xn.shape), relay.var("w", shape=wk.shape),
                           padding=1, groups=groups, data_layout="NHWC",
                           kernel_layout=kernel_layout)
    out = run_expr(call, x=xn, w=wk)
    check_type(call, out)
    np.testing.assert_allclose(out, run_expr(ref, x=x, w=w).transpose(0, 2, 3, 1), rtol=1e-5,
                               atol=1e-5)


@pytest.mark.parametrize("nd", [1, 2])
def test_depthwise_conv_sums_half_precision_in_float32(nd, run_expr):
    """A float16 depthwise conv sums its taps in float32 and rounds once, as numpy's matmul
    (the other conv paths), BLAS and onnxruntime do; summing in float16 rounds every tap."""
    x = RNG.uniform(0.5, 1.0, (1, 4) + (8,) * nd).astype("float16")
    w = RNG.uniform(0.5, 1.0, (4, 1) + (5,) * nd).astype("float16")
    conv = relay.nn.conv1d if nd == 1 else relay.nn.conv2d
    call = conv(relay.var("x", shape=x.shape, dtype="float16"),
                relay.var("w", shape=w.shape, dtype="float16"), groups=4)
    out = run_expr(call, x=x, w=w)
    taps = np.lib.stride_tricks.sliding_window_view(x.astype("float64"), w.shape[2:],
                                                    axis=tuple(range(2, 2 + nd)))
    axes = tuple(range(-nd, 0))
    kernel = w[:, 0].astype("float64").reshape((1, 4) + (1,) * nd + w.shape[2:])
    exact = (taps * kernel).sum(axis=axes)
    assert out.dtype == np.float16
    np.testing.assert_array_equal(out, exact.astype("float16"))


def test_conv2d_channel_mismatch_is_clear():
    call = relay.nn.conv2d(relay.var("x", shape=(1, 3, 8, 8)),
                           relay.var("w", shape=(4, 5, 3, 3)))
    with pytest.raises(TypeInferenceError) as err:
        infer_type(call)
    text = str(err.value)
    assert "nn.conv2d, argument 'weight'" in text
    assert "Tensor[(4, 5, 3, 3), float32]" in text and "expected" in text


@pytest.mark.parametrize("stride,pad,out_pad,groups", [(2, 1, 1, 1), (1, 0, 0, 1),
                                                       (2, 0, 0, 2), (3, 1, 2, 1)])
def test_conv2d_transpose_matches_ort(stride, pad, out_pad, groups, ort_run, run_expr):
    x, w = rand(1, 4, 5, 6), rand(4, 6 // groups, 3, 3)
    call = relay.nn.conv2d_transpose(relay.var("x", shape=x.shape),
                                     relay.var("w", shape=w.shape), strides=stride,
                                     padding=pad, output_padding=out_pad, groups=groups)
    want = ort_run("ConvTranspose", {"x": x, "w": w}, {
        "strides": [stride] * 2, "pads": [pad] * 4, "output_padding": [out_pad] * 2,
        "group": groups})[0]
    check_type(call, want)
    np.testing.assert_allclose(run_expr(call, x=x, w=w), want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("kind,k,stride,pad,ceil,include", [
    ("max", 3, 2, 1, False, False), ("max", 2, 2, 0, True, False), ("avg", 3, 2, 1, False, False),
    ("avg", 3, 2, 1, False, True), ("avg", 2, 2, 0, True, False), ("max", 3, 1, 0, False, False),
    # ceil_mode: a last window that would start in the end padding is dropped (7x8 -> 3x3)
    ("max", 2, 3, 1, True, False), ("avg", 2, 3, 1, True, True),
])
def test_pool2d_matches_ort(kind, k, stride, pad, ceil, include, ort_run, run_expr):
    x = rand(1, 3, 7, 8)
    v = relay.var("x", shape=x.shape)
    attrs = {"kernel_shape": [k, k], "strides": [stride] * 2, "pads": [pad] * 4,
             "ceil_mode": int(ceil)}
    if kind == "max":
        call = relay.nn.max_pool2d(v, (k, k), (stride, stride), padding=pad, ceil_mode=ceil)
        want = ort_run("MaxPool", {"x": x}, attrs)[0]
    else:
        call = relay.nn.avg_pool2d(v, (k, k), (stride, stride), padding=pad, ceil_mode=ceil,
                                   count_include_pad=include)
        want = ort_run("AveragePool", {"x": x}, {**attrs, "count_include_pad": int(include)})[0]
    check_type(call, want)
    np.testing.assert_allclose(run_expr(call, x=x), want, rtol=1e-5, atol=1e-6)


def test_global_pools_nchw_and_nhwc(run_expr):
    x = rand(2, 3, 4, 5)
    v = relay.var("x", shape=x.shape)
    avg = relay.nn.global_avg_pool2d(v)
    check_type(avg, x.mean((2, 3), keepdims=True))
    np.testing.assert_allclose(run_expr(avg, x=x), x.mean((2, 3), keepdims=True), rtol=1e-6)
    xn = x.transpose(0, 2, 3, 1)
    mx = relay.nn.global_max_pool2d(relay.var("x", shape=xn.shape), layout="NHWC")
    np.testing.assert_array_equal(run_expr(mx, x=xn), xn.max((1, 2), keepdims=True))


def test_dense_batch_matmul_matmul(run_expr):
    a, w = rand(2, 3, 5), rand(4, 5)
    call = relay.nn.dense(relay.var("a", shape=a.shape), relay.var("w", shape=w.shape))
    check_type(call, a @ w.T)
    np.testing.assert_allclose(run_expr(call, a=a, w=w), a @ w.T, rtol=1e-5)
    x, y = rand(3, 4, 5), rand(1, 6, 5)
    bmm = relay.nn.batch_matmul(relay.var("x", shape=x.shape), relay.var("y", shape=y.shape))
    want = x @ y.transpose(0, 2, 1)
    check_type(bmm, want)
    np.testing.assert_allclose(run_expr(bmm, x=x, y=y), want, rtol=1e-5)
    mm = relay.nn.matmul(relay.var("a", shape=(3, 5)), relay.var("b", shape=(5, 2)))
    infer_type(mm)
    assert mm.checked_type.shape == (3, 2)
    with pytest.raises(TypeInferenceError, match="nn.dense, argument 'weight'"):
        infer_type(relay.nn.dense(relay.var("a", shape=(2, 5)), relay.var("w", shape=(4, 6))))


def test_batch_norm_returns_three_fields(ort_run, run_expr):
    x = rand(2, 3, 4, 4)
    g, b, m = rand(3), rand(3), rand(3)
    v = np.abs(rand(3)) + 0.5
    names = ["x", "g", "b", "m", "v"]
    vs = [relay.var(n, shape=a.shape) for n, a in zip(names, [x, g, b, m, v])]
    bn = relay.nn.batch_norm(*vs, epsilon=1e-3)
    tup = bn.astuple()
    infer_type(tup)
    assert len(tup.checked_type.fields) == 3
    want = ort_run("BatchNormalization", dict(zip(names, [x, g, b, m, v])), {"epsilon": 1e-3})[0]
    out = run_expr(bn[0], x=x, g=g, b=b, m=m, v=v)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(run_expr(bn[2], x=x, g=g, b=b, m=m, v=v), v)


def test_layer_norm_softmax_lrn(ort_run, run_expr):
    x = rand(2, 5, 6)
    g, b = rand(6), rand(6)
    ln = relay.nn.layer_norm(*(relay.var(n, shape=a.shape) for n, a in
                               zip("xgb", [x, g, b])), epsilon=1e-5)
    want = ort_run("LayerNormalization", {"x": x, "g": g, "b": b}, {"epsilon": 1e-5},
                   opset=17)[0]
    np.testing.assert_allclose(run_expr(ln, x=x, g=g, b=b), want, rtol=1e-4, atol=1e-5)
    v = relay.var("x", shape=x.shape)
    sm = run_expr(relay.nn.softmax(v, axis=1), x=x)
    np.testing.assert_allclose(sm, ort_run("Softmax", {"x": x}, {"axis": 1})[0], rtol=1e-5)
    lsm = run_expr(relay.nn.log_softmax(v), x=x)
    np.testing.assert_allclose(lsm, ort_run("LogSoftmax", {"x": x}, {"axis": -1})[0],
                               rtol=1e-5, atol=1e-6)
    x4 = rand(1, 7, 3, 3)
    lrn = relay.nn.lrn(relay.var("x", shape=x4.shape), size=3, bias=1.0, alpha=1e-4, beta=0.75)
    want = ort_run("LRN", {"x": x4}, {"size": 3, "bias": 1.0, "alpha": 1e-4, "beta": 0.75})[0]
    np.testing.assert_allclose(run_expr(lrn, x=x4), want, rtol=1e-5)


def test_activations(run_expr):
    x = np.array([[-2.0, -0.5, 0.0, 3.0]], "float32")
    v = relay.var("x", shape=x.shape)
    np.testing.assert_array_equal(run_expr(relay.nn.relu(v), x=x), [[0, 0, 0, 3]])
    np.testing.assert_allclose(run_expr(relay.nn.leaky_relu(v, 0.1), x=x),
                               [[-0.2, -0.05, 0, 3]], rtol=1e-6)
    a = relay.var("a", shape=(4,))
    pr = relay.nn.prelu(v, a, axis=-1)
    np.testing.assert_allclose(run_expr(pr, x=x, a=np.array([1, 2, 3, 4], "float32")),
                               [[-2, -1, 0, 3]])
    drop = relay.nn.dropout(v, 0.5)
    np.testing.assert_array_equal(run_expr(drop, x=x), x)
    ba = relay.nn.bias_add(relay.var("y", shape=(2, 3, 2)), relay.var("b", shape=(3,)))
    out = run_expr(ba, y=np.zeros((2, 3, 2), "float32"), b=np.array([1, 2, 3], "float32"))
    np.testing.assert_array_equal(out[1, :, 1], [1, 2, 3])
    flat = relay.nn.batch_flatten(relay.var("z", shape=(2, 3, 4)))
    infer_type(flat)
    assert flat.checked_type.shape == (2, 12)


def test_pad_modes(ort_run, run_expr):
    x = rand(1, 2, 3, 3)
    v = relay.var("x", shape=x.shape)
    widths = ((0, 0), (0, 0), (1, 2), (2, 1))
    const = relay.nn.pad(v, widths, 1.5)
    want = np.pad(x, widths, constant_values=1.5)
    check_type(const, want)
    np.testing.assert_array_equal(run_expr(const, x=x), want)
    refl = run_expr(relay.nn.pad(v, widths, pad_mode="reflect"), x=x)
    np.testing.assert_array_equal(refl, np.pad(x, widths, mode="reflect"))
    edge = run_expr(relay.nn.pad(v, widths, pad_mode="edge"), x=x)
    np.testing.assert_array_equal(edge, np.pad(x, widths, mode="edge"))


@pytest.mark.parametrize("mode", ["DCR", "CRD"])
def test_depth_to_space_matches_ort(mode, ort_run, run_expr):
    x = rand(1, 8, 2, 3)
    call = relay.nn.depth_to_space(relay.var("x", shape=x.shape), 2, mode=mode)
    want = ort_run("DepthToSpace", {"x": x}, {"blocksize": 2, "mode": mode})[0]
    check_type(call, want)
    np.testing.assert_array_equal(run_expr(call, x=x), want)
    s2d = relay.nn.space_to_depth(relay.var("y", shape=want.shape), 2)
    np.testing.assert_array_equal(run_expr(s2d, y=want),
                                  ort_run("SpaceToDepth", {"y": want}, {"blocksize": 2})[0])
    # space_to_depth in the same mode undoes depth_to_space (ONNX opset 28's SpaceToDepth mode)
    back = relay.nn.space_to_depth(relay.var("y", shape=want.shape), 2, mode=mode)
    np.testing.assert_array_equal(run_expr(back, y=want), x)


@pytest.mark.parametrize("method,ctm,rounding", [
    ("nearest_neighbor", "asymmetric", "floor"),
    ("nearest_neighbor", "half_pixel", "round_prefer_floor"),
    ("linear", "half_pixel", ""), ("linear", "align_corners", ""),
    ("linear", "pytorch_half_pixel", ""), ("cubic", "half_pixel", ""),
    ("cubic", "asymmetric", ""),
])
def test_resize2d_matches_ort(method, ctm, rounding, ort_run, run_expr):
    x = rand(1, 2, 4, 5)
    size = (7, 3)
    call = relay.image.resize2d(relay.var("x", shape=x.shape), size, method=method,
                                coordinate_transformation_mode=ctm, rounding_method=rounding,
                                cubic_alpha=-0.75)
    onnx_mode = {"nearest_neighbor": "nearest", "linear": "linear", "cubic": "cubic"}[method]
    attrs = {"mode": onnx_mode, "coordinate_transformation_mode": ctm, "cubic_coeff_a": -0.75}
    if method == "nearest_neighbor":
        attrs["nearest_mode"] = rounding
    sizes = np.array([1, 2, *size], "int64")
    want = ort_run("Resize", {"x": x, "sizes": sizes}, attrs,
                   node_inputs=["x", "", "", "sizes"])[0]
    check_type(call, want)
    np.testing.assert_allclose(run_expr(call, x=x), want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("method,ctm,exclude,scales", [
    ("linear", "half_pixel", 0, (0.6, 0.3)), ("linear", "align_corners", 1, (0.5, 0.45)),
    ("cubic", "half_pixel", 0, (0.6, 0.3)), ("cubic", "asymmetric", 1, (0.4, 1.5)),
    ("cubic", "pytorch_half_pixel", 0, (1.0, 0.25)),
])
def test_resize2d_antialias_matches_ort(method, ctm, exclude, scales, ort_run, run_expr):
    """A downscale widens the kernel by 1 / scale and renormalises it (an upscale axis is
    interpolated as without antialias); exclude_outside drops taps past the edges."""
    x = rand(1, 2, 9, 13)
    size = tuple(int(n * f) for n, f in zip(x.shape[2:], scales))
    call = relay.image.resize2d(relay.var("x", shape=x.shape), size, method=method,
                                coordinate_transformation_mode=ctm, cubic_alpha=-0.75,
                                cubic_exclude=exclude, scales=scales, antialias=True)
    attrs = {"mode": method, "coordinate_transformation_mode": ctm, "cubic_coeff_a": -0.75,
             "exclude_outside": exclude, "antialias": 1}
    want = ort_run("Resize", {"x": x, "scales": np.array([1, 1, *scales], "float32")}, attrs,
                   node_inputs=["x", "", "scales"], opset=18)[0]
    check_type(call, want)
    np.testing.assert_allclose(run_expr(call, x=x), want, rtol=1e-4, atol=1e-5)


def test_upsampling_nearest(run_expr):
    x = rand(1, 1, 2, 2)
    call = relay.nn.upsampling(relay.var("x", shape=x.shape), 2, 2)
    want = x.repeat(2, 2).repeat(2, 3)
    check_type(call, want)
    np.testing.assert_array_equal(run_expr(call, x=x), want)


@pytest.mark.parametrize("shape,kernel,stride,pads,dilation,ceil,order", [
    ((2, 3, 11), [3], [2], [1, 1], [1], 0, 0),
    ((2, 3, 7, 8), [3, 2], [2, 2], [1, 0, 1, 1], [1, 1], 0, 0),
    ((2, 3, 7, 8), [3, 2], [2, 2], [1, 0, 1, 1], [1, 1], 0, 1),
    ((1, 2, 7, 8), [2, 2], [3, 3], [1, 1, 1, 1], [1, 1], 1, 1),  # a ceil_mode window dropped
    ((1, 2, 9, 9), [2, 3], [1, 2], [0, 0, 0, 0], [2, 2], 0, 0),
    ((1, 2, 5, 6, 7), [2, 2, 3], [2, 1, 2], [0, 1, 1, 1, 0, 1], [1, 1, 1], 0, 1),
])
def test_max_pool_argmax_matches_ort(shape, kernel, stride, pads, dilation, ceil, order,
                                     ort_run, run_expr):
    """Flat indices over N, C and the spatial axes (column-major spatial for storage_order
    1); repeated values check that the first maximum of a window wins."""
    x = np.round(rand(*shape) * 3).astype("float32")  # few distinct values: ties
    call = relay.nn.max_pool_argmax(relay.var("x", shape=x.shape), kernel, stride, dilation,
                                    pads, bool(ceil), order)
    want = ort_run("MaxPool", {"x": x}, {"kernel_shape": kernel, "strides": stride,
                                         "pads": pads, "dilations": dilation,
                                         "ceil_mode": ceil, "storage_order": order},
                   n_out=2, out_dtypes=["float32", "int64"])[1]
    check_type(call, want)
    np.testing.assert_array_equal(run_expr(call, x=x), want)


@pytest.mark.parametrize("groups,offset_groups,stride,pad,dilation,masked", [
    (1, 1, 1, 0, 1, False), (2, 2, 2, 1, 1, True), (1, 4, 1, 2, 2, True), (4, 1, 2, 0, 1, False),
])
def test_deformable_conv2d_matches_ort(groups, offset_groups, stride, pad, dilation, masked,
                                       ort_run, run_expr):
    """Fractional offsets, some reaching past the input (zeros there), through ONNX
    DeformConv in onnxruntime."""
    x, w = rand(2, 8, 7, 6), rand(6 if groups != 4 else 8, 8 // groups, 3, 2)
    oh = (7 + 2 * pad - dilation * 2 - 1) // stride + 1
    ow = (6 + 2 * pad - dilation * 1 - 1) // stride + 1
    offset = (rand(2, offset_groups * 6 * 2, oh, ow) * 2.5).astype("float32")
    mask = np.abs(rand(2, offset_groups * 6, oh, ow)).astype("float32")
    args = {"strides": (stride, stride), "padding": (pad, pad), "dilation": (dilation, dilation),
            "deformable_groups": offset_groups, "groups": groups}
    v = {k: relay.var(k, shape=a.shape) for k, a in {"x": x, "w": w, "o": offset,
                                                      "m": mask}.items()}
    call = relay.nn.modulated_deformable_conv2d(v["x"], v["o"], v["w"], v["m"], **args) \
        if masked else relay.nn.deformable_conv2d(v["x"], v["o"], v["w"], **args)
    feeds = {"x": x, "w": w, "o": offset, **({"m": mask} if masked else {})}
    want = ort_run("DeformConv", feeds, {
        "strides": [stride] * 2, "pads": [pad] * 4, "dilations": [dilation] * 2,
        "group": groups, "offset_group": offset_groups},
        node_inputs=["x", "w", "o", "", "m"] if masked else ["x", "w", "o"], opset=19)[0]
    check_type(call, want)
    np.testing.assert_allclose(run_expr(call, **feeds), want, rtol=1e-4, atol=1e-4)


def test_deformable_conv2d_with_zero_offsets_is_conv2d(run_expr):
    x, w = rand(1, 4, 6, 6), rand(5, 4, 3, 3)
    offset = np.zeros((1, 18, 4, 4), "float32")
    call = relay.nn.deformable_conv2d(relay.var("x", shape=x.shape),
                                      relay.var("o", shape=offset.shape),
                                      relay.var("w", shape=w.shape))
    want = run_expr(relay.nn.conv2d(relay.var("x", shape=x.shape),
                                    relay.var("w", shape=w.shape)), x=x, w=w)
    np.testing.assert_allclose(run_expr(call, x=x, o=offset, w=w), want, rtol=1e-5, atol=1e-5)
