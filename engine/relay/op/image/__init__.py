"""Image ops (TVM's `relay.image`)."""

from engine.relay.op.image.grid_sample import grid_sample
from engine.relay.op.image.resize import resize2d

__all__ = ["grid_sample", "resize2d"]
