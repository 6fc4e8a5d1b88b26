"""Every attrs type's fields and their defaults: the one table the parser and the op
constructors fill omitted attributes from.

The defaults are those TVM 0.19 declares in `include/tvm/relay/attrs/*.h`
(`TVM_ATTR_FIELD(axis).set_default(-1)`), because TVM's text printer omits every
attribute that holds its default: `nn.softmax(%x)` means `axis=-1`, and
`nn.conv2d(%x, %w)` means `data_layout="NCHW"`. Values are in our normal form
(tuples; a null DataType is `""`; a null Array or Integer is None; padding is all begins
then all ends). Fields TVM has no default for are `REQUIRED`: they are never filled,
and TVM's printer always writes them. A few types carry fields of our own (after the
TVM ones) with the default meaning "off".

    fill_defaults("relay.attrs.SoftmaxAttrs", {})   # {"axis": -1}
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final


class _Required:
    def __repr__(self) -> str:
        return "REQUIRED"


REQUIRED: Final = _Required()
"""A field without a default: never filled in."""


class UnknownAttributeError(KeyError):
    """An attribute its attrs type does not declare."""

    def __init__(self, message: str, key: str) -> None:
        super().__init__(message)
        self.key = key

    def __str__(self) -> str:
        return str(self.args[0])


Normalize = Callable[[Any], Any]


@dataclass(frozen=True, slots=True)
class AttrsSchema:
    """The fields of one attrs type, in TVM's declaration order, with their defaults."""

    type_key: str
    defaults: Mapping[str, Any]
    normalize: Mapping[str, Normalize]

    def fill(self, attrs: Mapping[str, Any], what: str = "") -> dict[str, Any]:
        """`attrs` in field order with every omitted default filled; an undeclared key is
        an UnknownAttributeError naming the fields there are."""
        unknown = [k for k in attrs if k not in self.defaults]
        if unknown:
            fields = ", ".join(self.defaults) or "none"
            owner = what or self.type_key
            raise UnknownAttributeError(
                f"{owner} has no attribute {unknown[0]!r} ({self.short_name} fields: {fields})",
                unknown[0])
        out: dict[str, Any] = {}
        for key, default in self.defaults.items():
            if key in attrs:
                value = attrs[key]
                norm = self.normalize.get(key)
                out[key] = norm(value) if norm is not None and value is not None else value
            elif default is not REQUIRED:
                out[key] = default
        return out

    @property
    def short_name(self) -> str:
        return self.type_key.rsplit(".", 1)[-1]


_SCHEMAS: dict[str, AttrsSchema] = {}


def declare(type_key: str, normalize: Mapping[str, Normalize] | None = None,
            **defaults: Any) -> AttrsSchema:
    schema = AttrsSchema(type_key, dict(defaults), dict(normalize or {}))
    _SCHEMAS[type_key] = schema
    return schema


def schema_of(type_key: str) -> AttrsSchema | None:
    """The declared schema of `type_key` (None for DictAttrs and unknown keys)."""
    return _SCHEMAS.get(type_key)


def declared_type_keys() -> list[str]:
    return sorted(_SCHEMAS)


def fill_defaults(type_key: str, attrs: Mapping[str, Any], what: str = "") -> dict[str, Any]:
    """`attrs` with the omitted defaults of `type_key` filled (unchanged for DictAttrs)."""
    schema = _SCHEMAS.get(type_key)
    return dict(attrs) if schema is None else schema.fill(attrs, what)


def _padding(nd: int) -> Normalize:
    """Padding as 2 * nd values from 1, nd or 2 * nd (TVM's get_pad_tuple*d)."""
    def normalize(value: Any) -> tuple[int, ...]:
        from engine.relay.op.nn._nd import pad_tuple_nd  # the nn package imports us

        return pad_tuple_nd(value, nd)
    return normalize


def _ones(nd: int) -> tuple[int, ...]:
    return (1,) * nd


def _zeros(nd: int) -> tuple[int, ...]:
    return (0,) * nd


_LAYOUTS = {1: ("NCW", "OIW", "IOW"), 2: ("NCHW", "OIHW", "IOHW"), 3: ("NCDHW", "OIDHW", "IODHW")}
_D = {1: "1D", 2: "2D", 3: "3D"}

