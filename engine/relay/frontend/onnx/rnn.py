"""ONNX RNN, GRU and LSTM, unrolled over the sequence into Relay ops (as TVM's ONNX
frontend builds them): one dense projects every step's input at once (X·Wᵀ + Wb), then
each step adds a dense of the previous hidden state with R (+ Rb), applies the gate
activations and updates the state; the steps' hidden states are stacked into Y.

Covered: forward, reverse and bidirectional; layout 0 and 1 (batch first); sequence_lens
(a step at or past a batch entry's length keeps its state and outputs zeros, as
onnxruntime does; a reverse pass starts at each entry's last valid step); initial_h and
initial_c; LSTM peepholes and input_forget; clip; the activations list with
activation_alpha / activation_beta (consumed in order by the activations that take them);
GRU's linear_before_reset; every optional output (Y, Y_h, Y_c).

Not covered: a sequence length known only at run time (the recurrence is unrolled at
import time): pin the input shape with `shape={...}`. A run-time batch size is fine.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

import engine.relay as relay
from engine.ir.expr import Constant, Expr
from engine.relay.frontend.onnx.activation import elu_expr, softplus_expr, softsign_expr
from engine.relay.frontend.onnx.table import ConvertResult, NodeContext, converter

Consts = Callable[[float], Expr]
Activation = Callable[[Expr], Expr]
State = tuple[Expr, ...]
_Builder = Callable[[Expr, tuple[float, ...], Consts], Expr]


def _leaky_relu(x: Expr, p: tuple[float, ...], c: Consts) -> Expr:
    return relay.where(relay.greater(x, c(0.0)), x, relay.multiply(c(p[0]), x))


def _affine(x: Expr, p: tuple[float, ...], c: Consts) -> Expr:
    return relay.add(relay.multiply(c(p[0]), x), c(p[1]))


# name (lower case) -> (defaults of the parameters it reads: alpha, then beta; builder)
_ACTIVATIONS: dict[str, tuple[tuple[float, ...], _Builder]] = {
    "relu": ((), lambda x, p, c: relay.nn.relu(x)),
    "tanh": ((), lambda x, p, c: relay.tanh(x)),
    "sigmoid": ((), lambda x, p, c: relay.sigmoid(x)),
    "affine": ((1.0, 0.0), _affine),
    "leakyrelu": ((0.01,), _leaky_relu),
    "thresholdedrelu": ((1.0,), lambda x, p, c: relay.where(relay.greater(x, c(p[0])), x,
                                                             c(0.0))),
    "scaledtanh": ((1.0, 1.0), lambda x, p, c: relay.multiply(
        c(p[0]), relay.tanh(relay.multiply(c(p[1]), x)))),
    "hardsigmoid": ((0.2, 0.5), lambda x, p, c: relay.clip(_affine(x, p, c), 0.0, 1.0)),
    "elu": ((1.0,), lambda x, p, c: elu_expr(x, p[0], c)),
    "softsign": ((), lambda x, p, c: softsign_expr(x, c)),
    "softplus": ((), lambda x, p, c: softplus_expr(x, c)),
}


@dataclass(frozen=True)
class _Layer:
    """What every step of one direction reads: R and Rb split by `_Kind.r_parts`, the
    peepholes, the activations and the options."""

    r: tuple[Expr, ...]
    rb: tuple[Expr, ...] | None
    peephole: Expr | None
    acts: Sequence[Activation]
    clip: float | None
    c: Consts
    linear_before_reset: bool = False
    input_forget: bool = False

    def recur(self, h: Expr, part: int = 0) -> Expr:
        out = relay.nn.dense(h, self.r[part])
        return out if self.rb is None else relay.add(out, self.rb[part])

    def clipped(self, x: Expr) -> Expr:
        return x if self.clip is None else relay.clip(x, -self.clip, self.clip)

    def act(self, index: int, x: Expr) -> Expr:
        return self.acts[index](self.clipped(x))


Step = Callable[[_Layer, Expr, State], State]


def _gates(x: Expr, count: int) -> list[Expr]:
    return list(relay.split(x, count, axis=-1))


def _rnn_step(layer: _Layer, xw: Expr, state: State) -> State:
    return (layer.act(0, relay.add(xw, layer.recur(state[0]))),)


def _gru_step(layer: _Layer, xw: Expr, state: State) -> State:
    h = state[0]
    xz, xr, xh = _gates(xw, 3)
    hz, hr = _gates(layer.recur(h, 0), 2)
    z = layer.act(0, relay.add(xz, hz))
    r = layer.act(0, relay.add(xr, hr))
    if layer.linear_before_reset:
        hh = relay.multiply(r, layer.recur(h, 1))
    else:
        hh = layer.recur(relay.multiply(r, h), 1)
    n = layer.act(1, relay.add(xh, hh))
    keep = relay.multiply(z, h)
    return (relay.add(relay.multiply(relay.subtract(layer.c(1.0), z), n), keep),)


def _lstm_step(layer: _Layer, xw: Expr, state: State) -> State:
    h, cell = state
    i, o, f, g = _gates(relay.add(xw, layer.recur(h)), 4)
    pi, po, pf = _gates(layer.peephole, 3) if layer.peephole is not None else (None,) * 3
    i = layer.act(0, _peep(i, pi, cell))
    f = relay.subtract(layer.c(1.0), i) if layer.input_forget else layer.act(
        0, _peep(f, pf, cell))
    cell = relay.add(relay.multiply(f, cell), relay.multiply(i, layer.act(1, g)))
    o = layer.act(0, _peep(o, po, cell))
    return relay.multiply(o, layer.acts[2](cell)), cell


def _peep(gate: Expr, p: Expr | None, cell: Expr) -> Expr:
    return gate if p is None else relay.add(gate, relay.multiply(p, cell))


@dataclass(frozen=True)
class _Kind:
    """One recurrent op: its gate count, its R split (in hidden sizes), its default
    activations per direction, how many states it carries, and its step."""

    gates: int
    r_parts: tuple[int, ...]
    activations: tuple[str, ...]
    states: int
    step: Step


_RNN = _Kind(1, (1,), ("Tanh",), 1, _rnn_step)
_GRU = _Kind(3, (2, 1), ("Sigmoid", "Tanh"), 1, _gru_step)
_LSTM = _Kind(4, (4,), ("Sigmoid", "Tanh", "Tanh"), 2, _lstm_step)


# --- attributes and per-direction inputs --------------------------------------------------
def _consts(ctx: NodeContext) -> Consts:
    dtype = ctx.dtype(0)
    return lambda value: relay.const(value, dtype)


def _activations(ctx: NodeContext, kind: _Kind, dirs: int) -> list[list[Activation]]:
    names = [n.decode() if isinstance(n, bytes) else str(n)
             for n in ctx.attr("activations", [])] or list(kind.activations) * dirs
    if len(names) != len(kind.activations) * dirs:
        raise ctx.fail(f"activations {names} should name {len(kind.activations)} functions "
                       f"per direction ({dirs} direction{'s' if dirs > 1 else ''})")
    alphas = [float(a) for a in ctx.attr("activation_alpha", [])]
    betas = [float(b) for b in ctx.attr("activation_beta", [])]
    acts: list[Activation] = []
    for name in names:
        entry = _ACTIVATIONS.get(name.lower())
        if entry is None:
            raise ctx.fail(f"activation {name!r} is not supported (known: "
                           f"{', '.join(sorted(_ACTIVATIONS))})")
        defaults, build = entry
        params = tuple(queue.pop(0) if queue else default
                       for queue, default in zip((alphas, betas), defaults))
        acts.append(_bound(build, params, _consts(ctx)))
    per = len(kind.activations)
    return [acts[d * per:(d + 1) * per] for d in range(dirs)]


def _bound(build: _Builder, params: tuple[float, ...], c: Consts) -> Activation:
    return lambda x: build(x, params, c)


def _direction(ctx: NodeContext, index: int, d: int, axis: int = 0) -> Expr | None:
    """Input `index` for direction `d` (its directions run along `axis`)."""
    if not ctx.has(index):
        return None
    expr = ctx.input(index)
    if isinstance(expr, Constant):
        value = np.take(expr.data.numpy(), d, axis=axis)
        return relay.const(value, str(value.dtype))
    return relay.take(expr, relay.const(d, "int64"), axis=axis)


def _parts(x: Expr, parts: tuple[int, ...], hidden: int) -> tuple[Expr, ...]:
    """`x` split along axis 0 into pieces of `parts[i] * hidden` rows."""
    if len(parts) == 1:
        return (x,)
    points = np.cumsum([p * hidden for p in parts[:-1]]).tolist()
    return tuple(relay.split(x, points, axis=0))


def _layer(ctx: NodeContext, kind: _Kind, d: int, acts: Sequence[Activation],
           hidden: int) -> _Layer:
    r = _direction(ctx, 2, d)
    assert r is not None
    bias = _direction(ctx, 3, d)
    rb = None
    if bias is not None:
        rb = _parts(relay.split(bias, 2, axis=0)[1], kind.r_parts, hidden)
    clip = ctx.attr("clip")
    return _Layer(_parts(r, kind.r_parts, hidden), rb, _direction(ctx, 7, d), acts,
                  None if clip is None else float(clip), _consts(ctx),
                  bool(ctx.attr("linear_before_reset", 0)), bool(ctx.attr("input_forget", 0)))


def _initial(ctx: NodeContext, kind: _Kind, d: int, first_step: Expr, hidden: int) -> State:
    """initial_h (and initial_c) of direction `d` ([batch, num_directions, H] in layout 1),
    else zeros (shaped like the first step's hidden part when the batch is dynamic)."""
    layout = int(ctx.attr("layout", 0))
    batch = ctx.shape(0)[0 if layout else 1]
    zeros = relay.const(np.zeros((batch, hidden), ctx.dtype(0))) if batch is not None else (
        relay.zeros_like(relay.strided_slice(first_step, [0], [hidden], axes=[1])))
    given = (_direction(ctx, index, d, layout) for index in (5, 6)[:kind.states])
    return tuple(zeros if state is None else state for state in given)


def _input_steps(ctx: NodeContext, x: Expr, d: int, seq: int) -> list[Expr]:
    """X·W_dᵀ + Wb_d for every step at once, then split into `seq` (batch, G*H) steps."""
    w = _direction(ctx, 1, d)
    assert w is not None
    xw = relay.nn.dense(x, w)
    bias = _direction(ctx, 3, d)
    if bias is not None:
        xw = relay.add(xw, relay.split(bias, 2, axis=0)[0])
    return [relay.squeeze(step, axis=[0]) for step in relay.split(xw, seq, axis=0)]


# --- sequence_lens ------------------------------------------------------------------------
def _lengths(ctx: NodeContext, seq: int) -> Expr | None:
    """sequence_lens, or None when it is absent or known to be the full length."""
    if not ctx.has(4):
        return None
    value = ctx.value(4)
    if value is not None and (np.asarray(value) >= seq).all():
        return None
    lengths = ctx.input(4)
    return lengths if ctx.dtype(4) == "int32" else relay.cast(lengths, "int32")


def _masked(lengths: Expr | None, t: int, new: State, old: State) -> tuple[State, Expr]:
    """(the state after step t, the step's output): a batch entry whose length is at most t
    keeps its state and outputs zeros."""
    if lengths is None:
        return new, new[0]
    valid = relay.expand_dims(relay.less(relay.const(np.asarray(t, np.int32)), lengths),
                              axis=1)
    zero = relay.zeros_like(new[0])
    state = tuple(relay.where(valid, n, o) for n, o in zip(new, old))
    return state, relay.where(valid, new[0], zero)


# --- the converter ------------------------------------------------------------------------
def _sequence_length(ctx: NodeContext, layout: int) -> int:
    seq = ctx.shape(0)[1 if layout else 0]
    if seq is None:
        raise ctx.fail("a sequence length known only at run time is not supported (the "
                       "recurrence is unrolled at import time); pin the input shape with "
                       "shape={...}")
    return int(seq)


def _run_direction(ctx: NodeContext, kind: _Kind, x: Expr, d: int, reverse: bool,
                   acts: Sequence[Activation]) -> tuple[Expr, State]:
    """(Y of this direction as (seq, batch, H), its final states)."""
    seq = _sequence_length(ctx, int(ctx.attr("layout", 0)))
    hidden = _hidden_size(ctx)
    layer = _layer(ctx, kind, d, acts, hidden)
    steps = _input_steps(ctx, x, d, seq)
    lengths = _lengths(ctx, seq)
    state = _initial(ctx, kind, d, steps[0], hidden)
    outputs: list[Expr] = [state[0]] * seq
    for t in (reversed(range(seq)) if reverse else range(seq)):
        state, outputs[t] = _masked(lengths, t, kind.step(layer, steps[t], state), state)
    return relay.stack(outputs, axis=0), state


def _hidden_size(ctx: NodeContext) -> int:
    hidden = ctx.attr("hidden_size")
    return int(hidden) if hidden is not None else int(ctx.static_shape(2)[-1])


def _convert(ctx: NodeContext, kind: _Kind) -> ConvertResult:
    direction = ctx.attr("direction", "forward")
    if direction not in ("forward", "reverse", "bidirectional"):
        raise ctx.fail(f"unknown direction {direction!r}")
    dirs = 2 if direction == "bidirectional" else 1
    layout = int(ctx.attr("layout", 0))
    x = relay.transpose(ctx.input(0), axes=[1, 0, 2]) if layout else ctx.input(0)
    acts = _activations(ctx, kind, dirs)
    runs = [_run_direction(ctx, kind, x, d, direction == "reverse" or d == 1, acts[d])
            for d in range(dirs)]
    y = relay.stack([run[0] for run in runs], axis=1)
    finals = [relay.stack([run[1][k] for run in runs], axis=0) for k in range(kind.states)]
    if layout:
        y = relay.transpose(y, axes=[2, 0, 1, 3])
        finals = [relay.transpose(f, axes=[1, 0, 2]) for f in finals]
    return [y, *finals]


@converter("RNN", since=7)
def rnn(ctx: NodeContext) -> ConvertResult:
    return _convert(ctx, _RNN)


@converter("GRU", since=7)
def gru(ctx: NodeContext) -> ConvertResult:
    return _convert(ctx, _GRU)


@converter("LSTM", since=7)
def lstm(ctx: NodeContext) -> ConvertResult:
    return _convert(ctx, _LSTM)
