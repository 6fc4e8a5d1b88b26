"""The QNN dialect (TVM's `relay.qnn`): quantized ops (`qnn.op`) and their passes
(`qnn.transform`, loaded on first use)."""

from engine._lazy import lazy_getattr
from engine.relay.qnn import op

_LAZY: dict[str, tuple[str, str | None]] = {
    "transform": ("engine.relay.qnn.transform", None),
}

__getattr__ = lazy_getattr("engine.relay.qnn", _LAZY, globals())

__all__ = ["op"]
