"""QNN ops (TVM's `relay.qnn.op`); importing registers them."""

from engine.relay.qnn.op.convention import *  # noqa: F403
from engine.relay.qnn.op.convention import __all__ as _convention_all
from engine.relay.qnn.op.qnn import *  # noqa: F403
from engine.relay.qnn.op.qnn import __all__ as _qnn_all

__all__ = [*_qnn_all, *_convention_all]
