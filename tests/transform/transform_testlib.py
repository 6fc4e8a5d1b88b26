"""Shared helpers of the pass-infrastructure tests: tiny ops, modules and instruments."""

from __future__ import annotations

from typing import Any

from engine import relay
from engine.instrument import PassInstrument
from engine.ir import IRModule, layer_span
from engine.ir.op import Op, register_op
from engine.transform import module_pass

OPS = {"tinfra.add": 2, "tinfra.relu": 1, "tinfra.neg": 1}
for _name, _n in OPS.items():
    register_op(_name, num_inputs=_n)


def call(name: str, *args: relay.Expr, span: Any = None) -> relay.Call:
    if span is None:
        return relay.Call(Op.get(f"tinfra.{name}"), args)
    return relay.Call(Op.get(f"tinfra.{name}"), args, span=span)


def make_module() -> IRModule:
    """main(x, y) = relu(add(x, y)), each call with a layer span."""
    x = relay.var("x", shape=(3, 4))
    y = relay.var("y", shape=(3, 4))
    body = call("relu", call("add", x, y, span=layer_span("add0")), span=layer_span("relu0"))
    return IRModule.from_expr(relay.Function([x, y], body))


def wrap_body(mod: IRModule, op: str = "neg") -> IRModule:
    """A new module whose main returns op(old body): a pass that changes the IR."""
    main = mod["main"]
    new = relay.Function(main.params, call(op, main.body))
    out = mod.shallow_copy()
    out["main"] = new
    return out


class Recorder(PassInstrument):
    """Logs every hook as "<id> <hook> [<pass>]"; optionally raises in one hook."""

    def __init__(self, ident: str, log: list[str], raise_in: str | None = None,
                 run: bool = True) -> None:
        self.ident = ident
        self.log = log
        self.raise_in = raise_in
        self.run = run

    def _note(self, hook: str, info: Any = None) -> None:
        self.log.append(f"{self.ident} {hook}" + (f" {info.name}" if info is not None else ""))
        if hook == self.raise_in:
            raise RuntimeError(f"{self.ident} broke in {hook}")

    def enter_pass_ctx(self) -> None:
        self._note("enter_pass_ctx")

    def exit_pass_ctx(self) -> None:
        self._note("exit_pass_ctx")

    def should_run(self, mod: IRModule, info: Any) -> bool:
        self._note("should_run", info)
        return self.run

    def run_before_pass(self, mod: IRModule, info: Any) -> None:
        self._note("run_before_pass", info)

    def run_after_pass(self, mod: IRModule, info: Any) -> None:
        self._note("run_after_pass", info)

    def run_after_pass_failed(self, mod: IRModule, info: Any, exc: BaseException) -> None:
        self._note("run_after_pass_failed", info)


def logging_pass(name: str, log: list[str], opt_level: int = 0, change: bool = False,
                 fail: bool = False, required: list[str] | None = None) -> Any:
    """A module pass that logs "pass <name>", optionally changes the IR or raises."""

    def body(mod: IRModule, ctx: Any) -> IRModule:
        log.append(f"pass {name}")
        if fail:
            raise ValueError(f"{name} exploded")
        return wrap_body(mod) if change else mod

    return module_pass(body, opt_level=opt_level, name=name, required=required)
