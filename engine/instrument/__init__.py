"""Pass instruments (TVM's `tvm.instrument`): hooks around pass contexts and passes.

`PassInstrument` and the `pass_instrument` class decorator; built-ins
`PassTimingInstrument`, `PrintBeforeAll`, `PrintAfterAll`, `PrintAfterChange`
and `DumpIR`. The call order is documented in `engine.transform.hooks`, where the
base class lives (next to the PassContext that calls it).
"""

from engine.instrument.printing import (
    DumpIR,
    PrintAfterAll,
    PrintAfterChange,
    PrintBeforeAll,
)
from engine.instrument.timing import PassProfile, PassTimingInstrument
from engine.transform.hooks import PassInstrument, pass_instrument

__all__ = [
    "DumpIR", "PassInstrument", "PassProfile", "PassTimingInstrument", "PrintAfterAll",
    "PrintAfterChange", "PrintBeforeAll", "pass_instrument",
]
