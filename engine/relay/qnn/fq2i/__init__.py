"""FakeQuantizationToInteger: QDQ regions to qnn / integer ops (see `rewriter`)."""

from engine.relay.qnn.fq2i.registry import register_fake_quantization_to_integer
from engine.relay.qnn.fq2i.rewriter import FakeQuantizationToInteger

__all__ = ["FakeQuantizationToInteger", "register_fake_quantization_to_integer"]
