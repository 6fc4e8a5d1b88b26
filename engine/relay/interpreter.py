"""The numpy reference interpreter: evaluates Relay on numpy arrays.

    ex = relay.create_executor("debug", mod=mod, device=tvm.cpu(), target="llvm")
    out = ex.evaluate()(x_data, **params)          # NDArray, or a tuple of them
    out = engine.relay.interpreter.evaluate(mod, {"x": x_data})   # numpy

Each op runs its registered `FNumpyCompute`. Dataflow (calls, tuples,
projections) is evaluated from an explicit post-order, so a 100,000-op chain
needs no recursion, and every intermediate array is dropped as soon as its
last consumer has run. Tuples, let, if, closures, global calls and Primitive
functions (evaluated through their body) are supported, and so are recursive
let-bound functions (`let %loop = fn (...) { ... %loop(...) }`, how a Relay loop
is written): a call in tail position (the last thing a function body does, through
lets and if branches) replaces the running call instead of nesting in it, so a
loop of any trip count runs in constant Python stack. An `if` branch sees the
dataflow values its scope has computed (it reads a value it captures, it does not
compute it again). A batch_norm, and a clip or relu after it, run inside the op before
them where that op can apply them (`interpreter_fusion`), and the evaluation order of a
function is planned once and reused when it is evaluated again.
"""

from __future__ import annotations

import sys
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from engine.ir.errors import EngineError
from engine.ir.expr import (
    DATAFLOW_KINDS,
    Call,
    Constant,
    Expr,
    Function,
    GlobalVar,
    If,
    Let,
    Tuple,
    TupleGetItem,
    Var,
)
from engine.ir.module import IRModule
from engine.ir.op import Op
from engine.ir.type import TupleType, Type
from engine.relay.analysis import free_vars
from engine.relay.interpreter_fusion import Bounds, Epilogue
from engine.relay.interpreter_plan import plan_for
from engine.runtime.ndarray import NDArray

Value = Any  # np.ndarray | tuple[Value, ...] | Closure
Env = dict[Expr, Value]
"""Values by variable, and (inside an `if` branch) the dataflow values computed around it."""


class EvaluationError(EngineError):
    """An op failed while being evaluated: names the op and the span of the call."""


@dataclass(frozen=True)
class Closure:
    """A function value with the variables it captured."""

    func: Function
    env: Mapping[Expr, Value]


@dataclass(frozen=True)
class _TailCall:
    """A call in tail position, for `Interpreter.apply` to run in place of the current one."""

    func: Function
    args: list[Value]
    env: Mapping[Expr, Value]


def _span_text(expr: Expr) -> str:
    names = expr.span.source_names() if expr.span else ()
    return f" (span: {', '.join(names)})" if names else ""


_CONSTANT_MAPS: weakref.WeakKeyDictionary[Expr, Any] = weakref.WeakKeyDictionary()
"""The map of a fused batch_norm whose parameters are constants, by its call (both are
immutable): a model evaluated again does not recompute it."""


