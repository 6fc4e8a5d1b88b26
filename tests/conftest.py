"""Shared fixtures: real-architecture ONNX models, built once and cached (see shared_models)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from shared_models import model_path


@pytest.fixture(scope="session")
def onnx_model() -> Callable[[str], Path]:
    """`onnx_model("resnet50")` -> path of the generated ONNX file."""
    return model_path
