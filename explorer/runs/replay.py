"""Reproducers of one pass of a recorded run, made by replaying the run in a child.

A snapshot keeps the module's text, not its constants, so the module a pass received is
rebuilt: the session's model is imported again and the run's pipeline replayed (same
options, same plugins' pass hooks) under a `CaptureInstrument` that stops it when the
pass numbered `pass_index` is about to run, keeping the module it was given. That happens
in a child of the run workers' fork server (the server never parses an upload itself),
which writes the reproducer folder (`compiler.write_reproducer`) and answers with it
zipped. The pass must be registered by name (plugins' sources ship with the reproducer).
"""

from __future__ import annotations

import contextlib
import inspect
import io
import json
import re
import sys
import sysconfig
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from explorer import compiler
from explorer.compiler import IRModule, PassInstrument
from explorer.protocol import PASS_FAILED, PASS_FINISHED, ApiError, RunOptions
from explorer.runs.child_call import answer, call_in_child
from explorer.runs.children import load_plugins
from explorer.runs.execution import run_context, run_passes
from explorer.sessions import SessionService
from explorer.store import Store

REPRO_TIMEOUT = 600.0
"""Seconds the replay, the pass and the two evaluations may take."""


class _Captured(Exception):
    """Raised by the capture instrument to stop the replay at its pass."""


class CaptureInstrument(PassInstrument):
    """Numbers passes as the RecordingInstrument does (each `run_before_pass`, in order)
    and keeps the module pass `index` receives, then stops the pipeline."""

    def __init__(self, index: int) -> None:
        super().__init__()
        self.index = index
        self.seen = 0
        self.module: IRModule | None = None
        self.name = ""

    def run_before_pass(self, mod: IRModule, info: Any) -> None:
        if self.seen == self.index:
            self.module, self.name = mod, str(info.name)
            raise _Captured
        self.seen += 1


@dataclass(frozen=True, slots=True)
class ReproJob:
    run_id: str
    pass_index: int
    db_path: str
    models_dir: str
    plugins: tuple[str, ...] = ()


def recorded_pass(store: Store, run_id: str, index: int) -> dict[str, Any]:
    """The pass_finished (or pass_failed) data of pass `index` of the run; 404 when the run
    has none."""
    for event in store.events(run_id):
        data = event["data"]
        if event["type"] in (PASS_FINISHED, PASS_FAILED) and data["pass_index"] == index:
            return dict(data)
    raise ApiError(404, "not_found", f"run {run_id!r} has no finished pass {index}")


def capture(store: Store, sessions: SessionService, job: ReproJob, hooks: list[Any]
            ) -> tuple[IRModule, Any]:
    """Replay the run up to its pass `job.pass_index`: the module it got, and the context."""
    summary = store.run(job.run_id)
    options = RunOptions.from_json(summary["options"])
    imported = sessions.imported(summary["session_id"])
    capturer = CaptureInstrument(job.pass_index)
    ctx = run_context(options, [capturer])
    stages = run_passes(options, ctx, hooks)
    with contextlib.suppress(_Captured):
        compiler.compile_module(imported.mod, imported.params, stages, options.build, ctx)
    if capturer.module is None:
        raise ApiError(409, "replay_diverged", f"replaying run {job.run_id!r} ran only "
                       f"{capturer.seen} passes, not reaching pass {job.pass_index}")
    return capturer.module, ctx


def make_reproducer(store: Store, sessions: SessionService, job: ReproJob,
                    hooks: list[Any]) -> bytes:
    """The reproducer of pass `job.pass_index` of the run, as zip bytes."""
    recorded = recorded_pass(store, job.run_id, job.pass_index)
    name = str(recorded["name"])
    if name not in compiler.registered_passes():
        raise ApiError(422, "pass_not_registered",
                       f"pass {name!r} is not registered by name (a pipeline or a plugin "
                       "built it in place), so a reproducer cannot make it again")
    before, ctx = capture(store, sessions, job, hooks)
    session = store.session(store.run(job.run_id)["session_id"])
    spec = compiler.PassSpec(
        name, ctx.opt_level, tuple(ctx.required_pass), tuple(ctx.disabled_pass),
        _json_config(ctx.config), _plugin_sources(job.plugins), _beside_plugins(job.plugins),
        title=f"{name}, pass {job.pass_index} of run {job.run_id} ({session['name']})")
    with tempfile.TemporaryDirectory(prefix="explorer-repro-") as tmp:
        folder = Path(tmp) / "reproducer"
        try:
            after = recorded.get("after")
            compiler.write_reproducer(before, spec, folder, None if after is None
                                      else store.snapshot(int(after))["text"])
        except Exception as exc:  # the module or pass cannot round-trip: say which
            raise ApiError(422, "not_reproducible", f"pass {name!r} cannot be reproduced "
                           f"from Relay text: {type(exc).__name__}: {exc}") from exc
        return zip_folder(folder, f"repro-{job.run_id}-{job.pass_index}-{safe_name(name)}")


def _json_config(config: Any) -> dict[str, Any]:
    """The context's config keys whose values are plain JSON (all registered keys are)."""
    out = {}
    for key, value in dict(config).items():
        with contextlib.suppress(TypeError, ValueError):
            json.dumps(value)
            out[key] = value
    return out


def _plugin_sources(names: tuple[str, ...]) -> dict[str, str]:
    """module name -> source of each configured plugin (the server's own configuration)."""
    import importlib

    return {name: inspect.getsource(importlib.import_module(name)) for name in names}


def _beside_plugins(names: tuple[str, ...]) -> dict[str, str]:
    """module name -> source of the user's own top-level modules loaded here besides the
    plugins (a plugin's helpers, which it imports by name): single-file modules from
    outside the Python installation, the plugins themselves aside."""
    if not names:
        return {}
    installed = tuple(str(Path(p).resolve()) for key in ("stdlib", "platstdlib", "purelib",
                                                          "platlib")
                      if (p := sysconfig.get_paths().get(key)))
    found = {}
    for name, module in list(sys.modules.items()):
        path = getattr(module, "__file__", None)
        if "." in name or name.startswith("_") or name in names or not path \
                or not path.endswith(".py") or path.endswith("__init__.py"):
            continue
        if not str(Path(path).resolve()).startswith(installed):
            found[name] = Path(path).read_text()
    return found


def safe_name(name: str) -> str:
    """A pass name as a file name part (letters, digits, `._-`)."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name)[:80] or "pass"


def zip_folder(folder: Path, top: str) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                archive.write(path, f"{top}/{path.relative_to(folder).as_posix()}")
    return buffer.getvalue()


# --- in a child -------------------------------------------------------------------------------
def reproducer_zip(job: ReproJob, timeout: float = REPRO_TIMEOUT) -> bytes:
    """`make_reproducer` in a child process: its zip, or the ApiError it raised."""
    return bytes(call_in_child(_child_main, job, timeout, f"explorer-repro-{job.run_id}",
                               "repro", "making the reproducer"))


def _child_main(job: ReproJob, conn: Any) -> None:
    def work(store: Store) -> bytes:
        hooks = load_plugins(job.plugins)
        return make_reproducer(store, SessionService(store, Path(job.models_dir)), job, hooks)

    answer(conn, job.db_path, work,
           lambda exc: (500, "repro_failed", f"{type(exc).__name__}: {exc}", None))