class Interpreter:
    """Evaluates expressions of one module (global calls resolve in it)."""

    def __init__(self, mod: IRModule | None = None) -> None:
        self.mod = mod if mod is not None else IRModule()

    # --- public -----------------------------------------------------------------------------
    def call(self, callee: Value, args: Sequence[Value]) -> Value:
        if isinstance(callee, Closure):
            return self.apply(callee.func, args, callee.env)
        raise EvaluationError(f"cannot call a value of type {type(callee).__name__}")

    def apply(self, func: Function, args: Sequence[Value], env: Mapping[Expr, Value] | None = None
              ) -> Value:
        """Run `func` on `args`; tail calls it makes run here, one after the other."""
        while True:
            if len(args) != len(func.params):
                raise EvaluationError(f"function expects {len(func.params)} arguments, got "
                                      f"{len(args)}{_span_text(func)}")
            frame: Env = dict(env or {})
            frame.update(zip(func.params, args))
            result = self._eval_tail(func.body, frame)
            if not isinstance(result, _TailCall):
                return result
            func, args, env = result.func, result.args, result.env

    def eval(self, expr: Expr, env: Env) -> Value:
        if isinstance(expr, DATAFLOW_KINDS):
            return self._eval_dataflow((expr,), env)[0]
        return self._eval_leaf(expr, env)

    # --- tail position ----------------------------------------------------------------------
    def _eval_tail(self, expr: Expr, env: Env) -> Value | _TailCall:
        """`expr` in tail position: lets and ifs are followed, a call of a closure is
        returned as a `_TailCall`, anything else is evaluated."""
        while True:
            if isinstance(expr, Let):
                self._bind(expr, env)
                expr = expr.body
            elif isinstance(expr, If):
                expr = self._branch(expr, env)
            elif _is_closure_call(expr):
                return self._tail_call(expr, env)  # type: ignore[arg-type]
            else:
                return self.eval(expr, env)

    def _tail_call(self, call: Call, env: Env) -> _TailCall:
        args = self._eval_dataflow(call.args, env)
        if isinstance(call.op, Function):
            return _TailCall(call.op, args, env)
        callee = self.eval(call.op, env)
        if not isinstance(callee, Closure):
            raise EvaluationError(f"cannot call a value of type {type(callee).__name__}"
                                  f"{_span_text(call)}")
        return _TailCall(callee.func, args, callee.env)

    # --- dataflow ---------------------------------------------------------------------------
    def _eval_dataflow(self, roots: Sequence[Expr], env: Env) -> list[Value]:
        plan = plan_for(roots, env)
        uses, fusions = plan.uses, plan.fusions
        values: dict[Expr, Value] = {}

        def get(node: Expr) -> Value:
            if isinstance(node, DATAFLOW_KINDS):
                value = values[node]
                left = uses[node] - 1
                uses[node] = left
                if left == 0:
                    del values[node]
                return value
            if isinstance(node, (If, Let)):  # a nested scope reads what is computed here
                return self._eval_leaf(node, {**env, **values})
            return self._eval_leaf(node, env)

        for node in plan.order:
            if node in env:
                values[node] = env[node]
            elif node in fusions.skipped:  # a batch_norm its data's producer applied
                continue
            elif node in fusions.forwarded:  # that batch_norm's field 0: the producer's value
                values[node] = get(fusions.forwarded[node])
            elif node in fusions.passed:  # a clamp its producer applied
                values[node] = get(node.args[0])  # type: ignore[attr-defined]
            else:
                values[node] = self._eval_node(node, get, env, fusions.bounds.get(node),
                                               fusions.epilogues.get(node))
        return [get(root) for root in roots]

    def _eval_node(self, node: Expr, get: Callable[[Expr], Value], env: Env,
                   clamp: Bounds | None = None, epilogue: Epilogue | None = None) -> Value:
        if isinstance(node, Tuple):
            return tuple(get(f) for f in node.fields)
        if isinstance(node, TupleGetItem):
            return get(node.tuple_value)[node.index]
        call: Call = node  # type: ignore[assignment]
        args = [get(a) for a in call.args]
        if isinstance(call.op, Op):
            if epilogue is not None:
                return self._run_epilogue(call, args, epilogue, env)
            if clamp is not None:
                return self._run_clamped(call, args, clamp)
            return self._run_op(call, args)
        if isinstance(call.op, Function):
            return self.apply(call.op, args, env)
        return self.call(self.eval(call.op, env), args)

    def _run_op(self, call: Call, args: list[Value]) -> Value:
        op: Op = call.op  # type: ignore[assignment]
        compute = op.get_attr("FNumpyCompute")
        if compute is None:
            raise EvaluationError(f"operator {op.name} has no numpy implementation")
        try:
            inplace = op.get_attr("FNumpyInplace")
            if inplace is not None and args and _donated(args):
                result = inplace(args, call.attrs)
                if result is not None:
                    return result
            return compute(args, call.attrs)
        except EvaluationError:
            raise
        except Exception as err:  # an op's numpy code failed: say which call
            raise _op_error(call, args, err) from err

    def _run_clamped(self, call: Call, args: list[Value], clamp: Bounds) -> Value:
        """The op's value clamped to `clamp` by its `FNumpyClamped` (the clamp after it was
        fused into it), in place when its first argument is donated."""
        op: Op = call.op  # type: ignore[assignment]
        try:
            return op.get_attr("FNumpyClamped")(args, call.attrs, clamp,
                                                bool(args) and _donated(args))
        except EvaluationError:
            raise
        except Exception as err:
            raise _op_error(call, args, err) from err

    def _run_epilogue(self, call: Call, args: list[Value], epilogue: Epilogue, env: Env
                      ) -> Value:
        """The op's value with the map after it (a batch_norm's, an add's) and the clamp
        after that applied by its `FNumpyEpilogue`."""
        op: Op = call.op  # type: ignore[assignment]
        try:
            affine = self._channel_affine(epilogue.affine, epilogue.data_index, env)
            if epilogue.bounds is not None:
                affine = affine.clamped(epilogue.bounds)
            return op.get_attr("FNumpyEpilogue")(args, call.attrs, affine)
        except EvaluationError:
            raise
        except Exception as err:
            raise _op_error(call, args, err) from err

    def _channel_affine(self, call: Call, data_index: int, env: Env) -> Any:
        """The per-channel map of `call` (a batch_norm, an add) from its leaf arguments
        other than the data; kept in `_CONSTANT_MAPS` when they are all constants."""
        affine = _CONSTANT_MAPS.get(call)
        if affine is not None:
            return affine
        op: Op = call.op  # type: ignore[assignment]
        leaves = [a for k, a in enumerate(call.args) if k != data_index]
        affine = op.get_attr("FNumpyChannelAffine")([self._eval_leaf(p, env) for p in leaves],
                                                    call.attrs)
        if all(isinstance(p, Constant) for p in leaves):
            _CONSTANT_MAPS[call] = affine
        return affine

    # --- everything else --------------------------------------------------------------------
    def _eval_leaf(self, expr: Expr, env: Env) -> Value:
        return _LEAF[type(expr)](self, expr, env)

    def _var(self, var: Var, env: Env) -> Value:
        try:
            return env[var]
        except KeyError:
            raise EvaluationError(f"variable %{var.name_hint} has no value") from None

    def _constant(self, const: Constant, env: Env) -> Value:
        return const.data.numpy()

    def _global_var(self, gv: GlobalVar, env: Env) -> Value:
        return Closure(self.mod[gv], {})

    def _function(self, func: Function, env: Env) -> Value:
        captured: Env = {v: env[v] for v in free_vars(func) if v in env}
        return Closure(func, captured)

    def _op(self, op: Op, env: Env) -> Value:
        raise EvaluationError(f"operator {op.name} is not a value: call it")

    def _bind(self, let: Let, env: Env) -> None:
        """Bind the let's variable; a function bound to it may call itself by that name."""
        value = self.eval(let.value, env)
        if isinstance(value, Closure) and isinstance(let.value, Function) \
                and let.var in free_vars(let.value):
            value = Closure(value.func, {**value.env})
            value.env[let.var] = value  # type: ignore[index]
        env[let.var] = value

    def _let(self, let: Let, env: Env) -> Value:
        node: Expr = let
        while isinstance(node, Let):
            self._bind(node, env)
            node = node.body
        return self.eval(node, env)

    def _branch(self, ite: If, env: Env) -> Expr:
        cond = np.asarray(self.eval(ite.cond, env))
        return ite.true_branch if bool(cond) else ite.false_branch

    def _if(self, ite: If, env: Env) -> Value:
        return self.eval(self._branch(ite, env), env)


