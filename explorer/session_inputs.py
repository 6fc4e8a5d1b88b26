"""What a client sends with a model, checked before anything is stored or imported: the
file's name (shown, never used as a path) and format, a session's new name, and input
shapes (pinned symbolic dimensions included), each refused with an error naming it."""

from __future__ import annotations

import json
import unicodedata
from pathlib import PurePath
from typing import Any

from explorer.protocol import UPLOAD_EXTENSIONS, ApiError, Session, bad_request

MAX_INPUT_ELEMENTS = 2**31
MAX_NAME_LENGTH = 255


def symbolic_inputs(session: Session) -> dict[str, list[int | str]]:
    """The session's inputs that have a dimension unknown until run time, with their shapes."""
    return {t["name"]: t["shape"] for t in session["inputs"]
            if any(isinstance(d, str) for d in t["shape"])}


def clean_name(filename: str) -> str:
    """The client's file name as shown: its last path part, without control or
    bidirectional-override characters (Unicode categories Cc and Cf), at most
    MAX_NAME_LENGTH characters (the extension kept)."""
    name = PurePath(filename.replace("\\", "/")).name
    name = "".join(c for c in name if unicodedata.category(c) not in ("Cc", "Cf")).strip()
    if len(name) > MAX_NAME_LENGTH:
        suffix = PurePath(name).suffix[:16]
        name = name[:MAX_NAME_LENGTH - len(suffix)] + suffix
    return name or "model"


def check_name(name: Any) -> str:
    """A name the user typed for a session: text without control or bidirectional
    characters, not blank, at most MAX_NAME_LENGTH characters (refused, not cut)."""
    if not isinstance(name, str):
        raise bad_request("bad_name", "name must be a string")
    cleaned = "".join(c for c in name if unicodedata.category(c) not in ("Cc", "Cf")).strip()
    if not cleaned:
        raise bad_request("bad_name", "name must not be empty")
    if len(cleaned) > MAX_NAME_LENGTH:
        raise bad_request("bad_name", f"name is {len(cleaned)} characters long "
                          f"(at most {MAX_NAME_LENGTH})", {"limit": MAX_NAME_LENGTH})
    return cleaned


def format_for(filename: str) -> str:
    suffix = PurePath(filename).suffix.lower()
    for fmt, suffixes in UPLOAD_EXTENSIONS.items():
        if suffix in suffixes:
            return fmt
    allowed = sorted(s for group in UPLOAD_EXTENSIONS.values() for s in group)
    raise ApiError(415, "unsupported_extension",
                   f"files ending in {suffix or '(nothing)'!r} are not accepted; "
                   f"upload one of: {', '.join(allowed)}", {"allowed": allowed})


def parse_input_shapes(raw: str | None) -> dict[str, list[int]] | None:
    if not raw:
        return None
    try:
        shapes = json.loads(raw)
    except ValueError:
        raise bad_request("bad_input_shapes", "input_shapes is not valid JSON") from None
    return check_input_shapes(shapes)


def check_input_shapes(shapes: Any) -> dict[str, list[int]]:
    """`{"name": [dims]}` with positive integer dims within the element limit."""
    if not isinstance(shapes, dict):
        raise bad_request("bad_input_shapes", 'input_shapes must be {"name": [dims]}')
    for name, dims in shapes.items():
        if not isinstance(dims, list) or not all(
                isinstance(d, int) and not isinstance(d, bool) and d > 0 for d in dims):
            raise bad_request("bad_input_shapes",
                              f"input_shapes[{name!r}] must be a list of positive integers")
        check_elements(name, dims)
    return shapes


def check_pinned(session: Session, shapes: dict[str, list[int]]) -> None:
    """Pinned shapes may only fix the dimensions the model leaves open: each names a
    symbolic input, has its rank, and keeps its fixed dimensions."""
    symbolic = symbolic_inputs(session)
    if not shapes:
        raise bad_request("bad_input_shapes", "input_shapes names no input to pin")
    for name, dims in shapes.items():
        if name not in symbolic:
            which = ", ".join(sorted(symbolic)) or "none"
            raise bad_request("bad_input_shapes", f"{name!r} is not an input with symbolic "
                              f"dimensions (those are: {which})", {"input": name})
        declared = symbolic[name]
        if len(dims) != len(declared):
            raise bad_request("bad_input_shapes", f"input {name!r} has rank {len(declared)} "
                              f"({_shape_text(declared)}); {dims} has rank {len(dims)}",
                              {"input": name})
        for axis, (want, got) in enumerate(zip(declared, dims)):
            if isinstance(want, int) and want != got:
                raise bad_request("bad_input_shapes", f"input {name!r} has dimension {axis} "
                                  f"fixed at {want} ({_shape_text(declared)}), not {got}",
                                  {"input": name, "axis": axis})


def _shape_text(dims: list[int | str]) -> str:
    return "(" + ", ".join(str(d) for d in dims) + ")"


def check_elements(name: str, dims: list[int]) -> None:
    total = 1
    for d in dims:
        total *= d
    if total > MAX_INPUT_ELEMENTS:
        raise ApiError(422, "tensor_too_large",
                       f"input {name!r} declares {total} elements (limit {MAX_INPUT_ELEMENTS})",
                       {"input": name, "shape": dims})
