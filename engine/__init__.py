"""IR Explorer's compiler engine: a Relay-style IR with TVM's Python API.

    import engine as tvm
    from engine import relay
"""

from engine import ir, runtime
from engine.ir import IRModule
from engine.runtime import ndarray as nd
from engine.runtime import cpu, device

from engine import relay  # noqa: E402  (relay needs ir first)

__all__ = ["IRModule", "cpu", "device", "ir", "nd", "relay", "runtime"]
__version__ = "0.1.0"
