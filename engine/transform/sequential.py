"""Sequential: a pipeline of passes (TVM's `tvm.transform.Sequential`)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import ClassVar

from engine.ir.module import IRModule
from engine.transform.context import PassContext
from engine.transform.pass_info import PassInfo
from engine.transform.passes import Pass
from engine.transform.registry import get_pass


class Sequential(Pass):
    """Runs its passes in order. A pass runs if the context enables it (not disabled,
    and explicitly required or `opt_level <= ctx.opt_level`); before it, each name in
    its `info.required` is resolved through the pass registry and run.

    The Sequential itself is a pass: instruments see it, and its children run one
    level deeper. Its own `opt_level` only matters when it is nested in another one.
    """

    traced: ClassVar[bool] = False
    kind: ClassVar[str] = "Sequential"

    def __init__(self, passes: Iterable[Pass] | None = None, opt_level: int = 0,
                 name: str = "sequential", required: Iterable[str] | None = None,
                 traceable: bool = False) -> None:
        if passes is None:
            passes = ()
        if isinstance(passes, Pass) or not isinstance(passes, (list, tuple)):
            raise TypeError(f"passes must be a list of Pass objects, got {passes!r}")
        for item in passes:
            if not isinstance(item, Pass):
                raise TypeError(f"Sequential {name!r}: {item!r} is not a Pass")
        super().__init__(PassInfo(opt_level, name, required, traceable))
        self.passes: tuple[Pass, ...] = tuple(passes)

    def run_order(self, ctx: PassContext) -> Iterator[Pass]:
        """The passes this Sequential runs under `ctx`, in order: each child the context
        enables (`PassContext.pass_enabled`), preceded by the passes its `info.required`
        names, resolved through the registry as they come (lazily: a later child's
        missing pass is only an error once the passes before it ran)."""
        for pass_ in self.passes:
            info = pass_.info
            if not ctx.pass_enabled(info):
                continue
            for name in info.required:
                yield get_pass(name)
            yield pass_

    def apply(self, mod: IRModule, ctx: PassContext) -> IRModule:
        for pass_ in self.run_order(ctx):
            mod = pass_(mod)
        return mod

    def __str__(self) -> str:
        names = ", ".join(p.info.name for p in self.passes)
        return f"{super().__str__()}. The passes will be executed are: [{names}]"

    __repr__ = __str__
