"""IR Explorer's compiler engine: a Relay-style IR with TVM's Python API.

    import engine as tvm
    from engine import relay, te
"""

from engine import (
    instrument,
    ir,
    relay,
    runtime,
    transform,
)
from engine._lazy import lazy_getattr
from engine.ir import IRModule
from engine.relay import transform as _relay_passes  # noqa: F401  (registers Relay's passes)
from engine.runtime import cpu, device
from engine.runtime import ndarray as nd

_LAZY: dict[str, tuple[str, str | None]] = {
    "te": ("engine.te", None),
    "tir": ("engine.tir", None),
    "lower": ("engine.driver", "lower"),
    "build": ("engine.driver", "build"),
    "testing": ("engine.testing", None),
    "error": ("engine.error", None),
    "target": ("engine.target", None),
    "parser": ("engine.relay.parser", None),
}


__getattr__ = lazy_getattr("engine", _LAZY, globals())

# `tvm.ir.transform` / `tvm.ir.instrument` are the same modules as `tvm.transform` /
# `tvm.instrument`. The IR core sits below them and cannot import them, so the facade
# links them here.
ir.transform = transform  # type: ignore[attr-defined]
ir.instrument = instrument  # type: ignore[attr-defined]


__all__ = ["IRModule", "cpu", "device", "instrument", "ir", "nd", "relay", "runtime",
           "transform"]
__version__ = "0.1.0"
