"""The `explorer` command: `serve`, `run`, `trace`, `report`, `sessions` and `delete`.

    explorer serve [MODEL] [--host 127.0.0.1] [--port 5000] [--data DIR] [--open] [--demo]
                   [--max-runs N] [--plugin MODULE]
    explorer run MODEL [--opt-level 3] [--disable P] [--print-after-all | --print-after-change]
                       [--timing] [--check-numerics]
    explorer trace MODEL NODE_OR_LAYER [--opt-level 3] [--disable P]
    explorer report MODEL -o run.html [--opt-level 3] [--disable P] ...   # one HTML file
    explorer sessions [--data DIR]          # list the stored sessions and their runs
    explorer delete ID [--data DIR]         # delete a session (with its runs) or a run

`run` and `trace` use the same recording machinery as the server, on an
in-memory database, and print to the terminal.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import socket
import sys
import tempfile
import threading
import time
import webbrowser
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TextIO

from explorer import compiler, queries
from explorer.guard import LOOPBACK_HOSTS
from explorer.hub import EventHub
from explorer.protocol import (
    NUMERICS_UNAVAILABLE,
    PASS_FINISHED,
    RUN_PAUSED,
    RUN_STARTED,
    ApiError,
    RunEvent,
    RunOptions,
)
from explorer.runs.config import RunConfig
from explorer.runs.manager import RunManager
from explorer.runs.numerics import NUMERICS_WEIGHT_LIMIT
from explorer.sessions import SessionService
from explorer.store import Store
from explorer.tracefmt import resolve_target, trace_text

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="explorer", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="start the web explorer")
    serve.add_argument("model", nargs="?", type=Path, help="a model to open as a session")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=5000)
    serve.add_argument("--data", type=Path, default=None, help="data folder (SQLite, uploads)")
    serve.add_argument("--open", action="store_true", help="open the page in a browser")
    serve.add_argument("--demo", action="store_true", help="open the bundled demo model")
    serve.add_argument("--max-upload-mb", type=int, default=512)
    serve.add_argument("--max-data-gb", type=float, default=None, metavar="GB",
                       help="keep the data folder under this size: the least recently used "
                            "sessions are deleted first")
    serve.add_argument("--allow-host", action="append", default=[], metavar="NAME",
                       help="another host name the server answers to (besides loopback "
                            "and --host)")
    serve.add_argument("--max-runs", type=int, default=None, metavar="N",
                       help="runs executing at once (default: the number of CPUs); "
                            "more wait in a queue")
    serve.add_argument("--stall-timeout", type=float, default=None, metavar="SECONDS",
                       help="stop a run with no progress for this long (default 1800)")
    serve.add_argument("--plugin", action="append", default=[], metavar="MODULE",
                       help="a Python module every run imports (registers extra passes)")
    _numerics_limit_arg(serve)
    for name, helptext in (("run", "run the pipeline in the terminal"),
                           ("trace", "backtrace an expression or a layer of the final IR")):
        cmd = sub.add_parser(name, help=helptext)
        cmd.add_argument("model", type=Path)
        if name == "trace":
            cmd.add_argument("target", help="node id (123 or #123), %%name, or a layer name")
        _pipeline_args(cmd)
        if name == "run":
            shown = cmd.add_mutually_exclusive_group()
            shown.add_argument("--print-after-all", action="store_true")
            shown.add_argument("--print-after-change", action="store_true")
            cmd.add_argument("--timing", action="store_true", help="print the pass timing tree")
            cmd.add_argument("--break", dest="breakpoints", action="append", default=[],
                             metavar="KIND:TARGET",
                             help="pause before:PASS, after:PASS or touches:LAYER and ask "
                                  "on the terminal how to go on")
    report = sub.add_parser("report", help="write a run's page as one self-contained HTML file")
    report.add_argument("model", type=Path)
    report.add_argument("-o", "--output", type=Path, required=True, metavar="FILE.html")
    _pipeline_args(report)
    listing = sub.add_parser("sessions", help="list the stored sessions and their runs")
    listing.add_argument("--data", type=Path, default=None, help="data folder")
    delete = sub.add_parser("delete", help="delete a session (with its runs) or a run")
    delete.add_argument("id", help="a session id or a run id")
    delete.add_argument("--data", type=Path, default=None, help="data folder")
    compare = sub.add_parser("compare", help="compare two stored runs pass by pass")
    compare.add_argument("runs", nargs=2, metavar="RUN", help="two run ids (explorer sessions)")
    compare.add_argument("--differ", action="store_true",
                         help="only the passes whose after-modules differ")
    compare.add_argument("--data", type=Path, default=None, help="data folder")
    return parser


def _pipeline_args(cmd: argparse.ArgumentParser) -> None:
    cmd.add_argument("--opt-level", type=int, default=3, choices=range(4))
    cmd.add_argument("--disable", action="append", default=[], metavar="PASS")
    cmd.add_argument("--require", action="append", default=[], metavar="PASS")
    cmd.add_argument("--passes", default=None, help="comma-separated explicit pass list")
    cmd.add_argument("--check-numerics", action="store_true")
    cmd.add_argument("--no-build", action="store_true",
                     help="run relay.optimize instead of relay.build (no lowering, no kernels)")
    cmd.add_argument("--input-shapes", default=None, help='JSON {"name": [dims]}')
    cmd.add_argument("--plugin", action="append", default=[], metavar="MODULE",
                     help="a Python module to import first (registers extra passes)")
    _numerics_limit_arg(cmd)


def _numerics_limit_arg(cmd: argparse.ArgumentParser) -> None:
    cmd.add_argument("--numerics-limit", type=float, default=None, metavar="GB",
                     help="check numerics only of models with at most this many GB of weights "
                          f"(default {NUMERICS_WEIGHT_LIMIT / 1e9:.1f}: each check evaluates "
                          "the whole model with its weights in memory)")


def _limit_bytes(args: argparse.Namespace) -> int:
    limit = getattr(args, "numerics_limit", None)
    return NUMERICS_WEIGHT_LIMIT if limit is None else int(limit * 1e9)


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.command == "serve":
            return serve(args)
        if args.command in ("sessions", "delete", "compare"):
            return manage(args, sys.stdout, sys.stderr)
        if args.command == "report":
            return static_report(args, sys.stdout, sys.stderr)
        return terminal_run(args, sys.stdout, sys.stderr)
    except ApiError as err:
        print(f"explorer: {err.message}", file=sys.stderr)
        suggested = (err.detail or {}).get("suggested") if err.code == "dynamic_shape" else None
        if suggested:
            print(f"explorer: run it again with --input-shapes '{json.dumps(suggested)}'",
                  file=sys.stderr)
        return EXIT_USAGE
    except OSError as err:
        print(f"explorer: {err.strerror or err}: {err.filename or ''}", file=sys.stderr)
        return EXIT_USAGE


# --- serve ---------------------------------------------------------------------------------
def serve(args: argparse.Namespace) -> int:
    from explorer import create_app, serving

    app = create_app(_serve_config(args))
    path = _first_page(app, args)
    token = app.config["ACCESS_TOKEN"]
    if token:
        print(f"explorer: WARNING: listening on {args.host}: anyone who can reach this "
              "machine and has the token below can upload models and read every session",
              file=sys.stderr)
        path += f"?token={token}"
    url = f"http://{'127.0.0.1' if args.host in ('0.0.0.0', '::') else args.host}:{args.port}{path}"
    print(f"IR Explorer on {url} (data in {app.config['DATA_DIR']})", flush=True)
    if args.open:
        threading.Timer(1.0, webbrowser.open, args=(url,)).start()
    try:
        serving.listen(app, args.host, args.port)  # the services run in the server's worker
    except KeyboardInterrupt:
        print("explorer: stopping", file=sys.stderr)
    return EXIT_OK


def _first_page(app: Any, args: argparse.Namespace) -> str:
    """The page the banner names: the session of MODEL or of the demo, made before the
    server starts (imported here, as `explorer run` does: the file is the user's own, and
    the serving process keeps no store, thread or child of its own), else the home page."""
    from explorer.demo import demo_session

    data_dir = Path(app.config["DATA_DIR"] or app.instance_path)
    app.config["DATA_DIR"] = str(data_dir)
    if args.model is None and not args.demo:
        return "/"
    data_dir.mkdir(parents=True, exist_ok=True)
    store = Store(data_dir / "explorer.sqlite3")
    try:
        sessions = SessionService(store, data_dir / "models",
                                  data_limit=lambda: app.config.get("MAX_DATA_BYTES"))
        if args.model is not None:
            session = sessions.open_local(args.model)  # in place, not copied
        else:
            session = demo_session(sessions, data_dir)
        # a session with no run starts one on first open (the page's autorun)
        return f"/s/{session['id']}" + ("" if store.runs_of(session["id"]) else "?autorun=1")
    finally:
        store.close()


def _serve_config(args: argparse.Namespace) -> dict[str, Any]:
    config: dict[str, Any] = {"MAX_CONTENT_LENGTH": args.max_upload_mb * 1024 * 1024,
                              "RUN_PLUGINS": list(args.plugin),
                              "ALLOWED_HOSTS": _allowed_hosts(args.host, args.allow_host)}
    if args.host not in LOOPBACK_HOSTS:
        config["ACCESS_TOKEN"] = os.environ.get("EXPLORER_TOKEN") or secrets.token_urlsafe(24)
    if args.max_data_gb is not None:
        config["MAX_DATA_BYTES"] = int(args.max_data_gb * 1024**3)
    if args.data is not None:
        config["DATA_DIR"] = str(args.data.resolve())
    if args.max_runs is not None:
        config["MAX_CONCURRENT_RUNS"] = args.max_runs
    if args.stall_timeout is not None:
        config["RUN_STALL_TIMEOUT"] = args.stall_timeout
    config["NUMERICS_WEIGHT_LIMIT"] = _limit_bytes(args)
    return config


def _allowed_hosts(host: str, extra: list[str]) -> list[str]:
    """Host names the server answers to besides loopback: --host, --allow-host, and the
    machine's names when it listens on every interface."""
    names = [host, *extra]
    if host in ("0.0.0.0", "::", ""):
        names += [socket.gethostname(), socket.getfqdn()]
    return [n for n in names if n]


