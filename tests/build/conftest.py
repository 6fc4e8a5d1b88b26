"""These tests read schedule records, which TVM (and the engine) keep only when the
PassContext config `te.keep_schedule_record` is true: each test runs inside such a context
(a test's own PassContext overrides it)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import engine as tvm


@pytest.fixture(autouse=True)
def keep_schedule_record() -> Iterator[None]:
    with tvm.transform.PassContext(config={"te.keep_schedule_record": True}):
        yield
