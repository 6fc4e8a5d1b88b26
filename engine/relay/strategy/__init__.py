"""Op strategies (TVM's `relay.op.strategy`): importing this package registers the
`FTVMStrategy` of every op family."""

from engine.relay.strategy import conv, dense, elemwise, pool, reduce, softmax, transform
from engine.relay.strategy.base import (
    OpStrategy,
    StrategyError,
    get_strategy,
    register_strategy,
)
from engine.relay.strategy.extern import extern_strategy

for _family in (elemwise, reduce, transform, conv, dense, pool, softmax):
    _family.register()

__all__ = ["OpStrategy", "StrategyError", "extern_strategy", "get_strategy",
           "register_strategy"]
