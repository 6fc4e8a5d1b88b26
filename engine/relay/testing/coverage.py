"""A pass instrument for tests and benchmarks: span coverage after every pass."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from engine.instrument import PassInstrument
from engine.ir.module import IRModule
from engine.relay.analysis import span_coverage


@dataclass(eq=False)
class CoverageCheck(PassInstrument):
    """Records every pass it sees and, for each after which not every node has a span, a
    line naming the pass, the coverage and the first nodes without one."""

    failures: list[str] = field(default_factory=list)
    passes: list[str] = field(default_factory=list)

    def run_after_pass(self, mod: IRModule, info: Any) -> None:
        self.passes.append(info.name)
        cov = span_coverage(mod)
        if cov.ratio != 1.0:
            self.failures.append(f"{info.name}: {cov} {cov.missing[:3]}")
