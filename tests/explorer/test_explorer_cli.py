"""The `explorer` command: run and trace in-process through main(argv), and the
console script through a subprocess."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest
from explorer_helpers import MODEL_TEXT

from explorer.cli import main


@pytest.fixture()
def model(tmp_path: Path) -> Path:
    path = tmp_path / "model.relay"
    path.write_text(MODEL_TEXT)
    return path


def test_run_prints_summary_ir_after_change_and_timing(model, capsys):
    code = main(["run", str(model), "--passes", "ExplorerTestRebuild,ExplorerTestNoop",
                 "--print-after-change", "--timing"])
    out = capsys.readouterr().out
    assert code == 0
    assert ";; IR after ExplorerTestRebuild (changed)" in out
    assert "ExplorerTestNoop (unchanged)" not in out
    assert "finished: 2 passes, 1 changed the IR" in out
    assert "  ExplorerTestNoop:" in out  # indented under the Sequential in the timing tree


def test_run_print_after_all_and_failure_exit_code(model, capsys):
    assert main(["run", str(model), "--passes", "ExplorerTestNoop", "--print-after-all"]) == 0
    assert ";; IR after ExplorerTestNoop (unchanged)" in capsys.readouterr().out
    assert main(["run", str(model), "--passes", "ExplorerTestFail"]) == 1
    err = capsys.readouterr().err
    assert "ExplorerTestFail" in err and "deliberate failure" in err


def test_trace_a_layer_and_a_bound_name(model, capsys):
    assert main(["trace", str(model), "relu1", "--passes", "ExplorerTestRebuild"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("layer 'relu1': 1 expressions in the final IR")
    assert "nn.relu(%0)" in out
    assert main(["trace", str(model), "%2", "--passes", "ExplorerTestRebuild"]) == 0
    out = capsys.readouterr().out
    assert "multiply(%1, 2f" in out.splitlines()[0]
    assert "frontend layers: scale" in out
    assert "ExplorerTestRebuild: created" in out


def test_trace_unknown_target_and_bad_files(model, tmp_path, capsys):
    assert main(["trace", str(model), "relu", "--passes", "ExplorerTestNoop"]) == 2
    assert "did you mean" in capsys.readouterr().err
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"not a model")
    assert main(["run", str(bad)]) == 2
    assert "bad.onnx" in capsys.readouterr().err
    assert main(["run", str(tmp_path / "missing.relay")]) == 2


def test_console_module_runs_in_a_subprocess(model):
    proc = subprocess.run([sys.executable, "-m", "explorer.cli", "run", str(model),
                           "--passes", "InferType"], capture_output=True, text=True,
                          timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    assert "finished: 1 passes, 1 changed the IR" in proc.stdout


def test_serve_rejects_bad_arguments(capsys):
    with pytest.raises(SystemExit):
        main(["serve", "--port", "notaport"])
    assert "invalid int value" in capsys.readouterr().err


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_serve_demo_binds_loopback_and_answers(tmp_path):
    port = _free_port()
    with subprocess.Popen([sys.executable, "-m", "explorer.cli", "serve", "--demo",
                           "--port", str(port), "--data", str(tmp_path / "data")],
                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True) as proc:
        try:
            _check_serving(proc, port, tmp_path)
        finally:
            proc.terminate()
            proc.wait(timeout=10)


def _check_serving(proc: subprocess.Popen, port: int, tmp_path: Path) -> None:
    import json
    import time
    import urllib.request

    line = proc.stdout.readline() if proc.stdout else ""
    assert f"http://127.0.0.1:{port}/s/" in line
    # the demo has no run yet: its page starts one on first open
    assert line.split()[3].endswith("?autorun=1"), line
    deadline = time.monotonic() + 30
    while True:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/sessions") as resp:
                sessions = json.load(resp)["sessions"]
            break
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)
    assert [s["name"] for s in sessions] == ["demo_cnn.onnx"]
    assert (tmp_path / "data" / "explorer.sqlite3").exists()


def test_serve_on_all_interfaces_warns(tmp_path, monkeypatch, capsys):
    from explorer import serving

    calls = []
    monkeypatch.setattr(serving, "listen",
                        lambda app, host, port: calls.append({"host": host, "port": port}))
    assert main(["serve", "--host", "0.0.0.0", "--data", str(tmp_path)]) == 0
    assert calls[0]["host"] == "0.0.0.0"
    assert "WARNING" in capsys.readouterr().err
    assert main(["serve", "--data", str(tmp_path)]) == 0
    assert calls[1]["host"] == "127.0.0.1"
    assert "WARNING" not in capsys.readouterr().err


def test_run_reports_the_numerics_check(model, capsys):
    assert main(["run", str(model), "--passes", "ExplorerTestRebuild,ExplorerTestNoop",
                 "--check-numerics"]) == 0
    out = capsys.readouterr().out
    assert "numerics: 2 passes checked against the imported model, max |err| 0: ok" in out


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_counts_leaf_passes_against_the_plan():
    """Sequentials finishing and the build's stages after the plan never push the counter
    past its total (it once went 28/28 -> 29/29 -> 30/30)."""
    from explorer import protocol as p
    from explorer.cli import TerminalSink

    err = _Tty()
    sink = TerminalSink(None, io.StringIO(), err)  # type: ignore[arg-type]
    events = [(p.RUN_STARTED, {"num_passes_planned": 2})]
    finished = dict(opt_level=0, before=1, after=1, changed=False, elapsed_ms=1.0,
                    span_coverage=1.0, stats=p.pass_stats(nodes=1, nodes_delta=0), numerics=None)
    for index, name, depth, leaf in ((1, "InferType", 1, True), (2, "FoldConstant", 1, True),
                                     (0, "Sequential", 0, False), (3, "LowerTE", 0, True)):
        events.append((p.PASS_FINISHED, p.pass_finished(
            pass_index=index, name=name, depth=depth, parent_index=None, leaf=leaf, **finished)))
    for index, (kind, data) in enumerate(events):
        sink({"index": index, "type": kind, "data": data})  # type: ignore[typeddict-item]
    shown = [line.split("] ")[1].split()[0] for line in err.getvalue().split("\r") if "] " in line]
    assert shown == ["1/2", "2/2", "2/2"]
    assert "build: LowerTE" in err.getvalue()


def test_run_with_break_asks_on_the_terminal(model, capsys, monkeypatch):
    import io as _io

    answers = _io.StringIO("p\ns\nwhat\nc\n")
    monkeypatch.setattr(sys, "stdin", answers)
    code = main(["run", str(model), "--passes", "ExplorerTestNoop,ExplorerTestRebuild,ExplorerTestNoop",
                 "--break", "before:ExplorerTestRebuild"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert ";; paused before #2 ExplorerTestRebuild: breakpoint before ExplorerTestRebuild" in out
    assert "def @main" in out  # `p` printed the module where the run waits
    assert ";; paused after #2 ExplorerTestRebuild: stepped over ExplorerTestRebuild" in out
    assert "unknown answer 'what'" in out
    assert out.rstrip().splitlines()[-1].startswith("finished")


def test_run_with_a_bad_break_names_it(model, capsys):
    assert main(["run", str(model), "--break", "FuseOps"]) == 2
    assert "--break 'FuseOps': write before:PASS" in capsys.readouterr().err
