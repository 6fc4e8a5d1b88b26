"""Operators: `Op.get("nn.conv2d")` and the registry of their attributes.

An operator is an expression (the callee of a Call) with a registered name.
Its behaviour lives in attributes keyed by name, as in TVM: `FTVMTypeRelation`
(the type relation), `TOpPattern` (fusion pattern), `TOpIsStateful`,
`FNumpyCompute` (the reference implementation), `FTVMStrategy` (TE compute +
schedule) and so on. The registry holds static definitions, not session state.
"""

from __future__ import annotations

import difflib
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from engine.ir.errors import EngineError
from engine.ir.expr import Expr, register_children, register_op_lookup


class OpNotFoundError(EngineError, KeyError):
    def __str__(self) -> str:
        return str(self.args[0])


@dataclass(frozen=True, eq=False, slots=True, repr=False)
class Op(Expr):
    name: str
    kind: ClassVar[str] = "op"

    @staticmethod
    def get(name: str) -> Op:
        op = _OPS.get(name)
        if op is None:
            close = difflib.get_close_matches(name, list(_OPS), n=3)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            raise OpNotFoundError(f"operator {name!r} is not registered{hint}")
        return op

    def get_attr(self, attr_name: str) -> Any:
        return _ATTRS.get(attr_name, {}).get(self.name)

    def has_attr(self, attr_name: str) -> bool:
        return self.name in _ATTRS.get(attr_name, {})

    def set_attr(self, attr_name: str, value: Any, plevel: int = 10) -> None:
        register_op_attr(self.name, attr_name, value, plevel)

    @property
    def info(self) -> OpInfo:
        return _INFO[self.name]

    @property
    def num_inputs(self) -> int:
        return _INFO[self.name].num_inputs

    @property
    def arguments(self) -> tuple[str, ...]:
        return _INFO[self.name].arg_names

    def __repr__(self) -> str:
        return f"Op({self.name})"


@dataclass
class OpInfo:
    name: str
    num_inputs: int = -1
    arg_names: tuple[str, ...] = ()
    description: str = ""
    support_level: int = 10
    attrs_type_key: str = "DictAttrs"
    extra: dict[str, Any] = field(default_factory=dict)


_OPS: dict[str, Op] = {}
_INFO: dict[str, OpInfo] = {}
_ATTRS: dict[str, dict[str, Any]] = {}
_LEVELS: dict[tuple[str, str], int] = {}
_LOCK = threading.Lock()


def register_op(name: str, *, num_inputs: int = -1, arg_names: tuple[str, ...] = (),
                description: str = "", support_level: int = 10,
                attrs_type_key: str = "DictAttrs", override: bool = False) -> Op:
    """Register an operator by name.

    Registering a name that exists returns the existing op untouched (so a test can make
    sure an op exists without clobbering the real definition); `override=True` replaces
    its info.
    """
    with _LOCK:
        op = _OPS.get(name)
        if op is not None and not override:
            return op
        if op is None:
            op = Op(name)
            _OPS[name] = op
        _INFO[name] = OpInfo(name, num_inputs, tuple(arg_names), description, support_level,
                             attrs_type_key)
        return op


def register_op_attr(op_name: str, attr_key: str, value: Any = None,
                     level: int = 10) -> Any:
    """Set `attr_key` of op `op_name`; a higher `level` overrides a lower one.

    Usable as a decorator when `value` is None: `@register_op_attr("add", "FNumpyCompute")`.
    """
    def _set(v: Any) -> Any:
        with _LOCK:
            if op_name not in _OPS:
                raise OpNotFoundError(f"cannot set {attr_key!r}: operator {op_name!r} is not registered")
            old = _LEVELS.get((op_name, attr_key))
            if old is not None and old > level:
                return v
            _ATTRS.setdefault(attr_key, {})[op_name] = v
            _LEVELS[(op_name, attr_key)] = level
        return v

    if value is None:
        return _set
    return _set(value)


def list_ops() -> list[str]:
    return sorted(_OPS)


def get_op_attr_map(attr_key: str) -> dict[str, Any]:
    return dict(_ATTRS.get(attr_key, {}))


OpAttrFn = Callable[..., Any]


register_children(Op, lambda e: ())
register_op_lookup(Op.get)
