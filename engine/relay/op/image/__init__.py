"""Image ops (TVM's `relay.image`)."""

from engine.relay.op.image.resize import resize2d

__all__ = ["resize2d"]
