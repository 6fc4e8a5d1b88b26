"""Vision ops (TVM's `relay.vision`): non-maximum suppression, RoI align."""

from engine.relay.op.vision.nms import all_class_non_max_suppression
from engine.relay.op.vision.roi_align import roi_align

__all__ = ["all_class_non_max_suppression", "roi_align"]
