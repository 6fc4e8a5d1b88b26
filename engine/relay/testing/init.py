"""Seeded parameter initialisation for the test workloads (TVM's relay.testing.init)."""

from __future__ import annotations

import numpy as np

from engine.ir.expr import Function
from engine.ir.module import IRModule
from engine.ir.type import TensorType
from engine.relay.type_infer import infer_type
from engine.runtime.ndarray import NDArray


def init_param(name: str, ty: TensorType, rng: np.random.Generator) -> np.ndarray:
    """Values that keep activations finite through deep nets: He-scaled weights,
    BN statistics near identity, small biases and embeddings."""
    shape = ty.concrete_shape
    dtype = ty.dtype
    if name.endswith(("gamma", "moving_var")):
        return rng.uniform(0.5, 1.5, shape).astype(dtype)
    if name.endswith(("beta", "moving_mean", "bias")):
        return (rng.standard_normal(shape) * 0.01).astype(dtype)
    if name.endswith("embedding") or len(shape) < 2:
        return (rng.standard_normal(shape) * 0.02).astype(dtype)
    fan_in = int(np.prod(shape[1:])) if len(shape) != 4 or shape[1] != 1 else int(
        np.prod(shape[2:]))
    return (rng.standard_normal(shape) * np.sqrt(2.0 / max(fan_in, 1))).astype(dtype)


def create_workload(func: Function, inputs: tuple[str, ...] = ("data",), seed: int = 0
                    ) -> tuple[IRModule, dict[str, NDArray]]:
    """A typed module for `func` and seeded values for every parameter not in `inputs`."""
    mod = IRModule.from_expr(func)
    typed = infer_type(mod)
    assert isinstance(typed, IRModule)
    rng = np.random.default_rng(seed)
    params: dict[str, NDArray] = {}
    for param in typed["main"].params:
        if param.name_hint in inputs:
            continue
        ty = param.checked_type
        assert isinstance(ty, TensorType)
        params[param.name_hint] = NDArray(init_param(param.name_hint, ty, rng))
    return typed, params
