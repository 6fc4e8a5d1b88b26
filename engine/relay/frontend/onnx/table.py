"""The opset-versioned converter table and the per-node context converters read.

A converter is registered for an ONNX op type from the opset where its current
form was introduced: `@converter("Squeeze", since=13)`. For a model of opset N
the importer picks the entry with the largest `since <= N`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import onnx

from engine.ir.expr import Constant, Expr, Var
from engine.ir.type import Type
from engine.relay.frontend.common import ConversionError, DynamicShapeError

ConvertResult = Expr | Sequence[Any]
"""One expression, or one per output: an Expr, None (not supported) or EMPTY_OPTIONAL."""


class ImporterView(Protocol):
    """What a converter may ask the importer (`importer.OnnxImporter` implements it)."""

    def shape_of(self, name: str, expr: Expr) -> tuple[int | None, ...] | None: ...

    def dtype_of(self, name: str, expr: Expr) -> str: ...

    def param_value(self, name: str) -> np.ndarray | None: ...

    def type_of(self, expr: Expr) -> Type: ...

    def import_subgraph(self, graph: onnx.GraphProto, inputs: Sequence[Expr | None],
                        function: bool, layer: str) -> Subgraph: ...

    def dynamic_inputs(self) -> dict[str, list[int | str]]: ...


@dataclass(frozen=True)
class Subgraph:
    """A converted sub-graph: its outputs (None for an empty optional) and, for a function
    scope, the outer values it captured (each bound to a variable of the scope)."""

    outputs: list[Expr | None]
    captures: list[tuple[Var, Expr]]

Converter = Callable[["NodeContext"], ConvertResult]

_TABLE: dict[str, list[tuple[int, Converter]]] = {}


def converter(*op_types: str, since: int = 1) -> Callable[[Converter], Converter]:
    """Register `fn` for each op type in `op_types`, valid from opset `since` on."""
    def register(fn: Converter) -> Converter:
        for op_type in op_types:
            entries = _TABLE.setdefault(op_type, [])
            entries.append((since, fn))
            entries.sort(key=lambda entry: entry[0])
        return fn
    return register


def lookup(op_type: str, opset: int) -> Converter | None:
    entries = _TABLE.get(op_type)
    if not entries:
        return None
    chosen = entries[0][1]
    for since, fn in entries:
        if since <= opset:
            chosen = fn
    return chosen


def supported_ops() -> frozenset[str]:
    return frozenset(_TABLE)


@dataclass
class NodeContext:
    """One ONNX node as its converter sees it."""

    name: str
    op_type: str
    opset: int
    attrs: dict[str, Any]
    inputs: list[Expr | None]
    input_names: list[str]
    output_names: list[str]
    importer: ImporterView = field(repr=False)

    def attr(self, key: str, default: Any = None) -> Any:
        value = self.attrs.get(key, default)
        return value.decode() if isinstance(value, bytes) else value

    def has(self, index: int) -> bool:
        return index < len(self.inputs) and self.inputs[index] is not None

    def input(self, index: int) -> Expr:
        if not self.has(index):
            raise self.fail(f"input {index} is required")
        return self.inputs[index]  # type: ignore[return-value]

    def shape(self, index: int) -> tuple[int | None, ...]:
        """The input's shape (None for a dynamic dim); an unknown rank is a ConversionError."""
        shape = self.importer.shape_of(self.input_names[index], self.input(index))
        if shape is None:
            raise self.dynamic(f"the shape of input {self.input_names[index]!r} is unknown")
        return shape

    def static_shape(self, index: int) -> tuple[int, ...]:
        shape = self.shape(index)
        if any(d is None for d in shape):
            raise self.dynamic(f"input {self.input_names[index]!r} has a dynamic shape {shape}")
        return tuple(int(d) for d in shape)  # type: ignore[arg-type]

    def rank(self, index: int) -> int:
        return len(self.shape(index))

    def dtype(self, index: int) -> str:
        return self.importer.dtype_of(self.input_names[index], self.input(index))

    def value(self, index: int) -> np.ndarray | None:
        """The input's value when it is known at import time (a constant or a bound param)."""
        if not self.has(index):
            return None
        expr = self.inputs[index]
        if isinstance(expr, Constant):
            return expr.data.numpy()
        return self.importer.param_value(self.input_names[index])

    def const(self, index: int, what: str) -> np.ndarray:
        value = self.value(index)
        if value is None:
            raise self.fail(f"{what} (input {index}) must be known at import time; it is "
                            "computed at run time (pin the input shapes with shape={...})")
        return value

    def ints(self, index: int, what: str) -> list[int]:
        return [int(v) for v in np.asarray(self.const(index, what)).reshape(-1)]

    def graph(self, key: str) -> onnx.GraphProto:
        """A graph attribute (a branch or a body)."""
        attr = self.attrs.get(key)
        if not isinstance(attr, onnx.AttributeProto) or attr.type != onnx.AttributeProto.GRAPH:
            raise self.fail(f"graph attribute {key!r} is required")
        return attr.g

    def fail(self, message: str) -> ConversionError:
        return ConversionError(self.name, self.op_type, message)

    def dynamic(self, message: str) -> DynamicShapeError:
        """A static shape was needed: the error names the model's dynamic inputs."""
        return DynamicShapeError(self.name, self.op_type, message,
                                 self.importer.dynamic_inputs())
