#!/usr/bin/env python3
"""ONNX conformance: every backend node case of the installed onnx through our importer +
interpreter and through onnxruntime, in the same run, compared the same way (rtol 1e-3,
atol 1e-5; exact for integers and booleans). Prints the pass rates and a per-operator
table (the operator a case is named after) and appends them to
bench/results/onnx_conformance.md.

    .venv/bin/python bench/bench_onnx_conformance.py [--no-write] [--write-known-failures]

`--write-known-failures` rewrites tests/frontends/onnx_node_known_failures.json from this
run (what the conformance test compares against).
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from collections import Counter, defaultdict
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import onnx  # noqa: E402
from _common import append_results, markdown_table  # noqa: E402

from engine.relay.testing.onnx_node_cases import (  # noqa: E402
    NodeCase,
    Outcome,
    case_operator,
    compare,
    node_cases,
    run_case,
    write_known_failures,
)

KNOWN_FAILURES = ROOT / "tests" / "frontends" / "onnx_node_known_failures.json"


def run_onnxruntime(case: NodeCase) -> Outcome:
    """The same case on onnxruntime's CPU provider."""
    import onnxruntime as ort

    if not case.tensor_io:
        return Outcome(case.name, False, "sequence/map/optional inputs or outputs")
    model = case.model()
    inputs, expected = case.data()
    inits = {t.name for t in model.graph.initializer}
    names = [i.name for i in model.graph.input if i.name not in inits]
    options = ort.SessionOptions()
    options.log_severity_level = 4
    try:
        session = ort.InferenceSession(model.SerializeToString(), options,
                                       providers=["CPUExecutionProvider"])
        outs = session.run(None, dict(zip(names, inputs)))
    except Exception as err:  # every failure is a row
        return Outcome(case.name, False, f"{type(err).__name__}")
    for want, got in zip(expected, outs):
        diff = compare(want, got)
        if diff:
            return Outcome(case.name, False, diff)
    return Outcome(case.name, len(outs) == len(expected))


def operator_rows(cases: Sequence[NodeCase], ours: dict[str, Outcome],
                  theirs: dict[str, Outcome]) -> list[dict[str, object]]:
    schemas = [s.name for s in onnx.defs.get_all_schemas_with_history()]
    groups: dict[str, list[str]] = defaultdict(list)
    for case in cases:
        groups[case_operator(case.name, schemas)].append(case.name)
    rows = []
    for op, names in sorted(groups.items()):
        reasons = Counter(ours[n].reason.split(":")[0] for n in names if not ours[n].passed)
        rows.append({"operator": op, "cases": len(names),
                     "ours": sum(ours[n].passed for n in names),
                     "onnxruntime": sum(theirs[n].passed for n in names),
                     "main reason ours fail": reasons.most_common(1)[0][0] if reasons else ""})
    return rows


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-write", action="store_true", help="print only")
    parser.add_argument("--write-known-failures", action="store_true")
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    cases = node_cases()
    start = time.perf_counter()
    ours = {c.name: run_case(c) for c in cases}
    ours_s = time.perf_counter() - start
    start = time.perf_counter()
    theirs = {c.name: run_onnxruntime(c) for c in cases}
    theirs_s = time.perf_counter() - start
    n = len(cases)
    ok_ours, ok_theirs = sum(o.passed for o in ours.values()), sum(o.passed for o in theirs.values())
    summary = (f"onnx {onnx.__version__}, {n} node cases: ours {ok_ours} ({ok_ours / n:.1%}) "
               f"in {ours_s:.1f} s; onnxruntime {_ort_version()} {ok_theirs} "
               f"({ok_theirs / n:.1%}) in {theirs_s:.1f} s; both pass {_both(ours, theirs)}, "
               f"only onnxruntime {_only(theirs, ours)}, only ours {_only(ours, theirs)}")
    rows = operator_rows(cases, ours, theirs)
    table = markdown_table(["operator", "cases", "ours", "onnxruntime", "main reason ours fail"],
                           rows)
    print(summary)
    print(table)
    if not args.no_write:
        append_results("onnx_conformance", "ONNX node-case conformance: ours vs onnxruntime",
                       summary + "\n\n" + table)
    if args.write_known_failures:
        write_known_failures(KNOWN_FAILURES, list(ours.values()))
        print(f"wrote {KNOWN_FAILURES}")


def _both(a: dict[str, Outcome], b: dict[str, Outcome]) -> int:
    return sum(a[k].passed and b[k].passed for k in a)


def _only(a: dict[str, Outcome], b: dict[str, Outcome]) -> int:
    return sum(a[k].passed and not b[k].passed for k in a)


def _ort_version() -> str:
    import onnxruntime

    return str(onnxruntime.__version__)


if __name__ == "__main__":
    main()
