"""Dynamic ops (TVM's `relay.dyn`): an operand that static ops take as an attribute is a
tensor computed at run time. Their type relations carry what they cannot know as `Any`
(`?`) dims (the rank stays known: a shape-like operand must have a static length); their
numpy kernels read the operand's value. All are OPAQUE to fusion, and the build needs them
specialised back to static ops (`transform.DynamicToStatic`, once FoldConstant has made the
operand a constant).

- reductions: `dyn.sum/mean/max/min/prod(data, axes)` (`reduce`)
- data movement: `dyn.reshape`, `squeeze`, `expand_dims`, `broadcast_to`, `tile`,
  `strided_slice` (`transform`)
- creation: `dyn.full`, `zeros`, `ones` (`creation`)
- counts and axes: `dyn.topk`, `one_hot`, `trilu`, `cumsum`, `cumprod` (`algorithm`)
- `dyn.nn.pad`, `dyn.image.resize2d`
- `dyn.signal.dft` (`signal`)
"""

from engine.relay.op.dyn import image, nn, signal
from engine.relay.op.dyn.algorithm import cumprod, cumsum, one_hot, topk, trilu
from engine.relay.op.dyn.creation import full, ones, zeros
from engine.relay.op.dyn.reduce import max, mean, min, prod, reduce, sum
from engine.relay.op.dyn.transform import (
    broadcast_to,
    expand_dims,
    reshape,
    squeeze,
    strided_slice,
    tile,
)

__all__ = ["broadcast_to", "cumprod", "cumsum", "expand_dims", "full", "image", "max", "mean",
           "min", "nn", "one_hot", "ones", "prod", "reduce", "reshape", "signal", "squeeze",
           "strided_slice", "sum", "tile", "topk", "trilu", "zeros"]
