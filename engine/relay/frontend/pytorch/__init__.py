"""PyTorch frontend (optional: needs `torch`): torch.export programs -> Relay.

`from_pytorch(module_or_exported_program, input_infos)` takes an `nn.Module` (exported here
with `torch.export.export` on zero example inputs built from `input_infos`) or an
`ExportedProgram`; `import_pt2(data)` reads an uploaded `.pt2` archive without unpickling
anything (see `safety.py`). Spans are module paths (`layer1.0.conv1`) with the line of the
model's code that called the op, where the program kept its stack trace; outputs are the
program's user outputs flattened by its output spec (tuples, dicts, Hugging Face
`ModelOutput`s). The converters cover the Core ATen set and the ops torch.export leaves in
training IR (see `aten_table.py`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from engine.ir.module import IRModule
from engine.relay.frontend.common import FrontendError
from engine.relay.frontend.result import ImportResult
from engine.runtime.ndarray import NDArray


class TorchMissingError(FrontendError):
    """PyTorch is not installed (it is the optional `torch` extra)."""


def _torch() -> Any:
    try:
        import torch
    except ImportError:
        raise TorchMissingError("the PyTorch frontend needs torch: pip install "
                                "'ir-explorer[torch]'") from None
    return torch


def _example_inputs(torch: Any, input_infos: Sequence[Any]) -> tuple[Any, ...]:
    out = []
    for _, info in input_infos:
        if isinstance(info, tuple) and len(info) == 2 and isinstance(info[1], str):
            out.append(torch.zeros(tuple(info[0]), dtype=getattr(torch, info[1])))
        else:
            out.append(torch.zeros(tuple(info)))
    return tuple(out)


def _program(model: Any, input_infos: Sequence[Any] | None) -> Any:
    torch = _torch()
    if isinstance(model, torch.export.ExportedProgram):
        return model
    if isinstance(model, torch.nn.Module):
        if not input_infos:
            raise TypeError("from_pytorch on an nn.Module needs input_infos [(name, shape)]")
        return torch.export.export(model.eval(), _example_inputs(torch, input_infos))
    raise TypeError(f"from_pytorch takes an nn.Module or ExportedProgram, not {type(model)}")


def import_program(program: Any, input_infos: Sequence[Any] | None = None) -> ImportResult:
    from engine.relay.frontend.pytorch.importer import TorchImporter

    mod, graph = TorchImporter(program, input_infos).run()
    return ImportResult(mod, {}, "pytorch", graph, ())


def from_pytorch(model: Any, input_infos: Sequence[Any] | None = None
                 ) -> tuple[IRModule, dict[str, NDArray]]:
    """`(mod, params)` from an nn.Module (+ input_infos) or a torch.export ExportedProgram."""
    result = import_program(_program(model, input_infos), input_infos)
    return result.mod, result.params


def import_pt2(data: bytes) -> ImportResult:
    """Import an uploaded `.pt2` archive safely (no pickle is ever executed)."""
    from engine.relay.frontend.pytorch.safety import load_exported_program

    _torch()
    return import_program(load_exported_program(data))


__all__ = ["TorchMissingError", "from_pytorch", "import_program", "import_pt2"]
