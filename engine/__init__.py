"""IR Explorer's compiler engine: a Relay-style IR with TVM's Python API.

    import engine as tvm
    from engine import relay, te
"""

from engine import (
    ir,
    relay,  # noqa: E402,I001  (relay needs ir first)
    runtime,
)
from engine._lazy import lazy_getattr
from engine.ir import IRModule
from engine.runtime import cpu, device
from engine.runtime import ndarray as nd

_LAZY: dict[str, tuple[str, str | None]] = {
    "transform": ("engine.transform", None),
    "instrument": ("engine.instrument", None),
    "te": ("engine.te", None),
    "tir": ("engine.tir", None),
    "lower": ("engine.driver", "lower"),
    "build": ("engine.driver", "build"),
    "testing": ("engine.testing", None),
    "target": ("engine.target", None),
    "parser": ("engine.relay.parser", None),
}


__getattr__ = lazy_getattr("engine", _LAZY, globals())


__all__ = ["IRModule", "cpu", "device", "ir", "nd", "relay", "runtime"]
__version__ = "0.1.0"
