"""FInferCorrectLayout: which layouts an op wants for its inputs and gives its outputs (TVM's
`FInferCorrectLayout`), used by ConvertLayout and AlterOpLayout.

`fn(call, new_in, old_in, types) -> InferredLayouts | None`:

- `call`: the call (its attrs are the op's current attrs);
- `new_in`: the layouts the inputs now have, or None on the first query (the
  call as it was); `old_in`: the inputs' original layouts (None: unknown);
- `types`: the original input types (tuple arguments flattened).

It returns the layout each input must have, the output layouts and the attrs
the call must take (pooling follows its input's layout, concatenate and the
reductions move their axis), or None when the op cannot follow. Layouts are
strings such as "NCHW", "NHWC", "NCHW8c", "CHW"; "" is a scalar's.

Registered here onto the existing ops: elementwise (any layout), broadcast
binaries (with lower-rank operands), conv2d / conv2d_transpose, pooling,
concatenate, reductions and layout_transform.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from engine.ir.attrs import Attrs
from engine.ir.expr import Call
from engine.ir.op import Op, get_op_attr_map, list_ops, register_op_attr
from engine.ir.type import TensorType, Type
from engine.relay.op.layout import parse_layout
from engine.relay.op.op import BROADCAST, ELEMWISE

Layouts = Sequence["str | None"]


@dataclass(frozen=True, slots=True)
class InferredLayouts:
    """TVM's InferCorrectLayoutOutput: input layouts, output layouts, new attrs."""

    inputs: tuple[str | None, ...]
    outputs: tuple[str | None, ...]
    attrs: Attrs


InferFn = Callable[[Call, "Layouts | None", Layouts, Sequence[Type]], "InferredLayouts | None"]


# --- layout strings -----------------------------------------------------------------------

def primal(layout: str) -> str:
    """The primal (upper-case) axes in order: "NCHW8c" -> "NCHW"."""
    return "".join(a for a, _ in parse_layout(layout) if a.isupper())


def is_plain(layout: str | None) -> bool:
    return layout is not None and all(a.isupper() for a, _ in parse_layout(layout))


def expand_primal(src: str, dst: str) -> str:
    """`src` with the primal axes of `dst` it lacks put in front (TVM's ExpandPrimal)."""
    missing = "".join(a for a in primal(dst) if a not in src)
    return missing + src


def ndim_of(ty: Type) -> int:
    return ty.ndim if isinstance(ty, TensorType) else 0


def _result(inputs: Sequence[str | None], outputs: Sequence[str | None], attrs: Attrs
            ) -> InferredLayouts | None:
    if any(layout is None for layout in inputs):
        return None  # an input layout nobody knows: the op cannot take part (as TVM)
    return InferredLayouts(tuple(inputs), tuple(outputs), attrs)


def _current(new_in: Layouts | None, old_in: Layouts) -> list[str | None]:
    return list(new_in) if new_in is not None else list(old_in)


# --- elementwise and broadcast ------------------------------------------------------------

def elemwise_layout(call: Call, new_in: Layouts | None, old_in: Layouts,
                    types: Sequence[Type]) -> InferredLayouts | None:
    """Any layout: the first known input layout, for every input and the output (inputs
    of one rank only)."""
    known = [x for x in _current(new_in, old_in) if x is not None]
    if not known or len({ndim_of(t) for t in types}) > 1:
        return None
    layout = known[0]
    return _result([layout] * len(old_in), [layout], call.attrs)


def broadcast_layout(call: Call, new_in: Layouts | None, old_in: Layouts,
                     types: Sequence[Type]) -> InferredLayouts | None:
    """Binary broadcast: a lower-rank operand gets the trailing sub-layout (TVM's
    BinaryBroadcastLayout for unblocked layouts)."""
    if len(old_in) != 2:
        return elemwise_layout(call, new_in, old_in, types)
    layouts = _current(new_in, old_in)
    ranks = [ndim_of(t) for t in types]
    if layouts[0] is None and layouts[1] is None:
        return None
    if layouts[0] is None or layouts[1] is None:
        known = 0 if layouts[0] is not None else 1
        other = 1 - known
        layout = layouts[known]
        assert layout is not None
        if ranks[known] < ranks[other]:
            return None
        sub = primal(layout)[len(primal(layout)) - ranks[other]:] if ranks[other] else ""
        if not is_plain(layout) and not _blocks_fit(layout, sub, old_in[known], types, known):
            return None
        layouts[other] = sub
        return _result(layouts, [layout], call.attrs)
    big = 0 if len(primal(layouts[0])) >= len(primal(layouts[1])) else 1
    layout, small = layouts[big], layouts[1 - big]
    assert layout is not None and small is not None
    if not small or (is_plain(layout) and small == layout[len(layout) - len(small):]):
        return _result(layouts, [layout], call.attrs)  # already broadcasts as it is
    return _result([layout, layout], [layout], call.attrs)


def _blocks_fit(layout: str, sub: str, old: str | None, types: Sequence[Type], known: int
                ) -> bool:
    """A lower-rank operand can follow a blocked layout when it spans every blocked axis
    fully (a per-channel bias under NCHW8c), so that the axis splits the same way."""
    small, big = types[1 - known], types[known]
    if old is None or not is_plain(old) or not isinstance(small, TensorType) \
            or not isinstance(big, TensorType):
        return False
    for letter in {a.upper() for a, _ in parse_layout(layout) if a.islower()}:
        if letter not in sub or letter not in old:
            return False
        if small.shape[sub.index(letter)] != big.shape[old.index(letter)]:
            return False
    return True


