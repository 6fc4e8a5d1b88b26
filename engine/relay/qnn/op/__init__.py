"""QNN ops (TVM's `relay.qnn.op`); importing registers them and their canonical forms."""

from engine.relay.qnn.op import canonical as canonical
from engine.relay.qnn.op.convention import *  # noqa: F403
from engine.relay.qnn.op.convention import __all__ as _convention_all
from engine.relay.qnn.op.lut import *  # noqa: F403
from engine.relay.qnn.op.lut import __all__ as _lut_all
from engine.relay.qnn.op.qnn import *  # noqa: F403
from engine.relay.qnn.op.qnn import __all__ as _qnn_all
from engine.relay.qnn.op.tensor import *  # noqa: F403
from engine.relay.qnn.op.tensor import __all__ as _tensor_all

__all__ = [*_qnn_all, *_convention_all, *_lut_all, *_tensor_all]
