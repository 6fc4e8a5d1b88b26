"""Tensor expressions and schedules (TVM's `tvm.te`).

    A = te.placeholder((M, K), name="A")
    k = te.reduce_axis((0, K), name="k")
    C = te.compute((M, N), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = te.create_schedule(C.op)
    tvm.lower(s, [A, B, C])
"""

from engine.te.errors import LoweringError, ScheduleError, TEError
from engine.te.reduction import CommReducer, Reducer, comm_reducer, max, min, sum
from engine.te.schedule import Schedule, ScheduleRecord, create_schedule
from engine.te.stage import Fuse, IterVarAttr, Split, Stage
from engine.te.tensor import (
    ComputeOp,
    IterVar,
    IterVarType,
    Operation,
    PlaceholderOp,
    Range,
    Tensor,
    compute,
    const,
    placeholder,
    reduce_axis,
    size_var,
    thread_axis,
    var,
)
from engine.tir.expr import Select, cast
from engine.tir.intrin import (
    abs,
    all,
    any,
    ceil,
    cos,
    erf,
    exp,
    fabs,
    floor,
    if_then_else,
    isnan,
    log,
    log2,
    log10,
    max_value,
    min_value,
    power,
    round,
    rsqrt,
    sigmoid,
    sin,
    sqrt,
    tanh,
    trunc,
)

__all__ = [
    "CommReducer", "ComputeOp", "Fuse", "IterVar", "IterVarAttr", "IterVarType",
    "LoweringError", "Operation", "PlaceholderOp", "Range", "Reducer", "Schedule",
    "ScheduleError", "ScheduleRecord", "Select", "Split", "Stage", "TEError", "Tensor", "abs",
    "all", "any", "cast", "ceil", "comm_reducer", "compute", "const", "cos", "create_schedule",
    "erf", "exp", "fabs", "floor", "if_then_else", "isnan", "log", "log2", "log10", "max",
    "max_value", "min", "min_value", "placeholder", "power", "reduce_axis", "round", "rsqrt",
    "sigmoid", "sin", "size_var", "sqrt", "sum", "tanh", "thread_axis", "trunc", "var",
]
