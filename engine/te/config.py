"""The one place TE reads PassContext configuration."""

from __future__ import annotations

from engine.transform.context import PassContext

KEEP_SCHEDULE_RECORD = "te.keep_schedule_record"


def keep_schedule_record() -> bool:
    """`te.keep_schedule_record` of the current PassContext; off when unset, as in TVM."""
    return bool(PassContext.current().config.get(KEEP_SCHEDULE_RECORD, False))