_UNSHARED_REFS = 3
"""References to an argument nothing else holds, as `_donated` counts them: the argument
list, its own parameter and `sys.getrefcount`'s."""


def _donated(args: list[Value]) -> bool:
    """Whether `args[0]` may be overwritten: an array that owns its memory (or is the only
    user of an array that does) and that no value, environment, constant or view still
    references (the same test numpy makes to reuse temporaries). The dataflow evaluation
    drops a value at its last use, so an intermediate result passes this at its last
    consumer; inputs, parameters, constants and values still needed do not."""
    arr = args[0]
    if type(arr) is not np.ndarray or not arr.flags.writeable:
        return False
    if sys.getrefcount(arr) > _UNSHARED_REFS:
        return False
    base = arr.base
    # the base is held by `arr`, `base` and getrefcount: nothing else may see its memory
    return base is None or (type(base) is np.ndarray and base.base is None
                            and sys.getrefcount(base) <= _UNSHARED_REFS)


def _op_error(call: Call, args: list[Value], err: Exception) -> EvaluationError:
    """An op's numpy code failed: the error names the call, its argument shapes and span."""
    op: Op = call.op  # type: ignore[assignment]
    shapes = ", ".join(_shape_text(a) for a in args)
    return EvaluationError(f"while evaluating {op.name}({shapes}){_span_text(call)}: "
                           f"{type(err).__name__}: {err}")


def _is_closure_call(expr: Expr) -> bool:
    """A call of a function value (not of an op, nor of a Primitive function, which the
    dataflow evaluation runs)."""
    if not isinstance(expr, Call) or isinstance(expr.op, Op):
        return False
    return not (isinstance(expr.op, Function) and expr.op.is_primitive())


_LEAF: dict[type, Callable[[Interpreter, Any, Env], Value]] = {
    Var: Interpreter._var,
    Constant: Interpreter._constant,
    GlobalVar: Interpreter._global_var,
    Function: Interpreter._function,
    Op: Interpreter._op,
    Let: Interpreter._let,
    If: Interpreter._if,
}


def _shape_text(value: Value) -> str:
    if isinstance(value, np.ndarray):
        return f"{value.dtype}{list(value.shape)}"
    if isinstance(value, tuple):
        return "(" + ", ".join(_shape_text(v) for v in value) + ")"
    return type(value).__name__


