"""The one place the explorer touches the engine's public API.

Each function is a thin adapter (TVM names): printing with a source map,
importing a model file, building the pipeline of a run, the pass context,
evaluating a module. Handlers and the recording instrument go through here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from engine.ir import IRModule
from engine.ir.expr import Call, Constant, Expr, Function, If, Let, Tuple, TupleGetItem
from engine.relay.analysis import post_order_visit
from explorer.protocol import ModelFormat, model_format

# TVM's RelayBuildModule::OptimizeImpl order, used when the engine has no
# `standard_pipeline`; names missing from the registry are skipped.
BUILD_ORDER: tuple[str, ...] = (
    "InferType", "RemoveUnusedFunctions", "ToBasicBlockNormalForm", "SimplifyInference",
    "EliminateCommonSubexpr", "SimplifyExpr", "FoldConstant", "FoldScaleAxis",
    "ForwardFoldScaleAxis", "BackwardFoldScaleAxis", "CanonicalizeCast", "CanonicalizeOps",
    "ConvertLayout", "AlterOpLayout", "FoldConstant", "FuseOps", "InferType",
)
_COVERED_KINDS = (Call, Tuple, TupleGetItem, Let, If, Constant)


@dataclasses.dataclass(slots=True)
class Imported:
    mod: IRModule
    params: dict[str, Any]
    format: ModelFormat
    graph: dict[str, Any]
    warnings: list[str]


def print_module(mod: IRModule) -> tuple[str, list[dict[str, Any]]]:
    """The module's Relay text (with types) and its source map as protocol dicts.

    Uses of a bound name (`%3` after its definition) are entries too, marked
    `"ref": true`, so clicking a use finds the node it names.
    """
    from engine.relay.printer import print_ir

    result = print_ir(mod, show_types=True)
    return result.text, [_entry_json(e) for e in result.source_map]


def _entry_json(entry: Any) -> dict[str, Any]:
    if hasattr(entry, "as_dict"):
        out = entry.as_dict()
        if getattr(entry, "is_ref", False):
            out["ref"] = True
        return out
    if not isinstance(entry, dict):
        entry = {k: getattr(entry, k) for k in ("node_id", "kind", "start", "end", "spans", "op")}
    return {"node_id": int(entry["node_id"]), "kind": str(entry.get("kind", "")),
            "start": list(entry["start"]), "end": list(entry["end"]),
            "spans": [str(s) for s in entry.get("spans") or ()],
            "op": entry.get("op")}


def span_coverage(mod: IRModule) -> tuple[float, int]:
    """(fraction of computing expressions carrying a span, number of such expressions).

    Function parameters, ops and global names are not counted: they are not
    produced by a frontend layer.
    """
    counts = [0, 0]

    def visit(node: Expr) -> None:
        if isinstance(node, _COVERED_KINDS):
            counts[0] += 1
            counts[1] += bool(node.span)

    for _, func in mod.items():
        post_order_visit(func, visit)
    total, spanned = counts
    return (spanned / total if total else 1.0), total


def load_model(path: Path, fmt: str, shapes: dict[str, list[int]] | None) -> Imported:
    """Import a stored model file: Relay text through the parser, the rest by frontend.

    Every failure is one of the engine's typed errors (CorruptModelError for a file
    that cannot be read or decoded, ParseError, the frontends' errors)."""
    if fmt == "relay":
        from engine.relay.parser import parse

        mod = parse(read_relay_text(path))
        return Imported(mod, {}, "relay", {"layers": [], "inputs": [], "outputs": []}, [])
    from engine.relay import frontend

    result = frontend.load(str(path), shape=shapes)
    return Imported(result.mod, dict(result.params or {}), model_format(str(result.format)),
                    graph_json(result.graph), list(result.warnings or []))


def read_relay_text(path: Path) -> str:
    """The file's text; CorruptModelError when it cannot be read or is not UTF-8."""
    from engine.relay.frontend import CorruptModelError

    try:
        data = path.read_bytes()
    except OSError as err:
        raise CorruptModelError(f"cannot read the file: {err.strerror}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise CorruptModelError(f"Relay text is not valid UTF-8 (byte {err.start}: "
                                f"{err.reason})") from None


def graph_json(graph: Any) -> dict[str, Any]:
    """A frontend graph as {layers, inputs, outputs}, whatever object the frontend returns."""
    if graph is None:
        return {"layers": [], "inputs": [], "outputs": []}
    if hasattr(graph, "to_json"):
        graph = graph.to_json()
    elif dataclasses.is_dataclass(graph) and not isinstance(graph, type):
        graph = dataclasses.asdict(graph)
    raw = dict(graph)
    return {"layers": [_layer_json(layer) for layer in raw.get("layers", [])],
            "inputs": _plain(raw.get("inputs", [])), "outputs": _plain(raw.get("outputs", []))}


def _layer_json(layer: Any) -> dict[str, Any]:
    if dataclasses.is_dataclass(layer) and not isinstance(layer, type):
        layer = dataclasses.asdict(layer)
    layer = dict(layer)
    return {"name": str(layer.get("name", "")), "op_type": str(layer.get("op_type", "")),
            "inputs": [str(x) for x in layer.get("inputs", [])],
            "outputs": [str(x) for x in layer.get("outputs", [])],
            "attrs": _plain(layer.get("attrs", {}))}


def _plain(value: Any) -> Any:
    """JSON-safe copy of attribute values (numpy scalars/arrays, bytes, tuples)."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if hasattr(value, "tolist"):
        return _plain(value.tolist())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _plain(dataclasses.asdict(value))
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)


def registered_passes() -> list[str]:
    from engine import transform

    return sorted(transform.list_passes())


def get_pass(name: str) -> Any:
    from engine import transform

    return transform.get_pass(name)


def build_pipeline(opt_level: int, passes: Sequence[str] | None) -> Any:
    """The Sequential a run executes: an explicit list, or the standard pipeline."""
    from engine import transform

    if passes is not None:
        return transform.Sequential([get_pass(n) for n in passes], opt_level=0,
                                    name="explicit")
    from engine.relay import transform as relay_transform

    standard = getattr(relay_transform, "standard_pipeline", None)
    if standard is not None:
        return standard(opt_level)
    known = set(transform.list_passes())
    return transform.Sequential([get_pass(n) for n in BUILD_ORDER if n in known],
                                opt_level=0, name="optimize")


def pass_context(opt_level: int, required: Iterable[str], disabled: Iterable[str],
                 instruments: list[Any]) -> Any:
    from engine import transform

    return transform.PassContext(opt_level=opt_level, required_pass=list(required),
                                 disabled_pass=list(disabled), instruments=instruments)


def evaluate(mod: IRModule, inputs: dict[str, Any]) -> Any:
    from engine.relay.interpreter import evaluate as run

    return run(mod, inputs)


def main_function(mod: IRModule) -> Function:
    return mod["main"]
