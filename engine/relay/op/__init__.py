"""Relay operators (TVM's `relay.op`): constructors, registry helpers and op families.

`from engine.relay.op import *` (done by `engine.relay`) gives `relay.add`,
`relay.reshape`, ..., and the namespaces `relay.nn` and `relay.image`. Importing
this package registers every op with its type relation (`FTVMTypeRelation`),
fusion pattern (`TOpPattern`), `TOpIsStateful` and numpy compute (`FNumpyCompute`).
"""

from engine.ir.op import Op, list_ops
from engine.relay.op import dyn, image, nn, vision
from engine.relay.op.binary import *  # noqa: F403
from engine.relay.op.binary import __all__ as _binary_all
from engine.relay.op.comparison import *  # noqa: F403
from engine.relay.op.comparison import __all__ as _comparison_all
from engine.relay.op.creation import *  # noqa: F403
from engine.relay.op.creation import __all__ as _creation_all
from engine.relay.op.data_dependent import *  # noqa: F403
from engine.relay.op.data_dependent import __all__ as _data_dependent_all
from engine.relay.op.indexing import *  # noqa: F403
from engine.relay.op.indexing import __all__ as _indexing_all
from engine.relay.op.layout import layout_transform
from engine.relay.op.linalg import det
from engine.relay.op.op import (
    OpPattern,
    TypeRelationError,
    register_compute,
    register_infer_correct_layout,
    register_inplace,
    register_pattern,
    register_stateful,
    register_type_rel,
)
from engine.relay.op.op import (
    get as get,
)
from engine.relay.op.op import (
    make_call as make_call,
)
from engine.relay.op.reduce import *  # noqa: F403
from engine.relay.op.reduce import __all__ as _reduce_all
from engine.relay.op.scan import *  # noqa: F403
from engine.relay.op.scan import __all__ as _scan_all
from engine.relay.op.scatter import *  # noqa: F403
from engine.relay.op.scatter import __all__ as _scatter_all
from engine.relay.op.tensor import *  # noqa: F403
from engine.relay.op.tensor import __all__ as _tensor_all
from engine.relay.op.text import tfidf_vectorizer
from engine.relay.op.transform import *  # noqa: F403
from engine.relay.op.transform import __all__ as _transform_all

TOpPattern = OpPattern

__all__ = [
    *_binary_all, *_comparison_all, *_creation_all, *_data_dependent_all, *_indexing_all,
    *_reduce_all, *_scan_all, *_scatter_all, *_tensor_all,
    *_transform_all, "Op", "OpPattern", "TOpPattern", "TypeRelationError", "det", "dyn",
    "image", "layout_transform", "list_ops", "nn", "register_compute",
    "register_infer_correct_layout", "register_inplace", "register_pattern", "register_stateful",
    "register_type_rel", "tfidf_vectorizer", "vision",
]
