"""How runs execute: the run manager's settings, from the app's configuration."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from explorer.runs.children import plugin_names
from explorer.runs.numerics import NUMERICS_WEIGHT_LIMIT


def _default_concurrency() -> int:
    return max(1, os.cpu_count() or 1)


@dataclass(frozen=True, slots=True)
class RunConfig:
    """How runs execute. From the app config: MAX_CONCURRENT_RUNS, RUN_CANCEL_GRACE,
    RUN_KILL_GRACE, RUN_STALL_TIMEOUT (seconds), RUN_PLUGINS (module names) and
    NUMERICS_WEIGHT_LIMIT (bytes: the largest model whose numerics are checked)."""

    max_concurrent: int = field(default_factory=_default_concurrency)
    cancel_grace: float = 2.0
    kill_grace: float = 1.0
    stall_timeout: float = 30 * 60.0
    plugins: tuple[str, ...] = ()
    poll_interval: float = 0.05
    numerics_weight_limit: int = NUMERICS_WEIGHT_LIMIT

    @staticmethod
    def from_mapping(config: Mapping[str, Any]) -> RunConfig:
        defaults = RunConfig()
        return RunConfig(
            max_concurrent=max(1, int(config.get("MAX_CONCURRENT_RUNS")
                                      or defaults.max_concurrent)),
            cancel_grace=float(config.get("RUN_CANCEL_GRACE", defaults.cancel_grace)),
            kill_grace=float(config.get("RUN_KILL_GRACE", defaults.kill_grace)),
            stall_timeout=float(config.get("RUN_STALL_TIMEOUT", defaults.stall_timeout)),
            plugins=plugin_names(config.get("RUN_PLUGINS")),
            numerics_weight_limit=int(config.get("NUMERICS_WEIGHT_LIMIT")
                                      or defaults.numerics_weight_limit),
        )
