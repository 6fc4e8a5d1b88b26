"""Numerics of a pipeline: every snapshot computes what the imported model computes.

Inputs are seeded random tensors per model input (integers in [0, INT_HIGH) so
token ids and masks stay in range). The reference is the imported module's
outputs; each snapshot's max abs error is measured against it.

Drift bisection: when a pass breaks numerics, the frontend layers whose values
drifted are found by tapping, in the imported module and in the broken one,
the expression that carries each layer's output, and comparing the values.
In the imported module a layer's output is the last expression (in dataflow
order) whose span names it. In a transformed module an expression with
several source layers (a fused call, a folded constant) computes the output
of the latest of them in the reference order, so it is tapped for that layer
only. Layers whose tapped values disagree are reported in dataflow order: the
first one is where the drift starts.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from engine.ir import IRModule
from engine.ir.expr import Call, Constant, Expr, Function, If, Let, Tuple, TupleGetItem, Var
from engine.ir.traversal import post_order
from engine.ir.type import TensorType
from engine.relay.analysis.dataflow import dataflow_post_order
from engine.relay.interpreter import evaluate
from engine.relay.testing.quant_steps import LSB_TOLERANCE, max_step_error, output_steps

RTOL = 1e-3
ATOL = 1e-4
INT_HIGH = 2
MAX_TAPS = 2000
_DATAFLOW = (Call, Tuple, TupleGetItem)


def make_inputs(mod: IRModule, params: dict[str, Any], seed: int = 0) -> dict[str, np.ndarray]:
    """Seeded random inputs for every parameter of main that is not a weight."""
    rng = np.random.default_rng(seed)
    inputs: dict[str, np.ndarray] = {}
    for var in mod["main"].params:
        if var.name_hint in params:
            continue
        ty = var.type_annotation if var.type_annotation is not None else _checked(var)
        if not isinstance(ty, TensorType):
            raise ValueError(f"input %{var.name_hint} has no tensor type")
        shape = tuple(d if isinstance(d, int) else 1 for d in ty.shape)
        dtype = np.dtype(ty.dtype) if ty.dtype != "bool" else np.dtype(bool)
        inputs[var.name_hint] = _random(rng, shape, dtype)
    return inputs


def _checked(var: Var) -> Any:
    return var.checked_type if var.has_type else None


def _random(rng: np.random.Generator, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    if dtype == np.dtype(bool):
        return rng.integers(0, 2, size=shape).astype(bool)
    if np.issubdtype(dtype, np.integer):
        return rng.integers(0, INT_HIGH, size=shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def weight_bytes(mod: IRModule, params: dict[str, Any]) -> int:
    """The bytes of the weights an evaluation of `mod` with `params` holds in memory: the
    params and every constant of its functions, counted from their shapes and dtypes (a
    memory-mapped or deferred constant is not read)."""
    total = sum(int(v.nbytes if hasattr(v, "nbytes") else np.asarray(v).nbytes)
                for v in params.values())
    for func in mod.functions.values():
        total += sum(node.data.nbytes for node in post_order(func) if isinstance(node, Constant))
    return total


def flatten_outputs(value: Any) -> list[np.ndarray]:
    if isinstance(value, list | tuple):
        return [a for v in value for a in flatten_outputs(v)]
    if hasattr(value, "numpy"):
        value = value.numpy()
    return [np.asarray(value)]


def max_abs_error(outs: list[np.ndarray], refs: list[np.ndarray]) -> tuple[float | None, bool]:
    if len(outs) != len(refs) or any(o.shape != r.shape for o, r in zip(outs, refs)):
        return None, False
    worst = 0.0
    ok = True
    for out, ref in zip(outs, refs):
        if out.size == 0:
            continue
        diff = np.abs(out.astype(np.float64) - ref.astype(np.float64))
        err = float(np.max(diff))
        if not np.isfinite(err):
            return None, False
        worst = max(worst, err)
        ok = ok and bool(np.allclose(out, ref, rtol=RTOL, atol=ATOL))
    return worst, ok


class NumericsChecker:
    """Evaluates snapshots on fixed inputs and compares them with the imported module.

    A quantized output (integer, or float made by a dequantize: `quant_steps`) is also
    measured in quantization steps (`max_lsb_err`) and matches within `LSB_TOLERANCE`
    steps; the others match within RTOL/ATOL.
    """

    def __init__(self, reference: IRModule, params: dict[str, Any], seed: int = 0) -> None:
        from engine.relay.transform import InferType

        self.reference = reference
        self.inputs = {**make_inputs(reference, params, seed),
                       **{k: _array(v) for k, v in params.items()}}
        self.ref_outputs = flatten_outputs(evaluate(reference, self.inputs))
        steps = output_steps(InferType()(reference), params)
        self.steps = steps if len(steps) == len(self.ref_outputs) else [None] * len(self.ref_outputs)

    def __call__(self, mod: IRModule) -> dict[str, Any]:
        try:
            outs = self.outputs(mod)
        except Exception as exc:  # an unevaluable snapshot is a numerics failure, reported
            return {"max_abs_err": None, "ok": False, "error": f"{type(exc).__name__}: {exc}"}
        return self.compare(outs)

    def outputs(self, mod: IRModule) -> list[np.ndarray]:
        """The flattened outputs of `mod` on the checker's inputs."""
        return flatten_outputs(evaluate(mod, self.inputs))

    def compare(self, outs: list[np.ndarray], refs: list[np.ndarray] | None = None
                ) -> dict[str, Any]:
        """`outs` against `refs` (default: the imported module's outputs), as `__call__`
        measures a snapshot: max abs error, and quantization steps on quantized outputs."""
        refs = self.ref_outputs if refs is None else refs
        if not any(step is not None for step in self.steps):
            err, ok = max_abs_error(outs, refs)
            return {"max_abs_err": err, "ok": ok}
        return self._quantized(outs, refs)

    def _quantized(self, outs: list[np.ndarray], refs: list[np.ndarray]) -> dict[str, Any]:
        err, _ = max_abs_error(outs, refs)
        if err is None:
            return {"max_abs_err": None, "ok": False, "max_lsb_err": None}
        plain = [(o, r) for o, r, s in zip(outs, refs, self.steps) if s is None]
        _, plain_ok = max_abs_error([o for o, _ in plain], [r for _, r in plain])
        lsb = max_step_error(outs, refs, self.steps)
        ok = plain_ok and lsb is not None and lsb <= LSB_TOLERANCE
        return {"max_abs_err": err, "ok": ok, "max_lsb_err": lsb}

    def drifted_layers(self, broken: IRModule, limit: int = 50) -> list[str]:
        return drifted_layers(self.reference, broken, self.inputs)[:limit]

    def drifted_between(self, before: IRModule, after: IRModule, limit: int = 50
                        ) -> list[str]:
        """The layers whose values drifted from `before` to `after` (one pass's doing)."""
        return drifted_layers(before, after, self.inputs)[:limit]

    @staticmethod
    def nodes_naming(mod: IRModule, layers: list[str]) -> list[int]:
        """Node ids of main's dataflow expressions whose spans name any of `layers`."""
        wanted = set(layers)
        order = dataflow_post_order(mod["main"].body)
        return [node.node_id for node in order if isinstance(node, _DATAFLOW)
                and wanted.intersection(node.span.source_names())]


