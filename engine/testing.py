"""TVM's `tvm.testing`: the helpers tests written for TVM call.

    tvm.testing.assert_allclose(actual, desired, rtol=1e-5)
    for target, dev in tvm.testing.enabled_targets(): ...
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from engine.runtime import cpu
from engine.target import TargetLike, kind_of

_TARGETS = ("llvm",)
"""The targets this engine builds for (relay.build runs numpy kernels on the CPU)."""


def _numpy(value: Any) -> Any:
    return value.numpy() if hasattr(value, "numpy") else value


def assert_allclose(actual: Any, desired: Any, rtol: float = 1e-7, atol: float = 1e-7,
                    verbose: bool = True) -> None:
    """numpy's assert_allclose with TVM's defaults; NDArrays are compared by value, and the
    shapes must match exactly (no broadcasting), as in TVM."""
    actual, desired = np.asanyarray(_numpy(actual)), np.asanyarray(_numpy(desired))
    np.testing.assert_allclose(actual.shape, desired.shape)
    np.testing.assert_allclose(actual, desired, rtol=rtol, atol=atol, verbose=verbose)


def enabled_targets() -> list[tuple[str, Any]]:
    """(target, device) pairs the tests can run on."""
    return [(target, cpu(0)) for target in _TARGETS]


def device_enabled(target: TargetLike) -> bool:
    """Whether `target` (a target string, dict or Target) can run here."""
    return kind_of(target) in _TARGETS


def parametrize_targets(*targets: str) -> Callable[[Callable[..., Any]], Any]:
    """Run a test once per enabled target, as `test(target, dev)`."""
    import pytest

    chosen = [t for t in (targets or _TARGETS) if device_enabled(t)]
    return pytest.mark.parametrize(("target", "dev"), [(t, cpu(0)) for t in chosen])


__all__ = ["assert_allclose", "device_enabled", "enabled_targets", "parametrize_targets"]