# --- sessions / delete -----------------------------------------------------------------------
def manage(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """`sessions` lists the data folder's sessions; `delete ID` deletes a session or a run;
    `compare A B` prints two runs pass by pass."""
    from explorer import create_app

    config = {} if args.data is None else {"DATA_DIR": str(args.data.resolve())}
    app = create_app(config)
    data_dir = Path(app.config["DATA_DIR"] or app.instance_path)
    if not (data_dir / "explorer.sqlite3").exists():
        print(f"explorer: no data in {data_dir}", file=err)
        return EXIT_FAILED if args.command == "delete" else EXIT_OK
    store = Store(data_dir / "explorer.sqlite3")
    sessions = SessionService(store, data_dir / "models")
    try:
        if args.command == "compare":
            from explorer.compare import compare_runs, comparison_text

            print(comparison_text(compare_runs(store, *args.runs), args.differ), file=out)
            return EXIT_OK
        if args.command == "sessions":
            for session in store.sessions():
                runs = store.runs_of(session["id"])
                print(f"{session['id']}  {session['name']}  ({len(runs)} runs)", file=out)
                for run in runs:
                    print(f"    run {run['id']}  {run['status']}", file=out)
            return EXIT_OK
        what = sessions.delete_any(args.id)
        print(f"deleted {what} {args.id}", file=out)
        return EXIT_OK
    except ApiError as error:
        print(f"explorer: {error.message}", file=err)
        return EXIT_FAILED
    finally:
        store.close()


# --- run / trace in the terminal -----------------------------------------------------------
class TerminalSink:
    """Prints run events: a progress bar on a terminal, IR after passes when asked."""

    def __init__(self, store: Store, out: TextIO, err: TextIO, after_all: bool = False,
                 after_change: bool = False, progress: bool = True) -> None:
        self.store, self.out, self.err = store, out, err
        self.after_all, self.after_change = after_all, after_change
        self.progress = progress and err.isatty()
        self.planned: int | None = None
        self.done = 0

    def __call__(self, event: RunEvent) -> None:
        data = event["data"]
        if event["type"] == RUN_STARTED:
            self.planned = data.get("num_passes_planned")
        elif event["type"] == RUN_PAUSED:
            print(f"\n;; paused {data['when']} #{data['pass_index']} {data['name']}: "
                  f"{data['reason']}", file=self.out, flush=True)
        elif event["type"] == PASS_FINISHED:
            if data["leaf"]:
                self._bar(data["name"])
            if self.after_all or (self.after_change and data["changed"]):
                text = self.store.snapshot(data["after"])["text"]
                mark = "changed" if data["changed"] else "unchanged"
                print(f";; IR after {data['name']} ({mark})\n{text}", file=self.out)

    def _bar(self, name: str) -> None:
        """Leaf passes against the plan (what run_started's num_passes_planned counts); the
        build's own stages after the plan show as `build` with the bar full."""
        planned = self.planned
        if planned is None or self.done < planned:
            self.done += 1
        elif name:
            name = f"build: {name}"
        if not self.progress:
            return
        total = planned or self.done
        filled = min(30, int(30 * self.done / total)) if total else 30
        count = f"{self.done}/{planned}" if planned else f"{self.done}"
        print(f"\r[{'#' * filled}{' ' * (30 - filled)}] {count} {name[:36]:<36}",
              end="", file=self.err, flush=True)


def _options(args: argparse.Namespace) -> RunOptions:
    passes = None if not args.passes else tuple(p for p in args.passes.split(",") if p)
    return RunOptions.from_json({
        "opt_level": args.opt_level, "disabled_pass": list(args.disable),
        "required_pass": list(args.require),
        "passes": None if passes is None else list(passes),
        "check_numerics": args.check_numerics,
        "build": not args.no_build and passes is None})


def _run_here(args: argparse.Namespace, store: Store, models: Path, sink: TerminalSink,
              gate: Any = None) -> tuple[str, str]:
    """Run the pipeline of `args` on MODEL in this process (pausing at `gate`'s
    breakpoints): (session id, run id)."""
    from explorer.runs.execution import tune_gc_for_compilation
    from explorer.session_inputs import parse_input_shapes

    tune_gc_for_compilation()  # this process only compiles
    hub = EventHub(store)
    hub.add_sink(sink)
    sessions = SessionService(store, models)
    manager = RunManager(store, hub, sessions, config=RunConfig(
        plugins=tuple(args.plugin), numerics_weight_limit=_limit_bytes(args)))
    shapes = parse_input_shapes(args.input_shapes)
    inlined = compiler.relay_with_constants(args.model)
    session = (sessions.open_local(args.model, shapes) if inlined is None
               else sessions.create(args.model.name, inlined, shapes))
    options = _options(args)
    manager.validate(options)
    run_id = manager.start_sync(session["id"], options, gate)
    if sink.progress:
        print(file=sink.err)
    return session["id"], run_id


def terminal_run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    with tempfile.TemporaryDirectory(prefix="explorer-") as tmp:
        store = Store(":memory:")
        is_run = args.command == "run"
        sink = TerminalSink(store, out, err, getattr(args, "print_after_all", False),
                            getattr(args, "print_after_change", False), progress=is_run)
        _, run_id = _run_here(args, store, Path(tmp), sink, _terminal_gate(args, store, out))
        summary = store.run(run_id)
        if is_run:
            _report(store, run_id, summary, out, args.timing)
        else:
            target = resolve_target(store, run_id, args.target)
            print(trace_text(store, queries.SnapshotIndexCache(store), run_id, target), file=out)
        if summary["status"] != "finished":
            print(f"explorer: run {summary['status']}: pass {summary['failed_pass']!r}: "
                  f"{summary['error']}", file=err)
            return EXIT_FAILED
    return EXIT_OK


def static_report(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """`explorer report MODEL -o FILE`: run the pipeline, then write the run's page as one
    self-contained HTML file (explorer/report.py)."""
    from explorer import create_app
    from explorer.report import ReportError, write_report

    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="explorer-report-") as tmp:
        data = Path(tmp)
        store = Store(data / "explorer.sqlite3")
        try:
            session_id, run_id = _run_here(args, store, data / "models",
                                           TerminalSink(store, out, err))
            summary = store.run(run_id)
        finally:
            store.close()
        ran = time.perf_counter()
        app = create_app({"DATA_DIR": str(data), "MAX_CONCURRENT_RUNS": 1})
        try:
            size = write_report(app.test_client(), session_id, run_id, args.model.name,
                                args.output)
        except ReportError as error:
            print(f"explorer: {error}", file=err)
            return EXIT_FAILED
        finally:
            if app.extensions["explorer"].started:
                app.extensions["explorer"].runs.shutdown()
    print(f"{summary['status']}: {summary['num_passes']} passes in {ran - started:.1f} s; "
          f"report written to {args.output} ({size / 1e6:.1f} MB, "
          f"{time.perf_counter() - ran:.1f} s)", file=out)
    return EXIT_OK if summary["status"] == "finished" else EXIT_FAILED


def _terminal_gate(args: argparse.Namespace, store: Store, out: TextIO) -> Any:
    """`--break`: a gate that asks on the terminal at each pause (None without breakpoints)."""
    from explorer.runs.breakpoints import TerminalGate, parse_breakpoint

    points = [parse_breakpoint(text) for text in getattr(args, "breakpoints", [])]
    return TerminalGate(points, store, sys.stdin, out) if points else None


def _report(store: Store, run_id: str, summary: Mapping[str, Any], out: TextIO,
            timing: bool) -> None:
    print(f"{summary['status']}: {summary['num_passes']} passes, {summary['num_changed']} "
          f"changed the IR, {summary['total_ms']:.1f} ms", file=out)
    if summary["options"].get("check_numerics"):
        print(numerics_report(store, run_id, summary), file=out)
    if timing:
        print(queries.render_timing(queries.timing_tree(store, run_id)), file=out)


def numerics_report(store: Store, run_id: str, summary: Mapping[str, Any]) -> str:
    """The --check-numerics result in one line: how many snapshots were compared with the
    imported module's outputs, the largest error, and the first pass that broke them."""
    checked: list[tuple[str, Any]] = []
    for event in store.events(run_id):
        if event["type"] == NUMERICS_UNAVAILABLE:
            return f"numerics not checked: {event['data']['message']}"
        if event["type"] == PASS_FINISHED and event["data"]["leaf"] and event["data"]["numerics"]:
            checked.append((event["data"]["name"], event["data"]["numerics"]))
    if not checked:
        return "numerics not checked: no pass reported a result"
    errors = [n["max_abs_err"] for _, n in checked if n.get("max_abs_err") is not None]
    worst = f", max |err| {max(errors):.3g}" if errors else ""
    steps = [n["max_lsb_err"] for _, n in checked if n.get("max_lsb_err") is not None]
    if steps:
        worst += f" = {lsb_text(max(steps))} of the quantized outputs"
    head = f"numerics: {len(checked)} passes checked against the imported model{worst}"
    if not summary.get("first_numerics_break"):
        return f"{head}: ok"
    layers = ", ".join(summary["drifted_layers"][:10]) or "none found"
    return (f"{head}: first broken by {summary['first_numerics_break']}; "
            f"drifted layers: {layers}")


def lsb_text(steps: float) -> str:
    """`0 LSB`, `1 LSB`, `2.5 LSB`: an error in quantization steps."""
    return f"{steps:.3g} LSB"


if __name__ == "__main__":
    raise SystemExit(main())