# --- argument handling ----------------------------------------------------------------------
def _to_numpy(value: Any, param: Var | None = None) -> Any:
    """An argument as numpy, in the dtype its parameter declares."""
    return _coerce(value, param.type_annotation if param is not None else None)


def _coerce(value: Any, ann: Type | None) -> Any:
    if isinstance(ann, TupleType) and isinstance(value, (tuple, list)):  # a sequence
        return tuple(_coerce(v, t) for v, t in zip(value, ann.fields))
    if isinstance(value, NDArray):
        value = value.numpy()
    arr = np.asarray(value)
    dtype = getattr(ann, "dtype", None)
    if dtype is not None and arr.dtype != np.dtype(dtype if dtype != "bool" else np.bool_):
        arr = arr.astype(dtype)
    return arr


def bind_arguments(func: Function, args: Sequence[Any], kwargs: Mapping[str, Any]
                   ) -> list[Any]:
    """Positional args first, then the remaining params by name (TVM's executor rule)."""
    if len(args) > len(func.params):
        raise EvaluationError(f"too many arguments: function takes {len(func.params)}, "
                              f"got {len(args)}")
    values: list[Any] = list(args)
    for param in func.params[len(args):]:
        if param.name_hint not in kwargs:
            raise EvaluationError(f"missing argument %{param.name_hint}")
        values.append(kwargs[param.name_hint])
    return [_to_numpy(v, p) for v, p in zip(values, func.params)]


def _as_ndarray(value: Value) -> Any:
    if isinstance(value, tuple):
        return tuple(_as_ndarray(v) for v in value)
    if isinstance(value, np.ndarray):
        return NDArray(value)
    if isinstance(value, np.generic):
        return NDArray(np.asarray(value))
    return value


def _as_numpy(value: Value) -> Any:
    if isinstance(value, tuple):
        return tuple(_as_numpy(v) for v in value)
    return np.asarray(value) if isinstance(value, np.generic) else value


# --- executors ------------------------------------------------------------------------------
class Executor:
    """`relay.create_executor(kind, mod, device, target)`; every kind runs the interpreter."""

    def __init__(self, kind: str, mod: IRModule | None, device: Any, target: Any,
                 params: Mapping[str, Any] | None = None) -> None:
        if kind not in ("debug", "graph", "vm", "aot"):
            raise ValueError(f"unknown executor kind {kind!r}: use 'debug', 'graph' or 'vm'")
        self.kind = kind
        self.mod = mod if mod is not None else IRModule()
        self.device = device
        self.target = target
        self.params = dict(params or {})

    def evaluate(self, expr: Expr | None = None, binds: Mapping[Var, Any] | None = None) -> Any:
        """A callable for a function (default: `main`); the value for any other expression."""
        interp = Interpreter(self.mod)
        if expr is None:
            expr = self.mod.get_global_var("main")
        func: Function | None = None
        if isinstance(expr, GlobalVar):
            func = self.mod[expr]
        elif isinstance(expr, Function):
            func = expr
        env: Env = {v: _to_numpy(x, v) for v, x in (binds or {}).items()}
        if func is None:
            return _as_ndarray(interp.eval(expr, dict(env)))
        target = func

        def run(*args: Any, **kwargs: Any) -> Any:
            merged = {**self.params, **kwargs}
            values = bind_arguments(target, args, merged)
            return _as_ndarray(interp.apply(target, values, env))
        return run


def create_executor(kind: str = "debug", mod: IRModule | None = None, device: Any = None,
                    target: Any = "llvm", params: Mapping[str, Any] | None = None) -> Executor:
    return Executor(kind, mod, device, target, params)


def evaluate(mod_or_expr: IRModule | Expr, inputs: Mapping[str, Any] | Sequence[Any] = ()
             ) -> Any:
    """Evaluate `main` of a module (or a function / closed expression) on numpy inputs.

    `inputs` is a dict by parameter name or a list in parameter order; returns
    a numpy array, or a tuple of them for a tuple result.
    """
    if isinstance(mod_or_expr, IRModule):
        mod, func = mod_or_expr, mod_or_expr["main"]
    elif isinstance(mod_or_expr, Function):
        mod, func = IRModule(), mod_or_expr
    else:
        mod, func = IRModule(), Function(tuple(free_vars(mod_or_expr)), mod_or_expr)
    if isinstance(inputs, Mapping):
        values = bind_arguments(func, (), inputs)
    else:
        values = bind_arguments(func, list(inputs), {})
    return _as_numpy(Interpreter(mod).apply(func, values))


__all__ = ["Closure", "EvaluationError", "Executor", "Interpreter", "create_executor",
           "evaluate"]
