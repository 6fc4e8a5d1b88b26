"""Shared fixtures: real-architecture ONNX models, built once and cached (see shared_models)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from goldens import set_update
from shared_models import model_path


@pytest.fixture(scope="session")
def onnx_model() -> Callable[[str], Path]:
    """`onnx_model("resnet50")` -> path of the generated ONNX file."""
    return model_path


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--update-goldens", action="store_true", default=False,
                     help="write the golden IR files instead of comparing with them")
    parser.addoption("--pt2-models", action="store_true", default=False,
                     help="also run the pt2_models-marked .pt2 acceptance models")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--pt2-models"):
        return
    skip = pytest.mark.skip(reason="a .pt2 acceptance model: make test-pt2-models runs it")
    for item in items:
        if "pt2_models" in item.keywords:
            item.add_marker(skip)


def pytest_configure(config: pytest.Config) -> None:
    set_update(bool(config.getoption("--update-goldens")))