def _array(value: Any) -> np.ndarray:
    return value.numpy() if hasattr(value, "numpy") else np.asarray(value)


def main_dataflow(func: Function) -> list[Expr] | None:
    """Dataflow nodes of a function body in post-order, not entering nested functions;
    None when the body binds variables (let/if), where expressions cannot be tapped."""
    order = dataflow_post_order(func.body)
    if any(isinstance(node, Let | If) for node in order):
        return None
    return [node for node in order if isinstance(node, _DATAFLOW)]


def reference_taps(order: list[Expr]) -> dict[str, Expr]:
    """Layer name -> the last expression naming it (the layer's output)."""
    taps: dict[str, Expr] = {}
    for node in order:
        for name in node.span.source_names():
            taps.pop(name, None)
            taps[name] = node  # re-insert: dict order = order of each layer's output
    return taps


def transformed_taps(order: list[Expr], rank: dict[str, int]) -> dict[str, Expr]:
    taps: dict[str, Expr] = {}
    for node in order:
        names = [n for n in node.span.source_names() if n in rank]
        if names:
            taps[max(names, key=rank.__getitem__)] = node
    return taps


def tap_values(mod: IRModule, exprs: list[Expr], inputs: dict[str, Any]) -> list[Any]:
    """The values of `exprs` (dataflow expressions of main's body) on `inputs`."""
    main = mod["main"]
    tapped = Function(main.params, Tuple((main.body, *exprs)), attrs=main.attrs)
    probe = mod.shallow_copy()
    probe["main"] = tapped
    values = evaluate(probe, inputs)
    return list(values)[1:]


def dataflow_node(mod: IRModule, node_id: int) -> Expr | None:
    """The expression of main's dataflow (outside nested functions) with that node id."""
    order = main_dataflow(mod["main"])
    return next((node for node in order or () if node.node_id == node_id), None)


def drifted_layers(reference: IRModule, broken: IRModule, inputs: dict[str, Any]) -> list[str]:
    ref_order = main_dataflow(reference["main"])
    new_order = main_dataflow(broken["main"])
    if not ref_order or not new_order:
        return []
    ref_taps = reference_taps(ref_order)
    rank = {name: i for i, name in enumerate(ref_taps)}
    new_taps = transformed_taps(new_order, rank)
    common = [n for n in ref_taps if n in new_taps][:MAX_TAPS]
    if not common:
        return []
    ref_vals = tap_values(reference, [ref_taps[n] for n in common], inputs)
    new_vals = tap_values(broken, [new_taps[n] for n in common], inputs)
    drifted = []
    for name, a, b in zip(common, ref_vals, new_vals):
        ref, new = flatten_outputs(a), flatten_outputs(b)
        if [r.shape for r in ref] != [n.shape for n in new]:
            continue  # a different value (layout change, tuple vs tensor): not comparable
        _, ok = max_abs_error(new, ref)
        if not ok:
            drifted.append(name)
    return drifted
