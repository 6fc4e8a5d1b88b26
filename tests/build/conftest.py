"""These tests read schedule records, which TVM (and the engine) keep only when the
PassContext config `te.keep_schedule_record` is true: every test here runs inside such a
context (tests/conftest.py's `keep_schedule_record`)."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _records(keep_schedule_record: None) -> None:
    return None