# --- ops whose attrs name their layout ----------------------------------------------------

def conv_layout(call: Call, new_in: Layouts | None, old_in: Layouts,
                types: Sequence[Type]) -> InferredLayouts | None:
    attrs = call.attrs
    data, kernel = str(attrs.data_layout), str(attrs.kernel_layout)
    return _result([data, kernel], [str(attrs.get("out_layout") or data)], attrs)


def pool_layout(call: Call, new_in: Layouts | None, old_in: Layouts,
                types: Sequence[Type]) -> InferredLayouts | None:
    """Pooling follows its input's layout when it is a permutation of the original."""
    attrs = call.attrs
    layout = str(attrs.layout)
    if new_in is not None and new_in[0] is not None and new_in[0] != layout:
        if not is_plain(new_in[0]) or sorted(new_in[0]) != sorted(layout):
            return None  # the numpy kernels take permutations of NCHW, not blocked layouts
        layout = new_in[0]
        attrs = attrs.replace(layout=layout, out_layout="")
    return _result([layout], [str(attrs.get("out_layout") or layout)], attrs)


def concatenate_layout(call: Call, new_in: Layouts | None, old_in: Layouts,
                       types: Sequence[Type]) -> InferredLayouts | None:
    attrs = call.attrs
    axis = int(attrs.axis)
    old = next((x for x in old_in if x is not None), None)
    if new_in is not None and all(x is not None and x == new_in[0] for x in new_in) \
            and old is not None and is_plain(new_in[0]) and is_plain(old):
        new = str(new_in[0])
        letter = old[axis % len(old)]
        if letter in new:
            return _result([new] * len(old_in), [new], attrs.replace(axis=new.index(letter)))
    if old is None or not is_plain(old) or axis % max(len(old), 1) >= len(old):
        return None
    return _result([old] * len(old_in), [old], attrs)


def reduce_layout(call: Call, new_in: Layouts | None, old_in: Layouts,
                  types: Sequence[Type]) -> InferredLayouts | None:
    """Reductions over plain layouts: the reduced axes follow their letters."""
    attrs = call.attrs
    old = old_in[0]
    layout = _current(new_in, old_in)[0]
    if old is None or layout is None or not is_plain(old) or not is_plain(layout) \
            or bool(attrs.get("exclude", False)):
        return None
    ndim = len(old)
    axis = attrs.get("axis")
    axes = range(ndim) if axis is None else [int(a) % ndim for a in axis]
    letters = {old[a] for a in axes}
    new_attrs = attrs if axis is None else attrs.replace(
        axis=tuple(sorted(layout.index(ch) for ch in letters)))
    out = layout if attrs.get("keepdims", False) else "".join(
        ch for ch in layout if ch not in letters)
    return _result([layout], [out], new_attrs)


def layout_transform_layout(call: Call, new_in: Layouts | None, old_in: Layouts,
                            types: Sequence[Type]) -> InferredLayouts | None:
    attrs = call.attrs
    return _result([str(attrs.src_layout)], [str(attrs.dst_layout)], attrs)


# --- registration -------------------------------------------------------------------------

BY_NAME: dict[str, InferFn] = {
    "nn.conv2d": conv_layout,
    "nn.conv2d_transpose": conv_layout,
    "nn.max_pool2d": pool_layout,
    "nn.avg_pool2d": pool_layout,
    "nn.global_avg_pool2d": pool_layout,
    "nn.global_max_pool2d": pool_layout,
    "concatenate": concatenate_layout,
    "layout_transform": layout_transform_layout,
    **{name: reduce_layout for name in ("sum", "mean", "max", "min", "prod")},
}

BY_PATTERN: dict[int, InferFn] = {ELEMWISE: elemwise_layout, BROADCAST: broadcast_layout}

NOT_LAYOUT_FREE = frozenset({"ones", "zeros", "full", "broadcast_to", "cast_like",
                             "full_like", "zeros_like", "ones_like"})
"""Elementwise/broadcast ops whose meaning depends on a shape attribute or a second input
that does not follow the layout: they do not take part."""


def register_layout_inference() -> None:
    """Set FInferCorrectLayout on every op that has a rule (keeps an op's own, if any)."""
    existing = get_op_attr_map("FInferCorrectLayout")
    patterns = get_op_attr_map("TOpPattern")
    for name in list_ops():
        if name in existing or name in NOT_LAYOUT_FREE:
            continue
        fn = BY_NAME.get(name) or BY_PATTERN.get(patterns.get(name, -1))
        if fn is not None and Op.get(name).num_inputs != 0:
            register_op_attr(name, "FInferCorrectLayout", fn, level=5)


def infer_correct_layout(call: Call, new_in: Layouts | None, old_in: Layouts,
                         types: Sequence[Type]) -> InferredLayouts | None:
    """The op's FInferCorrectLayout result, or None (no rule, or it cannot follow)."""
    if not isinstance(call.op, Op):
        return None
    fn: Any = call.op.get_attr("FInferCorrectLayout")
    return None if fn is None else fn(call, new_in, old_in, types)


register_layout_inference()

__all__ = ["InferredLayouts", "broadcast_layout", "concatenate_layout", "conv_layout",
           "elemwise_layout", "expand_primal", "infer_correct_layout", "is_plain", "pool_layout",
           "primal", "reduce_layout", "register_layout_inference"]
