"""The benchmarks that drive a real server or the page still run (`bench/run_all.py
--quick`, nothing recorded): they are not part of this suite's assertions on speed, but
they read the protocol's events and the page's test ids, and a change to either broke
them unseen (bench_llm still read a run_started field the protocol had dropped)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import pytest
from shared_models import ROOT, llama_small_path

SERVED = ("breakpoints", "browser", "graph", "explorer", "upload", "debug")

pytestmark = [pytest.mark.browser]


def _smoke(names: tuple[str, ...]) -> None:
    proc = subprocess.run([sys.executable, str(ROOT / "bench" / "run_all.py"), "--quick",
                           "--only", ",".join(names)], cwd=ROOT, capture_output=True,
                          text=True, timeout=900)
    summary = proc.stdout[proc.stdout.rfind("| benchmark"):]
    assert proc.returncode == 0, f"{summary}\n{proc.stderr[-4000:]}"
    for name in names:
        assert f"| {name} | ok |" in summary, summary


def test_the_served_benchmarks_run() -> None:
    _smoke(SERVED)


@pytest.mark.torch
def test_the_llm_benchmark_runs() -> None:
    for package in ("torch", "transformers", "onnxscript"):
        if importlib.util.find_spec(package) is None:
            pytest.skip(f"{package} is not installed")
    llama_small_path()  # the tests' small decoder is the bench's --small one
    _smoke(("llm",))
