"""Shared fixtures: real-architecture ONNX models, built once and cached.

Models come from bench/make_models.py (seeded random weights, no downloads) and
are cached under bench/models/ (git-ignored), so a big model is generated once
per machine and imported once per test session.
"""

from __future__ import annotations

import fcntl
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MODEL_DIR = ROOT / "bench" / "models"
MAKE_MODELS = ROOT / "bench" / "make_models.py"


def model_path(name: str) -> Path:
    """Path of `NAME.onnx` from make_models.py, generating it on first use."""
    path = MODEL_DIR / f"{name}.onnx"
    if path.exists():
        return path
    MODEL_DIR.mkdir(parents=True, exist_ok=True)
    with open(MODEL_DIR / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # concurrent test runs generate each model once
        if not path.exists():
            subprocess.run([sys.executable, str(MAKE_MODELS), str(MODEL_DIR), "--only", name],
                           check=True, capture_output=True)
    return path


@pytest.fixture(scope="session")
def onnx_model() -> Callable[[str], Path]:
    """`onnx_model("resnet50")` -> path of the generated ONNX file."""
    return model_path
