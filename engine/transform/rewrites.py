"""The rewrite points of passes: `allow_rewrite`, which every rewriting pass (and a user's
pass) asks once per rewrite, and `run_limited`, a pass run with a rewrite limit
(see engine.transform.bisect for the counter and the search)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from engine.transform.bisect import LIMIT_KEY, PASS_KEY, Rewrite
from engine.transform.context import PassContext

if TYPE_CHECKING:
    from engine.ir.expr import Expr


def run_limited(pass_: Any, mod: Any, limit: int, **context: Any) -> tuple[Any, list[Rewrite]]:
    """`pass_(mod)` under a PassContext (`context`: its other arguments) that lets only
    the first `limit` rewrites of that pass through: an `Apply` for `bisect_rewrites`."""
    config = {**context.pop("config", {}), LIMIT_KEY: limit, PASS_KEY: pass_.info.name}
    with PassContext(config=config, **context) as ctx:
        result = pass_(mod)
    assert ctx.rewrite_counter is not None
    return result, ctx.rewrite_counter.log


def allow_rewrite(node: Expr) -> bool:
    """Whether the running pass may replace `node` (one call per rewrite, before it is
    made; False: keep `node` as it is). Always True unless the current PassContext sets
    relay.bisect.limit / relay.bisect.pass."""
    return PassContext.current().allow_rewrite(node)


__all__ = ["allow_rewrite", "run_limited"]
