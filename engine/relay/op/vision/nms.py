"""`vision.all_class_non_max_suppression` (TVM's op, ONNX output format): greedy NMS per
batch and class; the result is the (?, 3) list of selected [batch, class, box] indices, its
length known only at run time (see `relay.op.data_dependent`)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from engine.ir.attrs import Attrs
from engine.ir.expr import Call, Expr
from engine.ir.type import AnyDim, TensorType, Type
from engine.relay.op._typing import check_arity, check_dim, check_ndim, tensor_arg
from engine.relay.op.dyn._common import check_scalar
from engine.relay.op.op import OPAQUE, define_op, make_call

NMS_KEY = "relay.attrs.AllClassNonMaximumSuppressionAttrs"


def _nms_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    """boxes (B, N, 4), scores (B, C, N), three scalars -> (?, 3) int64."""
    check_arity(arg_types, 5)
    boxes, scores = tensor_arg(arg_types, 0), tensor_arg(arg_types, 1)
    check_ndim(boxes, 0, 3)
    check_ndim(scores, 1, 3)
    check_dim(boxes.shape[2], 4, 0, "dim 2 (box coordinates)", boxes)
    check_dim(scores.shape[0], boxes.shape[0], 1, "dim 0 (batch)", scores)
    check_dim(scores.shape[2], boxes.shape[1], 1, "dim 2 (boxes)", scores)
    for index, what in ((2, "max_output_boxes_per_class"), (3, "iou_threshold"),
                        (4, "score_threshold")):
        check_scalar(arg_types, index, what)
    return TensorType((AnyDim(), 3), "int64")


def _corners(boxes: np.ndarray, center_point_box: bool) -> np.ndarray:
    """(N, 4) boxes as (y_min, x_min, y_max, x_max): corner pairs in either order, or
    [x_center, y_center, width, height]."""
    b = boxes.astype(np.float64)
    if center_point_box:
        half_w, half_h = b[:, 2] / 2, b[:, 3] / 2
        return np.stack([b[:, 1] - half_h, b[:, 0] - half_w, b[:, 1] + half_h,
                         b[:, 0] + half_w], axis=1)
    ys, xs = np.sort(b[:, [0, 2]], axis=1), np.sort(b[:, [1, 3]], axis=1)
    return np.stack([ys[:, 0], xs[:, 0], ys[:, 1], xs[:, 1]], axis=1)


def _iou(box: np.ndarray, others: np.ndarray) -> np.ndarray:
    """IoU of one box with each of `others`; 0 where a box or the overlap is empty."""
    high = np.minimum(box[2:], others[:, 2:])
    low = np.maximum(box[:2], others[:, :2])
    extent = high - low
    overlap = np.all(extent > 0, axis=1)
    inter = np.where(overlap, extent[:, 0] * extent[:, 1], 0.0)
    area = (box[2] - box[0]) * (box[3] - box[1])
    areas = (others[:, 2] - others[:, 0]) * (others[:, 3] - others[:, 1])
    union = area + areas - inter
    valid = overlap & (area > 0) & (areas > 0) & (union > 0)
    return np.where(valid, inter / np.where(valid, union, 1.0), 0.0)


def select_boxes(corners: np.ndarray, scores: np.ndarray, limit: int, iou_threshold: float,
                 score_threshold: float) -> list[int]:
    """Greedy NMS of one class: highest score first (lower index on a tie), dropping boxes
    that overlap a kept one by more than `iou_threshold`."""
    candidates = np.flatnonzero(scores > score_threshold)
    order = candidates[np.argsort(-scores[candidates], kind="stable")]
    kept: list[int] = []
    while order.size and len(kept) < limit:
        best, order = int(order[0]), order[1:]
        kept.append(best)
        order = order[_iou(corners[best], corners[order]) <= iou_threshold]
    return kept


def _nms_compute(xs: list[np.ndarray], attrs: Attrs) -> np.ndarray:
    boxes, scores, limit_value, iou_value, score_value = xs
    limit = max(int(np.asarray(limit_value).reshape(-1)[0]), 0)
    iou = float(np.asarray(iou_value).reshape(-1)[0])
    threshold = float(np.asarray(score_value).reshape(-1)[0])
    rows: list[list[int]] = []
    for b in range(boxes.shape[0]):
        corners = _corners(boxes[b], bool(attrs.center_point_box))
        for c in range(scores.shape[1]):
            rows.extend([b, c, k] for k in select_boxes(corners, scores[b, c], limit, iou,
                                                        threshold))
    return np.asarray(rows, dtype=np.int64).reshape(-1, 3)


define_op("vision.all_class_non_max_suppression",
          ("boxes", "scores", "max_output_boxes_per_class", "iou_threshold", "score_threshold"),
          _nms_rel, OPAQUE, _nms_compute, attrs_type_key=NMS_KEY)


def all_class_non_max_suppression(boxes: Expr, scores: Expr, max_output_boxes_per_class: Expr,
                                  iou_threshold: Expr, score_threshold: Expr,
                                  center_point_box: bool = False) -> Call:
    """The [batch, class, box] indices NMS keeps, class by class (ONNX NonMaxSuppression):
    boxes (B, N, 4) as corners (`center_point_box` False) or centre and size, scores
    (B, C, N); a box is a candidate when its score exceeds `score_threshold`, at most
    `max_output_boxes_per_class` are kept per class."""
    return make_call("vision.all_class_non_max_suppression",
                     (boxes, scores, max_output_boxes_per_class, iou_threshold,
                      score_threshold),
                     {"center_point_box": bool(center_point_box), "output_format": "onnx"},
                     NMS_KEY)


__all__ = ["all_class_non_max_suppression", "select_boxes"]
