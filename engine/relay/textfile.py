"""Relay text files with their constants beside them: `NAME.relay` + `NAME.npz`.

The printer writes a module's constants as `meta[relay.Constant][k]`; inline, the
`#[metadata]` section holds them as base64 JSON (a third larger than the bytes, and
slow to parse for a big model). Here the text keeps the references and the constants go
to a compressed NumPy archive next to it (`c0`, `c1`, ... in metadata order), which
`load_relay` reads back into the parser's metadata table:

    paths = save_relay(mod, folder / "before")      # before.relay, before.npz
    mod = load_relay(folder / "before.relay")        # the same module, constants included
    text = with_metadata(text, arrays)               # one self-contained text instead
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from engine.ir.expr import Constant
from engine.ir.module import IRModule
from engine.relay.parser import parse
from engine.relay.printer import metadata_text, print_ir
from engine.runtime.ndarray import NDArray

CONSTANT_KIND = "relay.Constant"


def module_text(mod: IRModule) -> tuple[str, list[np.ndarray]]:
    """The module's Relay text (types shown, constants as meta references) and the
    constants' arrays in reference order."""
    result = print_ir(mod, show_types=True)
    return result.text + "\n", [c.data.numpy() for c in result.constants]


def save_relay(mod: IRModule, stem: Path) -> list[Path]:
    """Write `stem.relay` and, when the module has constants, `stem.npz`; the paths."""
    text, arrays = module_text(mod)
    relay_path = stem.with_suffix(".relay")
    relay_path.write_text(text)
    if not arrays:
        return [relay_path]
    npz_path = stem.with_suffix(".npz")
    save_arrays(npz_path, {f"c{k}": array for k, array in enumerate(arrays)})
    return [relay_path, npz_path]


def save_arrays(path: Path, arrays: dict[str, Any]) -> None:
    """A compressed NumPy archive of named arrays."""
    np.savez_compressed(path, **arrays)


def read_constants(npz_path: Path) -> list[np.ndarray]:
    """The constants of a `.npz` written by `save_relay`, in reference order."""
    with np.load(npz_path, allow_pickle=False) as archive:
        names = set(archive.files)
        count = len(names)
        expected = {f"c{k}" for k in range(count)}
        if names != expected:
            raise ValueError(f"{npz_path.name}: expected arrays c0..c{count - 1}, found "
                             f"{sorted(names)[:5]}")
        return [archive[f"c{k}"] for k in range(count)]


def load_relay(relay_path: Path | str) -> IRModule:
    """Parse `NAME.relay`, its constants read from `NAME.npz` when that file exists."""
    path = Path(relay_path)
    npz_path = path.with_suffix(".npz")
    metadata = {CONSTANT_KIND: read_constants(npz_path)} if npz_path.exists() else None
    return parse(path.read_text(), source_name=path.name, metadata=metadata)


_COMMENT = re.compile(r"/\*.*?\*/", re.S)
_BLANKS = re.compile(r"\s+")


def same_code(a: str, b: str) -> bool:
    """Whether two Relay texts are the same code: comments (spans, types, values) and
    whitespace aside."""
    def code(text: str) -> str:
        return _BLANKS.sub("", _COMMENT.sub("", text))

    return code(a) == code(b)


def with_metadata(text: str, arrays: Sequence[np.ndarray]) -> str:
    """`text` with a `#[metadata]` section holding `arrays` (one self-contained text)."""
    constants = [Constant(NDArray(np.asarray(a))) for a in arrays]
    return text.rstrip("\n") + "\n" + metadata_text(constants) + "\n"


__all__ = ["load_relay", "module_text", "read_constants", "same_code", "save_arrays",
           "save_relay", "with_metadata"]
