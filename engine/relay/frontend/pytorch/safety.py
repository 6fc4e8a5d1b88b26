"""Loading an uploaded `.pt2` archive without executing anything it contains.

`torch.export.load` is not safe on untrusted files: it unpickles weights saved
with `use_pickle` (`torch.load(..., weights_only=False)`), custom and opaque
constants (`pickle.loads`), and the sample inputs (falling back to
`weights_only=False`). So we never call it. Instead:

1. the archive is checked first: every member is a known part of the format;
   weights and constants must be stored as raw bytes (no `use_pickle`, no custom
   or opaque objects, no legacy `.pt` weight files); each op target in the
   graph JSON must be an ATen op or `_operator.getitem`;
2. the graph JSON, raw weights and raw constants are handed to torch's
   deserializer directly, *without* the sample inputs (the one pickle a
   well-formed archive holds, which is never read). Input and output pytree
   specs naming a class torch does not know by itself (a Hugging Face
   `ModelOutput`, a user dataclass) are rewritten first into the dict (keys
   kept) or tuple they flatten like, so no class is looked up or imported.
Archives that fail a check are rejected with UnsafeModelError.
"""

from __future__ import annotations

import io
import json
import zipfile
from typing import Any

from engine.relay.frontend.common import CorruptModelError, UnsafeModelError

_ALLOWED_TARGET_PREFIXES = ("torch.ops.aten.", "_operator.getitem")
# pytree node types torch's deserializer rebuilds from the spec alone
_BUILTIN_SPEC_TYPES = frozenset({"builtins.tuple", "builtins.list", "builtins.dict",
                                 "collections.OrderedDict", "collections.namedtuple"})
_MAX_MEMBERS = 100_000


def _json(archive: zipfile.ZipFile, name: str) -> Any:
    try:
        return json.loads(archive.read(name).decode("utf-8"))
    except (KeyError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise CorruptModelError(f"the .pt2 member {name!r} is missing or not JSON: {err}") from None


def _check_payload_config(config: dict[str, Any], what: str) -> None:
    for fqn, meta in (config.get("config") or {}).items():
        path = str(meta.get("path_name", ""))
        if meta.get("use_pickle"):
            raise UnsafeModelError(f"{what} {fqn!r} is pickled; pickled tensors are refused")
        if what == "constant" and not path.startswith("tensor_"):
            raise UnsafeModelError(f"constant {fqn!r} is a serialized object ({path}); refused")


def _targets(node_json: Any) -> list[str]:
    """Every op target named in the serialized graph (nested graphs included)."""
    found: list[str] = []
    stack = [node_json]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if isinstance(item.get("target"), str) and "inputs" in item:
                found.append(item["target"])
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return found


def check_archive(archive: zipfile.ZipFile) -> tuple[str, str]:
    """(archive prefix, model name) of a safe single-model archive; raises otherwise."""
    names = archive.namelist()
    if len(names) > _MAX_MEMBERS:
        raise UnsafeModelError("the archive holds too many members")
    models = [n for n in names if "/models/" in n and n.endswith(".json")]
    if not models:
        raise CorruptModelError("not a torch.export archive: no models/<name>.json inside")
    if len(models) != 1:
        raise CorruptModelError(f"the archive holds {len(models)} programs; one is supported")
    prefix, model_file = models[0].split("/models/", 1)
    model = model_file[: -len(".json")]
    if any(n.endswith(".pt") and "/data/weights/" in n or "/data/constants/" in n and
           n.endswith(".pt") for n in names):
        raise UnsafeModelError("the archive stores weights in the legacy pickled format")
    if any("/aotinductor/" in n or n.endswith((".so", ".py")) for n in names):
        raise UnsafeModelError("the archive holds compiled or Python code; refused")
    _check_payload_config(_json(archive, f"{prefix}/data/weights/{model}_weights_config.json"),
                          "weight")
    constants_config = f"{prefix}/data/constants/{model}_constants_config.json"
    if constants_config in names:
        _check_payload_config(_json(archive, constants_config), "constant")
    bad = sorted({t for t in _targets(_json(archive, models[0]))
                  if not t.startswith(_ALLOWED_TARGET_PREFIXES)})
    if bad:
        raise UnsafeModelError(f"the program calls non-ATen targets {bad[:5]}; refused")
    return prefix, model


def load_exported_program(data: bytes) -> Any:
    """A torch.export ExportedProgram from `.pt2` bytes, after `check_archive`."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, ValueError) as err:
        raise CorruptModelError(f"not a valid .pt2 (zip) archive: {err}") from None
    with archive:
        prefix, model = check_archive(archive)
    return _deserialize(data, prefix, model)


def _deserialize(data: bytes, prefix: str, model: str) -> Any:
    from torch._export.serde.schema import ExportedProgram as SchemaProgram
    from torch._export.serde.serialize import ExportedProgramDeserializer, _bytes_to_dataclass
    from torch.export.pt2_archive._package import (
        PT2ArchiveReader,
        _load_constants,
        _load_state_dict,
    )

    try:
        with PT2ArchiveReader(io.BytesIO(data)) as reader:
            program = _bytes_to_dataclass(SchemaProgram, reader.read_bytes(f"models/{model}.json"))
            state_dict = _load_state_dict(reader, model)
            constants = _load_constants(reader, model) if any(
                n.startswith("data/constants/") for n in reader.get_file_names()) else {}
    except (RuntimeError, KeyError, ValueError, AssertionError) as err:
        raise CorruptModelError(f"cannot read the .pt2 archive: {err}") from None
    if isinstance(state_dict, bytes) or isinstance(constants, bytes):
        raise UnsafeModelError("the archive stores weights in the legacy pickled format")
    for entry in program.graph_module.module_call_graph:
        if entry.signature is not None:
            entry.signature.in_spec = builtin_treespec(entry.signature.in_spec)
            entry.signature.out_spec = builtin_treespec(entry.signature.out_spec)
    try:
        return ExportedProgramDeserializer().deserialize(program, state_dict, constants, None)
    except (RuntimeError, KeyError, ValueError, AssertionError, TypeError,
            NotImplementedError) as err:
        raise CorruptModelError(f"cannot rebuild the exported program: {err}") from None


def builtin_treespec(serialized: str) -> str:
    """A serialized pytree spec with every node of a class outside torch's builtins (a
    `ModelOutput`, a dataclass) replaced by the dict it flattens like when its context is
    its list of keys, else by a tuple: the leaves and their order stay as they were."""
    try:
        protocol, root = json.loads(serialized)
    except (TypeError, ValueError) as err:
        raise CorruptModelError(f"a pytree spec in the archive is not JSON: {err}") from None
    stack = [root]
    while stack:
        node = stack.pop()
        if not isinstance(node, dict):
            raise CorruptModelError("a pytree spec in the archive is malformed")
        children = node.get("children_spec") or []
        stack.extend(children)
        if node.get("type") is None or node["type"] in _BUILTIN_SPEC_TYPES:
            continue
        keys = _context_keys(node.get("context"))
        dict_like = keys is not None and len(keys) == len(children)
        node["type"] = "builtins.dict" if dict_like else "builtins.tuple"
        node["context"] = json.dumps(keys) if dict_like else "null"
    return json.dumps([protocol, root])


def _context_keys(context: Any) -> list[Any] | None:
    try:
        keys = json.loads(context) if isinstance(context, str) else None
    except ValueError:
        return None
    if isinstance(keys, list) and all(isinstance(k, (str, int)) for k in keys):
        return keys
    return None
