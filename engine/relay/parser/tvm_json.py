"""TVM's metadata section: the `#[metadata]` JSON its printer writes after the module.

`astext(show_meta_data=True)` in TVM ends the text with `SaveJSON` of a
`Map<String, Array<ObjectRef>>`: a node graph (`root`, `nodes`) whose
`relay.Constant` nodes point (attr `data`) into `b64ndarrays`, base64 blobs in
TVM's NDArray save format:

    u64 magic 0xDD5E40F096B4A13F, u64 reserved, i32 device_type, i32 device_id,
    i32 ndim, u8 type code, u8 bits, u16 lanes, i64 shape[ndim], i64 nbytes, data

    tables = meta_tables(json.loads(section))   # {"relay.Constant": [ndarray, ...]}
    text = meta_section(tables)                 # the JSON TVM would write
"""

from __future__ import annotations

import base64
import json
import struct
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

MAGIC = 0xDD5E40F096B4A13F
_CODES = {0: "int", 1: "uint", 2: "float"}  # DLDataTypeCode (bfloat16 has none in numpy)


class MetaFormatError(ValueError):
    """The metadata JSON is not a TVM node graph this reader understands."""


def is_node_graph(value: Any) -> bool:
    return isinstance(value, Mapping) and "root" in value and "nodes" in value


def load_ndarray(blob: bytes) -> np.ndarray:
    """An array from TVM's NDArray save format."""
    try:
        magic, _, _, _, ndim, code, bits, lanes = struct.unpack_from("<QQiiiBBH", blob, 0)
    except struct.error:
        raise MetaFormatError("truncated NDArray header") from None
    if magic != MAGIC:
        raise MetaFormatError(f"not a TVM NDArray (magic {magic:#x})")
    if lanes != 1 or code not in _CODES:
        raise MetaFormatError(f"unsupported NDArray dtype (code {code}, bits {bits}, "
                              f"lanes {lanes})")
    dtype = np.dtype("bool") if (code, bits) == (1, 1) else np.dtype(f"{_CODES[code]}{bits}")
    offset = struct.calcsize("<QQiiiBBH")
    shape = struct.unpack_from(f"<{ndim}q", blob, offset)
    offset += 8 * ndim
    (nbytes,) = struct.unpack_from("<q", blob, offset)
    data = blob[offset + 8: offset + 8 + nbytes]
    if len(data) != nbytes or nbytes != dtype.itemsize * int(np.prod(shape, dtype=np.int64)):
        raise MetaFormatError(f"NDArray data of {len(data)} bytes for shape {list(shape)} "
                              f"{dtype}")
    return np.frombuffer(data, dtype.newbyteorder("<")).astype(dtype).reshape(shape)


def save_ndarray(array: np.ndarray) -> bytes:
    """`array` in TVM's NDArray save format."""
    array = np.asarray(array)
    kind = {"i": 0, "u": 1, "f": 2, "b": 1}.get(array.dtype.kind)
    if kind is None:
        raise MetaFormatError(f"no TVM dtype for {array.dtype}")
    bits = 1 if array.dtype.kind == "b" else array.dtype.itemsize * 8
    head = struct.pack("<QQiiiBBH", MAGIC, 0, 1, 0, array.ndim, kind, bits, 1)
    data = array.astype(array.dtype.newbyteorder("<")).tobytes()
    return head + struct.pack(f"<{array.ndim}q", *array.shape) + struct.pack("<q", len(data)) + data


def meta_tables(graph: Mapping[str, Any]) -> dict[str, list[np.ndarray]]:
    """The constants of each kind in a TVM metadata node graph."""
    nodes = graph["nodes"]
    blobs = [base64.b64decode(b) for b in graph.get("b64ndarrays", ())]
    root = nodes[int(graph["root"])]
    if root.get("type_key") != "Map" or "keys" not in root:
        raise MetaFormatError("the metadata root is not a Map with string keys")
    tables: dict[str, list[np.ndarray]] = {}
    for kind, index in zip(root["keys"], root.get("data", ())):
        items = nodes[int(index)].get("data", ())
        tables[kind] = [_constant(nodes[int(i)], blobs, kind) for i in items]
    return tables


def _constant(node: Mapping[str, Any], blobs: Sequence[bytes], kind: str) -> Any:
    if node.get("type_key") != "relay.Constant":
        return None  # a kind the parser does not read (meta[tir.Var] ...): never a Constant
    index = int(node.get("attrs", {}).get("data", -1))
    if not 0 <= index < len(blobs):
        raise MetaFormatError(f"{kind} node points at NDArray {index}, of {len(blobs)}")
    return load_ndarray(blobs[index])


def meta_section(tables: Mapping[str, Sequence[np.ndarray]], tvm_version: str = "0.19.0"
                 ) -> str:
    """The JSON TVM's printer writes after `#[metadata]` for these constants."""
    keys: list[str] = []
    roots: list[int] = []
    nodes: list[dict[str, Any]] = [{"type_key": ""},
                                   {"type_key": "Map", "keys": keys, "data": roots}]
    blobs: list[str] = []
    for kind, arrays in tables.items():
        items: list[int] = []
        keys.append(kind)
        roots.append(len(nodes))
        nodes.append({"type_key": "Array", "data": items})
        for array in arrays:
            items.append(len(nodes))
            nodes.append({"type_key": "relay.Constant", "attrs": {
                "_checked_type_": "0", "data": str(len(blobs)), "span": "0",
                "virtual_device_": "0"}})
            blobs.append(base64.b64encode(save_ndarray(np.asarray(array))).decode("ascii"))
    graph = {"root": 1, "nodes": nodes, "b64ndarrays": blobs,
             "attrs": {"tvm_version": tvm_version}}
    return json.dumps(graph, indent=2)


__all__ = ["MetaFormatError", "is_node_graph", "load_ndarray", "meta_section", "meta_tables",
           "save_ndarray"]
