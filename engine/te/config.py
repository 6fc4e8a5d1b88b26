"""The one place TE reads PassContext configuration."""

from __future__ import annotations

KEEP_SCHEDULE_RECORD = "te.keep_schedule_record"


def keep_schedule_record() -> bool:
    """`te.keep_schedule_record` of the current PassContext; recording when it is unset."""
    try:
        from engine.transform import PassContext
    except ImportError:  # the pass infrastructure is optional for TE
        return True
    value = PassContext.current().config.get(KEEP_SCHEDULE_RECORD)
    return True if value is None else bool(value)
