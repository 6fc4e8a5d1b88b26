#!/usr/bin/env python3
"""Profile our import + recorded O3 pipeline with pyinstrument; list the hot spots.

    .venv/bin/python bench/profile_hotspots.py [resnet50 bert12 wide_2000 ...] [--top 15]

Per model, three stages are profiled separately (ONNX import, the passes, the recording
hooks) and the top functions by self time are printed as `file:function  share`, with
the pass and recording totals. Only prints: the numbers go into the report that routes
the fixes (engine files belong to their owners). Needs `pyinstrument` (bench extra).
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import MODEL_DIR, ROOT, model_path
from _ours import import_model, pipeline_recorded


def self_times(frame: Any, out: Counter[str]) -> None:
    """Self time per `file:function` over a pyinstrument frame tree (iterative)."""
    stack = [frame]
    while stack:
        node = stack.pop()
        if node is None:
            continue
        if getattr(node, "is_synthetic", False):
            continue  # pyinstrument's "[self]"/"[await]" leaves: counted in their parent
        children = [c for c in node.children if not getattr(c, "is_synthetic", False)]
        own = node.time - sum(c.time for c in children)
        path = node.file_path_short or node.file_path or "?"
        with contextlib.suppress(ValueError, TypeError, OSError):
            path = str(Path(node.file_path).resolve().relative_to(ROOT))
        out[f"{path}:{node.function}"] += max(own, 0.0)
        stack.extend(children)


def profile(fn: Any) -> tuple[Any, Counter[str], float]:
    from pyinstrument import Profiler

    profiler = Profiler(interval=0.001)
    profiler.start()
    result = fn()
    session = profiler.stop()
    times: Counter[str] = Counter()
    root = profiler.last_session.root_frame() if hasattr(profiler, "last_session") else None
    self_times(root, times)
    return result, times, session.duration


def show(title: str, times: Counter[str], total: float, top: int) -> None:
    print(f"\n### {title}: {total:.2f} s")
    for name, secs in times.most_common(top):
        print(f"  {100 * secs / total:5.1f}%  {secs:7.3f} s  {name}")


def path_of(name: str) -> Path:
    wide = MODEL_DIR / f"{name}.onnx"
    if name.startswith("wide_"):
        from bench_scale import wide_model

        return wide_model(int(name[5:]))
    return wide if wide.exists() else model_path(name)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="*", default=["resnet50", "bert12"])
    parser.add_argument("--top", type=int, default=15)
    args = parser.parse_args(argv)
    for name in args.models:
        path = path_of(name)
        (mod, _), times, total = profile(lambda p=path: import_model(p))
        show(f"{name}: ONNX import", times, total, args.top)
        (result, _), times, total = profile(lambda m=mod: pipeline_recorded(m))
        row = result.row
        show(f"{name}: recorded O3 pipeline (passes {row['pass_s']:.2f} s, recording "
             f"{row['record_s']:.2f} s of printing/storing)", times, total, args.top)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
