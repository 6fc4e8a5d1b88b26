"""ONNX's own backend node cases (every case of the installed onnx) through
`relay.frontend.from_onnx` and the interpreter, against onnx's expected outputs
(rtol 1e-3, atol 1e-5; exact for integers and booleans).

`onnx_node_known_failures.json` lists the cases we fail, each with a short reason. A
listed case that fails passes the test (quietly: 1,000 xfail lines would bury the real
news); an unlisted failure fails, and so does a listed case that passes (take it off the
list: the list only shrinks). Rewrite the list with
`bench/bench_onnx_conformance.py --write-known-failures`.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.relay.testing.onnx_node_cases import (
    NodeCase,
    node_cases,
    read_known_failures,
    run_case,
)

KNOWN_FAILURES = Path(__file__).with_name("onnx_node_known_failures.json")
CASES = node_cases()
KNOWN = read_known_failures(KNOWN_FAILURES)


def test_the_known_failures_name_real_cases() -> None:
    assert sorted(set(KNOWN) - {case.name for case in CASES}) == []


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.name)
def test_node_case(case: NodeCase) -> None:
    outcome = run_case(case)
    listed = case.name in KNOWN
    if outcome.passed:
        assert not listed, f"{case.name} passes now: take it off {KNOWN_FAILURES.name}"
        return
    if not listed:
        pytest.fail(f"{case.name} fails and is not a known failure: {outcome.reason}")
