"""Test workloads built with the relay API (TVM's `relay.testing`):
`resnet.get_workload()`, `mobilenet.get_workload()`, `bert.get_workload()` -> (mod, params)."""

from engine.relay.testing import bert, mobilenet, resnet
from engine.relay.testing.init import create_workload

__all__ = ["bert", "create_workload", "mobilenet", "resnet"]
