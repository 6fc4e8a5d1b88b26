"""QNN ops (TVM's `relay.qnn.op`); importing registers them."""

from engine.relay.qnn.op.qnn import *  # noqa: F403
from engine.relay.qnn.op.qnn import __all__ as __all__
