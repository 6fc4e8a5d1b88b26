"""Import-time constant folding: a node whose inputs are all known is evaluated with onnx's
reference implementation, so shape-computing subgraphs (Shape -> Gather -> Concat ->
Reshape, as exported BERTs have) become constants when the input shapes are static."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import onnx
from onnx.reference import ReferenceEvaluator

from engine.relay.frontend.common import check_elements

FOLD_LIMIT = 1 << 22
_NONDETERMINISTIC = frozenset({
    "RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Multinomial",
    "Bernoulli", "Dropout",
})
# quantization boundaries stay in the graph even on constants (a weight's DequantizeLinear):
# they are what a quantized model is read for, and FakeQuantizationToInteger needs the
# integer weight behind them; FoldConstant folds them after qnn.transform.Legalize
_KEEP = frozenset({"QuantizeLinear", "DequantizeLinear"})
_FOLD_ERRORS = (ValueError, TypeError, IndexError, KeyError, RuntimeError, NotImplementedError,
                AttributeError, ZeroDivisionError, OverflowError)


def _predicted_elements(node: onnx.NodeProto, values: Sequence[np.ndarray]) -> int:
    """Output size of ops whose output can dwarf their inputs (checked before evaluating)."""
    op = node.op_type
    if op == "ConstantOfShape" and values and values[0] is not None:
        dims = [int(d) for d in np.asarray(values[0]).reshape(-1)]
    elif op == "Expand" and len(values) > 1:
        try:
            dims = list(np.broadcast_shapes(values[0].shape, tuple(int(d) for d in values[1])))
        except ValueError:
            return 0
    elif op == "Tile" and len(values) > 1:
        dims = [d * int(r) for d, r in zip(values[0].shape, np.asarray(values[1]).reshape(-1))]
    elif op == "Range" and len(values) == 3:
        start, limit, delta = (float(np.asarray(v).reshape(-1)[0]) for v in values)
        dims = [max(0, int(np.ceil((limit - start) / delta))) if delta else 0]
    else:
        return 0
    check_elements(dims, f"output of {node.name or op!r}")
    return int(np.prod(dims)) if dims else 1


def fold_node(node: onnx.NodeProto, values: Sequence[np.ndarray | None],
              opset: int) -> list[np.ndarray] | None:
    """The node's outputs if every input is known and folding is cheap and safe, else None."""
    if node.op_type in _NONDETERMINISTIC or node.op_type in _KEEP or node.domain not in ("", "ai.onnx"):
        return None
    if any(attr.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS)
           for attr in node.attribute):
        return None
    named: list[tuple[str, np.ndarray]] = []
    for name, value in zip(node.input, values):
        if not name:
            continue
        if value is None:
            return None
        named.append((name, value))
    if not named or sum(int(value.size) for _, value in named) > FOLD_LIMIT:
        return None
    if _predicted_elements(node, [v for _, v in named]) > FOLD_LIMIT:
        return None
    try:
        evaluator = ReferenceEvaluator(node, opsets={"": opset})
        outs = evaluator.run(None, dict(named))
    except _FOLD_ERRORS:
        return None  # the converter handles it (and reports a real problem clearly)
    if not all(isinstance(out, (np.ndarray, np.generic)) for out in outs):
        return None  # a sequence or an optional: the converter makes it
    return [np.asarray(out) for out in outs]