# --- nn.h: convolutions and pooling, for 1-, 2- and 3-D ------------------------------------
for _nd, (_data, _kernel, _kernel_t) in _LAYOUTS.items():
    _pad = {"padding": _padding(_nd)}
    _window = {"strides": _ones(_nd), "padding": _zeros(2 * _nd), "dilation": _ones(_nd)}
    declare(f"relay.attrs.Conv{_D[_nd]}Attrs", _pad, **_window, groups=1, channels=None,
            kernel_size=None, data_layout=_data, kernel_layout=_kernel, out_layout="",
            out_dtype="")
    declare(f"relay.attrs.Conv{_D[_nd]}TransposeAttrs", _pad, channels=None, kernel_size=None,
            strides=_ones(_nd), output_padding=_zeros(_nd), padding=_zeros(2 * _nd),
            dilation=_ones(_nd), groups=1, data_layout=_data, kernel_layout=_kernel_t,
            out_layout="", out_dtype="")
    _pool = dict(pool_size=REQUIRED, strides=_ones(_nd), dilation=_ones(_nd),
                 padding=_zeros(2 * _nd), layout=_data, out_layout="", ceil_mode=False)
    declare(f"relay.attrs.MaxPool{_D[_nd]}Attrs", _pad, **_pool)
    declare(f"relay.attrs.AvgPool{_D[_nd]}Attrs", _pad, **_pool, count_include_pad=False)
    declare(f"relay.attrs.AdaptivePool{_D[_nd]}Attrs", output_size=(), layout=_data,
            out_layout="")

declare("relay.attrs.DeformableConv2DAttrs", {"padding": _padding(2)}, strides=(1, 1),
        padding=(0, 0, 0, 0), dilation=(1, 1), deformable_groups=1, groups=1, channels=None,
        kernel_size=None, data_layout="NCHW", kernel_layout="OIHW", out_layout="",
        out_dtype="")
declare("relay.attrs.GlobalPool2DAttrs", layout="NCHW", out_layout="")
declare("relay.attrs.MaxPoolArgmaxAttrs", {"padding": lambda v: tuple(int(p) for p in v)},
        pool_size=REQUIRED, strides=REQUIRED, dilation=REQUIRED, padding=REQUIRED,
        ceil_mode=False, storage_order=0)  # ours (ONNX MaxPool's Indices)
declare("relay.attrs.SoftmaxAttrs", axis=-1)
declare("relay.attrs.BiasAddAttrs", axis=1)
declare("relay.attrs.MatmulAttrs", units=REQUIRED, out_dtype="", transpose_a=False,
        transpose_b=False)
declare("relay.attrs.DenseAttrs", units=REQUIRED, out_dtype="")
declare("relay.attrs.BatchMatmulAttrs", out_dtype="", transpose_a=False, transpose_b=False)
declare("relay.attrs.UpSamplingAttrs", scale_h=REQUIRED, scale_w=REQUIRED, layout="NCHW",
        method="nearest_neighbor", align_corners=False)
declare("relay.attrs.PadAttrs", pad_width=REQUIRED, pad_mode="constant")
declare("relay.attrs.LeakyReluAttrs", alpha=0.25)
declare("relay.attrs.PReluAttrs", axis=1)
declare("relay.attrs.DropoutAttrs", rate=0.5)
declare("relay.attrs.BatchNormAttrs", axis=1, epsilon=1e-5, center=True, scale=True)
declare("relay.attrs.LayerNormAttrs", axis=-1, epsilon=1e-5, center=True, scale=True)
declare("relay.attrs.LRNAttrs", size=5, axis=1, bias=2.0, alpha=0.0001, beta=0.75)
declare("relay.attrs.SubPixelAttrs", block_size=1, layout="NCHW", mode="DCR")
declare("relay.attrs.NLLLossAttrs", reduction="mean", ignore_index=REQUIRED)
declare("relay.attrs.Col2ImAttrs", image_shape=REQUIRED, block_shape=REQUIRED,
        dilations=REQUIRED, pads=REQUIRED, strides=REQUIRED)  # ours (ONNX Col2Im)

# --- reduce.h ------------------------------------------------------------------------------
declare("relay.attrs.ReduceAttrs", axis=None, keepdims=False, exclude=False)
declare("relay.attrs.ArgReduceAttrs", axis=None, keepdims=False, select_last_index=False,
        exclude=False)
declare("relay.attrs.VarianceAttrs", axis=None, keepdims=False, exclude=False, unbiased=False)
declare("relay.attrs.DynReduceAttrs", keepdims=True,
        noop_with_empty_axes=False)  # ours: dyn.sum & co. with run-time axes (ONNX's)

