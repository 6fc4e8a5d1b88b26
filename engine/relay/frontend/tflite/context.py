"""What every TFLite converter works with: the registry, the per-op context and the fused
activations. Converters live in `nn`, `elemwise`, `shapes` and `quantize`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

import engine.relay as relay
from engine.ir.expr import Constant, Expr
from engine.ir.type import TensorType
from engine.relay.frontend.common import ConversionError
from engine.relay.frontend.tflite.model import OpRecord, TensorRecord, TFLiteGraph

Converter = Callable[["OpContext"], Expr | Sequence[Expr]]


class ImporterView(Protocol):
    """What a converter may ask the importer (`importer.TFLiteImporter` implements it)."""

    graph: TFLiteGraph

    def type_of(self, expr: Expr) -> TensorType: ...


CONVERTERS: dict[str, Converter] = {}
# full-integer kernels: used when an op computes on a quantized (int8/uint8/int16) tensor
INTEGER_CONVERTERS: dict[str, Converter] = {}


def _registrar(table: dict[str, Converter], names: tuple[str, ...]
               ) -> Callable[[Converter], Converter]:
    def register(fn: Converter) -> Converter:
        for name in names:
            table[name] = fn
        return fn
    return register


def converter(*names: str) -> Callable[[Converter], Converter]:
    return _registrar(CONVERTERS, names)


def integer_converter(*names: str) -> Callable[[Converter], Converter]:
    return _registrar(INTEGER_CONVERTERS, names)


@dataclass
class OpContext:
    name: str
    op: OpRecord
    inputs: list[Expr | None]
    importer: ImporterView = field(repr=False)

    @property
    def options(self) -> dict[str, Any]:
        return self.op.options

    def option(self, key: str, default: Any = 0) -> Any:
        value = self.op.options.get(key)
        return default if value is None else value

    def tensor(self, index: int) -> TensorRecord:
        return self.importer.graph.tensors[self.op.inputs[index]]

    def out_tensor(self, index: int = 0) -> TensorRecord:
        return self.importer.graph.tensors[self.op.outputs[index]]

    def input(self, index: int) -> Expr:
        expr = self.inputs[index] if index < len(self.inputs) else None
        if expr is None:
            raise self.fail(f"input {index} is missing")
        return expr

    def has(self, index: int) -> bool:
        return index < len(self.inputs) and self.inputs[index] is not None

    def is_const(self, index: int) -> bool:
        return self.has(index) and isinstance(self.inputs[index], Constant)

    def value(self, index: int) -> np.ndarray:
        expr = self.input(index)
        if isinstance(expr, Constant):
            return expr.data.numpy()
        raise self.fail(f"input {index} ({self.tensor(index).name!r}) must be a constant")

    def ints(self, index: int) -> list[int]:
        return [int(v) for v in self.value(index).reshape(-1)]

    def shape(self, index: int) -> tuple[int, ...]:
        """The static shape of input `index`, as the converted expression has it."""
        expr = self.input(index)
        if isinstance(expr, Constant):
            return tuple(expr.data.shape)
        dims = self.importer.type_of(expr).shape
        static = tuple(d for d in dims if isinstance(d, int))
        if len(static) != len(dims):
            raise self.fail(f"input {index} ({self.tensor(index).name!r}) has a dynamic shape "
                            f"{dims}")
        return static

    def dtype(self, index: int) -> str:
        expr = self.input(index)
        if isinstance(expr, Constant):
            return str(expr.data.dtype)
        return str(self.importer.type_of(expr).dtype)

    def fail(self, message: str) -> ConversionError:
        return ConversionError(self.name, self.op.op_type, message)


_ACTIVATIONS: dict[int, Callable[[Expr], Expr]] = {
    0: lambda x: x,
    1: lambda x: relay.nn.relu(x),
    2: lambda x: relay.clip(x, -1.0, 1.0),
    3: lambda x: relay.clip(x, 0.0, 6.0),
    4: lambda x: relay.tanh(x),
}


def fused(ctx: OpContext, out: Expr) -> Expr:
    code = int(ctx.option("FusedActivationFunction", 0))
    if code not in _ACTIVATIONS:
        raise ctx.fail(f"fused activation {code} is not supported")
    return _ACTIVATIONS[code](out)
