"""Shared fixtures: real-architecture ONNX models, built once and cached (see shared_models)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from goldens import set_update
from shared_models import model_path

import engine as tvm


@pytest.fixture(scope="session")
def onnx_model() -> Callable[[str], Path]:
    """`onnx_model("resnet50")` -> path of the generated ONNX file."""
    return model_path


@pytest.fixture()
def keep_schedule_record() -> Iterator[None]:
    """Run the test inside a PassContext with `te.keep_schedule_record` on: schedules keep
    their records only then, as in TVM (a test's own PassContext overrides it)."""
    with tvm.transform.PassContext(config={"te.keep_schedule_record": True}):
        yield


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--update-goldens", action="store_true", default=False,
                     help="write the golden IR files instead of comparing with them")


def pytest_configure(config: pytest.Config) -> None:
    set_update(bool(config.getoption("--update-goldens")))


@pytest.fixture(params=["numpy", "compiled"])
def impl(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run a test once with the interpreter's numpy loops and once with its compiled ones
    (engine.relay.op.nn.compiled_kernels; skipped without numba)."""
    from engine.relay.op.nn import compiled_kernels

    monkeypatch.setenv(compiled_kernels.ENV, "1" if request.param == "compiled" else "0")
    if request.param == "compiled" and not compiled_kernels.enabled():
        pytest.skip("numba is not installed: only numpy's loops run")
    return str(request.param)
