"""Every snapshot the recorder stores through the whole O3 pipeline (FuseOps included) is,
byte for byte, a fresh print of its module: text, stored source map (against the map
re-read from the fresh print's protocol dicts) and line origins,
although most of them are reused or spliced (engine/relay/printer/retype.py) rather
than printed again."""

from __future__ import annotations

from typing import Any

import pytest
from shared_models import model_path

from engine.ir import IRModule
from engine.relay.frontend import load
from engine.relay.printer import document, print_ir
from explorer import compiler
from explorer.runs.recording import RecordingInstrument, SnapshotRecorder
from explorer.store import Store, encode_source_map


class CheckingRecorder(SnapshotRecorder):
    """A recorder that compares each snapshot it stores with a fresh print of its module."""

    def __init__(self) -> None:
        super().__init__(Store(":memory:"), "run")
        self.checked = 0
        self.mismatches: list[int] = []

    def _store(self, mod: IRModule, key: Any, text: str, table: Any, start: float) -> Any:
        fresh = print_ir(mod, show_types=True, reuse=False)
        # the stored map against one re-read from the fresh print's protocol dicts
        same = (text == fresh.text
                and encode_source_map(table) == encode_source_map(fresh.to_json())
                and print_ir(mod, show_types=True).line_origins == fresh.line_origins)
        if not same:
            self.mismatches.append(self.checked)
        self.checked += 1
        return super()._store(mod, key, text, table, start)


@pytest.mark.parametrize("name", ["resnet50", "bert2", "mobilenetv2"])
def test_recorded_snapshots_equal_fresh_prints(name: str, monkeypatch) -> None:
    spliced: list[int] = []
    real = document._Block.retyped

    def counting(self: Any, fn: Any) -> Any:
        found = real(self, fn)
        if found is not None and found is not self:
            spliced.append(1)
        return found

    monkeypatch.setattr(document._Block, "retyped", counting)
    mod = load(str(model_path(name))).mod
    recorder = CheckingRecorder()
    instrument = RecordingInstrument(recorder, lambda etype, data: None)
    ctx = compiler.pass_context(3, (), (), [instrument])
    passes = compiler.run_passes(None, False, ctx)
    recorder.record(mod)
    final = compiler.compile_module(mod, {}, passes, False, ctx).mod
    recorder.record(final)
    assert any(fn.attrs and fn.attrs.get("Primitive")
               for fn in _inner_functions(final))  # FuseOps ran
    assert recorder.checked >= 8
    assert recorder.mismatches == []
    assert len(spliced) >= 3  # InferType after a rewrite: trailers spliced, not reprinted


def _inner_functions(mod: IRModule) -> list[Any]:
    from engine.ir.expr import Function
    from engine.relay.analysis import post_order_visit

    found: list[Any] = []
    for _, fn in mod.items():
        post_order_visit(fn, lambda n: found.append(n) if isinstance(n, Function) else None)
    return found
