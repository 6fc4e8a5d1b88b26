"""The ATen converter table and what every converter shares.

`CONVERTERS` maps an op overload's name (`aten.conv2d.default`, `_operator.getitem`) to a
function of one `AtenCall`; the families register themselves in `nn_ops`, `elementwise`,
`reductions`, `tensors` and `indexing` (`aten_table` imports them all). `lookup` also finds
an in-place variant (`aten.silu_.default`) by its functional twin.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import engine.relay as relay
from engine.ir.expr import Expr
from engine.relay.frontend.common import ConversionError

Converter = Callable[["AtenCall"], Any]
CONVERTERS: dict[str, Converter] = {}

# Python operator names ATen spells with dunders: `x & y` is aten.__and__.Tensor
_DUNDER = {"__and__": "bitwise_and", "__or__": "bitwise_or", "__xor__": "bitwise_xor",
           "__lshift__": "bitwise_left_shift", "__rshift__": "bitwise_right_shift",
           "__iand__": "bitwise_and", "__ior__": "bitwise_or", "__ixor__": "bitwise_xor"}


def converter(*targets: str) -> Callable[[Converter], Converter]:
    def register(fn: Converter) -> Converter:
        for target in targets:
            CONVERTERS[target] = fn
        return fn
    return register


def functional_name(target: str) -> str:
    """`aten.add.Tensor` for `aten.add_.Tensor` and `aten.__iand__.Tensor`; others as given."""
    parts = target.split(".")
    if len(parts) != 3 or parts[0] != "aten":
        return target
    name = _DUNDER.get(parts[1], parts[1])
    if name.endswith("_") and not name.startswith("_"):
        name = name[:-1]
    return f"aten.{name}.{parts[2]}"


def is_inplace(target: str) -> bool:
    parts = target.split(".")
    return len(parts) == 3 and (parts[1].endswith("_") and not parts[1].startswith("_")
                                or parts[1].startswith("__i"))


def lookup(target: str) -> Converter | None:
    return CONVERTERS.get(target) or CONVERTERS.get(functional_name(target))


@dataclass(frozen=True, slots=True)
class TensorMeta:
    """Shape (a dim torch left symbolic is -1) and dtype (`float32`) of one fx value."""

    shape: tuple[int, ...]
    dtype: str

    @property
    def rank(self) -> int:
        return len(self.shape)


@dataclass
class AtenCall:
    """One fx node: converted args (Expr for tensors, Python values otherwise) and the
    metadata torch recorded for its operands (`metas`, by position or keyword) and outputs."""

    name: str
    target: str
    args: list[Any]
    kwargs: dict[str, Any]
    outs: list[TensorMeta | None] = field(default_factory=list)
    metas: dict[int | str, Any] = field(default_factory=dict)

    def arg(self, index: int, key: str, default: Any = None) -> Any:
        if index < len(self.args):
            return self.args[index]
        return self.kwargs.get(key, default)

    def meta(self, index: int, key: str = "") -> TensorMeta:
        found = self.metas.get(index) if index < len(self.args) else self.metas.get(key)
        if not isinstance(found, TensorMeta):
            raise self.fail(f"operand {key or index} is not a tensor of known shape")
        return found

    def shape(self, index: int, key: str = "") -> tuple[int, ...]:
        return self.meta(index, key).shape

    def dtype(self, index: int, key: str = "") -> str:
        return self.meta(index, key).dtype

    def list_metas(self, index: int) -> list[TensorMeta]:
        found = self.metas.get(index)
        if not isinstance(found, list) or not all(isinstance(m, TensorMeta) for m in found):
            raise self.fail(f"operand {index} is not a list of tensors of known shape")
        return found

    @property
    def out(self) -> TensorMeta:
        if not self.outs or self.outs[0] is None:
            raise self.fail("the output shape is unknown")
        return self.outs[0]

    @property
    def out_shape(self) -> tuple[int, ...]:
        return self.out.shape

    @property
    def out_dtype(self) -> str:
        return self.out.dtype

    def fail(self, message: str) -> ConversionError:
        return ConversionError(self.name, self.target, message)


# --- helpers the families share ------------------------------------------------------------
def ints(value: Any, n: int = 1) -> list[int]:
    """`[v] * n` for an int, else the ints of a list (a one-element list repeated n times)."""
    if isinstance(value, (int, np.integer)):
        return [int(value)] * n
    values = [int(v) for v in value]
    return values * n if len(values) == 1 and n > 1 else values


def axis_of(dim: Any, rank: int) -> int:
    return int(dim) % rank if rank else 0


def dims_of(value: Any, rank: int) -> list[int] | None:
    """Normalized dims of a `dim` argument (int, list, or None/[] for all)."""
    if value is None:
        return None
    dims = [value] if isinstance(value, (int, np.integer)) else list(value)
    return None if not dims else [axis_of(d, rank) for d in dims]


def const(value: Any, dtype: str) -> Expr:
    return relay.const(np.array(value, dtype=np.dtype(_numpy_dtype(dtype))), dtype)


def _numpy_dtype(dtype: str) -> str:
    return "float32" if dtype == "bfloat16" else dtype


def cast(expr: Expr, have: str, want: str) -> Expr:
    return expr if have == want else relay.cast(expr, want)


def _kind(dtype: str) -> int:
    """0 bool, 1 integer, 2 floating: the categories torch promotes across."""
    if dtype == "bool":
        return 0
    return 2 if dtype.startswith(("float", "bfloat", "complex")) else 1


def _scalar_kind(value: Any) -> int:
    if isinstance(value, bool):
        return 0
    return 1 if isinstance(value, (int, np.integer)) else 2


def promoted(call: AtenCall, indices: Sequence[int]) -> str:
    """torch's result dtype of the operands at `indices` (tensors or Python scalars): the
    highest category wins; within it, dimensioned tensors before zero-dim ones before
    scalars (int64 / float32 for scalars alone)."""
    tiers: list[tuple[int, int, str]] = []
    for i in indices:
        meta = call.metas.get(i)
        if isinstance(meta, TensorMeta):
            tiers.append((_kind(meta.dtype), 2 if meta.rank else 1, meta.dtype))
        elif call.arg(i, "") is not None:
            kind = _scalar_kind(call.arg(i, ""))
            tiers.append((kind, 0, ("bool", "int64", "float32")[kind]))
    if not tiers:
        return "float32"
    kind = max(t[0] for t in tiers)
    best = max(t[1] for t in tiers if t[0] == kind)
    dtypes = [t[2] for t in tiers if t[0] == kind and t[1] == best]
    out = dtypes[0]
    for dtype in dtypes[1:]:
        out = str(np.promote_types(_numpy_dtype(out), _numpy_dtype(dtype)))
    return out


def operand(call: AtenCall, index: int, dtype: str, key: str = "") -> Expr:
    """Operand `index` (tensor or Python scalar) as an Expr of `dtype`."""
    value = call.arg(index, key)
    if isinstance(value, Expr):
        meta = call.metas.get(index if index < len(call.args) else key)
        have = meta.dtype if isinstance(meta, TensorMeta) else dtype
        return cast(value, have, dtype)
    if value is None:
        raise call.fail(f"operand {key or index} is missing")
    return const(value, dtype)


def tensor(call: AtenCall, index: int, key: str = "") -> Expr:
    value = call.arg(index, key)
    if not isinstance(value, Expr):
        raise call.fail(f"operand {key or index} must be a tensor")
    return value
