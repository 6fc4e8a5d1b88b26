"""TIR statements, buffers and PrimFunc: what `tvm.lower` produces.

Every statement carries an `Origin` (the schedule stage and iter var it was
made from, and its role: loop, init, update, store, guard, allocate) and the
span of the fused function the stage implements, so the explorer can link a
line of the loop nest to the schedule and on to the frontend layers.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

from engine.ir.span import UNKNOWN_SPAN, SpanLike
from engine.tir.expr import BufferLoad, PrimExpr, Var, convert
from engine.tir.text import printer


@dataclass(frozen=True, eq=False, slots=True, repr=False)
class Buffer:
    """A multi-dimensional buffer (`shape` in elements, row-major)."""

    name: str
    shape: tuple[PrimExpr, ...]
    dtype: str = "float32"
    scope: str = "global"

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __repr__(self) -> str:
        return f"Buffer({self.name})"

    def vload(self, indices: tuple[PrimExpr, ...]) -> PrimExpr:
        return BufferLoad(buffer=self, indices=tuple(indices))


def decl_buffer(shape: Any, dtype: str = "float32", name: str = "buffer",
                scope: str = "global") -> Buffer:
    dims = shape if isinstance(shape, (list, tuple)) else (shape,)
    return Buffer(name, tuple(convert(d) for d in dims), dtype, scope)


@dataclass(frozen=True, slots=True)
class Origin:
    """Where a statement came from: stage (by index and name), iter var, role."""

    stage: str = ""
    iter_var: str = ""
    role: str = ""
    stage_index: int = -1

    def as_dict(self) -> dict[str, Any]:
        return {"stage": self.stage, "stage_index": self.stage_index,
                "iter_var": self.iter_var, "role": self.role}


NO_ORIGIN = Origin()


class ForKind(enum.Enum):
    SERIAL = "serial"
    PARALLEL = "parallel"
    VECTORIZED = "vectorized"
    UNROLLED = "unrolled"
    THREAD_BINDING = "thread_binding"


@dataclass(frozen=True, eq=False, slots=True, repr=False)
class Stmt:
    """Base of every statement."""

    origin: Origin = field(default=NO_ORIGIN, kw_only=True)
    span: SpanLike = field(default=UNKNOWN_SPAN, kw_only=True)

    def __str__(self) -> str:
        return printer().stmt_text(self)

    def __repr__(self) -> str:
        return f"{type(self).__name__}<{self.origin.stage}:{self.origin.iter_var}>"


@dataclass(frozen=True, eq=False, slots=True, repr=False)
class For(Stmt):
    loop_var: Var
    min: PrimExpr
    extent: PrimExpr
    kind: ForKind
    body: Stmt
    thread_tag: str = ""
    annotations: tuple[tuple[str, Any], ...] = ()


@dataclass(frozen=True, eq=False, slots=True, repr=False)
class BufferStore(Stmt):
    buffer: Buffer
    value: PrimExpr
    indices: tuple[PrimExpr, ...]


@dataclass(frozen=True, eq=False, slots=True, repr=False)
class Allocate(Stmt):
    buffer: Buffer
    body: Stmt


@dataclass(frozen=True, eq=False, slots=True, repr=False)
class IfThenElse(Stmt):
    condition: PrimExpr
    then_case: Stmt
    else_case: Stmt | None = None


@dataclass(frozen=True, eq=False, slots=True, repr=False)
class LetStmt(Stmt):
    var: Var
    value: PrimExpr
    body: Stmt


@dataclass(frozen=True, eq=False, slots=True, repr=False)
class Evaluate(Stmt):
    value: PrimExpr


@dataclass(frozen=True, eq=False, slots=True, repr=False)
class SeqStmt(Stmt):
    seq: tuple[Stmt, ...]


def seq(stmts: list[Stmt], **kw: Any) -> Stmt:
    """One statement for a list: the statement itself, or a flattened SeqStmt."""
    flat: list[Stmt] = []
    for s in stmts:
        flat.extend(s.seq if isinstance(s, SeqStmt) else (s,))
    if len(flat) == 1:
        return flat[0]
    return SeqStmt(tuple(flat), **kw)


@dataclass(frozen=True, eq=False, slots=True, repr=False)
class PrimFunc:
    """A lowered function: parameter buffers (inputs then outputs) and a body."""

    params: tuple[Buffer, ...]
    body: Stmt
    name: str = "main"
    attrs: tuple[tuple[str, Any], ...] = ()
    span: SpanLike = field(default=UNKNOWN_SPAN, kw_only=True)

    def script(self) -> str:
        return printer().func_text(self)

    astext = script

    def __str__(self) -> str:
        return self.script()

    def __repr__(self) -> str:
        return f"PrimFunc({self.name})"

    def lines(self) -> list[Any]:
        """The printed text as lines, each with the Origin of the statement it shows."""
        return printer().func_lines(self)


class PrimFuncModule:
    """What `tvm.lower` returns: PrimFuncs by name (an IRModule of TIR functions)."""

    __slots__ = ("_functions",)

    def __init__(self, functions: dict[str, PrimFunc]) -> None:
        self._functions = dict(functions)

    def __getitem__(self, name: str) -> PrimFunc:
        try:
            return self._functions[name]
        except KeyError:
            raise KeyError(f"no function {name!r} in the module "
                           f"(it has: {', '.join(self._functions)})") from None

    def __contains__(self, name: object) -> bool:
        return name in self._functions

    def __iter__(self) -> Any:
        return iter(self._functions)

    def __len__(self) -> int:
        return len(self._functions)

    @property
    def functions(self) -> dict[str, PrimFunc]:
        return dict(self._functions)

    def script(self) -> str:
        return "\n\n".join(f.script() for f in self._functions.values())

    astext = script

    def __str__(self) -> str:
        return self.script()

    def __repr__(self) -> str:
        return f"PrimFuncModule({', '.join(self._functions)})"