# --- transform.h ---------------------------------------------------------------------------
declare("relay.attrs.CastAttrs", dtype=REQUIRED)
declare("relay.attrs.ExpandDimsAttrs", axis=REQUIRED, num_newaxis=1)
declare("relay.attrs.ConcatenateAttrs", axis=0)
declare("relay.attrs.TransposeAttrs", axes=REQUIRED)
declare("relay.attrs.ReshapeAttrs", newshape=REQUIRED, allowzero=0)
declare("relay.attrs.ScatterElementsAttrs", axis=0, reduction="update")
declare("relay.attrs.ScatterNDAttrs", mode="update")
declare("relay.attrs.GatherAttrs", axis=None)
declare("relay.attrs.GatherNDAttrs", batch_dims=0, index_rank=None)
declare("relay.attrs.TakeAttrs", batch_dims=0, axis=None, mode="clip")
declare("relay.attrs.InitOpAttrs", shape=REQUIRED, dtype="")
declare("relay.attrs.ArangeAttrs", start=REQUIRED, stop=REQUIRED, step=REQUIRED,
        dtype=REQUIRED)
declare("relay.attrs.StackAttrs", axis=0)
declare("relay.attrs.RepeatAttrs", repeats=REQUIRED, axis=None)
declare("relay.attrs.TileAttrs", reps=REQUIRED)
declare("relay.attrs.ReverseAttrs", axis=None)
declare("relay.attrs.SqueezeAttrs", axis=REQUIRED)
declare("relay.attrs.SplitAttrs", indices_or_sections=REQUIRED, axis=0)
declare("relay.attrs.StridedSliceAttrs", begin=REQUIRED, end=REQUIRED, strides=REQUIRED,
        slice_mode="end", axes=REQUIRED)
declare("relay.attrs.ClipAttrs", a_min=REQUIRED, a_max=REQUIRED)
declare("relay.attrs.LayoutTransformAttrs", src_layout=REQUIRED, dst_layout=REQUIRED)
declare("relay.attrs.ShapeOfAttrs", dtype="int32")
declare("relay.attrs.OneHotAttrs", depth=1, axis=-1, dtype="")
declare("relay.attrs.ScanopAttrs", axis=None, dtype="", exclusive=False,
        reverse=False)  # reverse: ours, dyn.cumsum (ONNX CumSum)
declare("relay.attrs.UniqueAttrs", axis=None, is_sorted=True,
        dtype="int64")  # TVM: sorted, return_counts; ours follow ONNX Unique
declare("relay.attrs.EinsumAttrs", equation=REQUIRED)
declare("relay.attrs.DFTAttrs", inverse=False, onesided=False)
declare("relay.attrs.TriluAttrs", upper=True)
declare("relay.attrs.ArgWhereAttrs", dtype="int32")  # ours: argwhere's index dtype
declare("relay.attrs.TfIdfVectorizerAttrs", ngrams=REQUIRED, columns=REQUIRED,
        output_size=REQUIRED, min_gram_length=REQUIRED, max_gram_length=REQUIRED,
        max_skip_count=REQUIRED, mode=REQUIRED, weights=())  # ours (ONNX TfIdfVectorizer)

# --- algorithm.h, image.h, vision.h ---------------------------------------------------------
declare("relay.attrs.TopKAttrs", k=REQUIRED, axis=-1, ret_type="both", is_ascend=False,
        dtype="")  # TVM's key: relay.attrs.TopkAttrs
declare("relay.attrs.Resize2DAttrs", size=None, roi=None, layout="NCHW", method="linear",
        coordinate_transformation_mode="half_pixel", rounding_method="round",
        cubic_alpha=-0.5, cubic_exclude=0, extrapolation_value=0.0, out_dtype="",
        scales=None, antialias=False, onnx_kind="", axes=(),
        keep_aspect_ratio_policy="stretch")  # after out_dtype: ours (ONNX Resize)
declare("relay.attrs.GridSampleAttrs", method="bilinear", layout="NCHW", padding_mode="zeros",
        align_corners=True)
declare("relay.attrs.ROIAlignAttrs", pooled_size=REQUIRED, spatial_scale=REQUIRED,
        sample_ratio=-1, layout="NCHW", mode="avg",
        aligned=False)  # aligned: ours (ONNX RoiAlign half_pixel)
declare("relay.attrs.AllClassNonMaximumSuppressionAttrs", output_format="onnx",
        center_point_box=False)  # center_point_box: ours (ONNX)

__all__ = ["REQUIRED", "AttrsSchema", "UnknownAttributeError", "declare", "declared_type_keys",
           "fill_defaults", "schema_of"]
