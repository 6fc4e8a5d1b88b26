"""Real-architecture ONNX models for tests, built once per machine and cached.

Models come from bench/make_models.py (seeded random weights, no downloads) and
are cached under bench/models/ (git-ignored). Import `model_path` from here
(`from shared_models import model_path`), or use the `onnx_model` fixture.
"""

from __future__ import annotations

import fcntl
import subprocess
import sys
from pathlib import Path

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
