"""GET /api/compare: two runs' leaf passes aligned by name, with what each run's pass did
and whether their after-modules print the same."""

from __future__ import annotations

from typing import Any

from explorer_helpers import collect_until, start, subscribe, terminal, upload

from explorer.protocol import RunComparison, checks


def _run(sock: Any, session_id: str, **options: Any) -> str:
    run_id = start(sock, session_id, **options)
    subscribe(sock, run_id)
    collect_until(sock, lambda evs: terminal([e for e in evs if e["run_id"] == run_id]))
    return run_id


def _compare(client: Any, a: str, b: str) -> Any:
    resp = client.get(f"/api/compare?a={a}&b={b}")
    assert resp.status_code == 200, resp.get_json()
    body = resp.get_json()
    assert checks.problems(RunComparison, body) == []
    return body


def test_a_disabled_pass_is_a_one_sided_row_and_the_rest_align(client, sock):
    session = upload(client)
    full = _run(sock, session["id"], opt_level=3, build=False)
    without = _run(sock, session["id"], opt_level=3, build=False,
                   disabled_pass=["FoldScaleAxis"])
    body = _compare(client, full, without)
    rows = body["rows"]
    assert (body["a"], body["b"]) == (full, without)
    one_sided = [r for r in rows if r["b"] is None]
    # FoldScaleAxis is a Sequential: its leaf passes are the rows only `full` has.
    assert one_sided and all("FoldScaleAxis" in r["path"] for r in one_sided)
    assert "BackwardFoldScaleAxis" in {r["name"] for r in one_sided}
    assert all(r["a"] is not None for r in rows)
    both = [r for r in rows if r["a"] and r["b"]]
    assert len(both) == len(rows) - len(one_sided)
    assert not any("FoldScaleAxis" in r["path"] for r in both)
    first = both[0]
    assert first["same_after"] is True  # the first pass of both runs does the same
    for row in both:
        for side in (row["a"], row["b"]):
            assert side["after"] is not None and side["nodes"] is not None
            assert side["elapsed_ms"] >= 0
    assert isinstance(body["same_final"], bool)


def test_runs_of_two_sessions_and_explicit_lists_align_by_name(client, sock):
    a_session, b_session = upload(client), upload(client, name="other.relay")
    a = _run(sock, a_session["id"],
             passes=["ExplorerTestNoop", "ExplorerTestRebuild", "ExplorerTestNoop"])
    b = _run(sock, b_session["id"], passes=["ExplorerTestNoop", "ExplorerTestNoop"])
    rows = _compare(client, a, b)["rows"]
    assert [(r["name"], r["a"] is not None, r["b"] is not None) for r in rows] == [
        ("ExplorerTestNoop", True, True), ("ExplorerTestRebuild", True, False),
        ("ExplorerTestNoop", True, True)]
    assert rows[0]["same_after"] is True
    assert rows[1]["a"]["changed"] is True
    # The same pass's after-modules diff with the ordinary diff endpoint, across the runs.
    diff = client.get(f"/api/diff?a={rows[2]['a']['after']}&b={rows[2]['b']['after']}")
    assert diff.status_code == 200


def test_compare_names_what_is_wrong(client):
    assert client.get("/api/compare?a=x").status_code == 400
    missing = client.get("/api/compare?a=nope&b=other")
    assert missing.status_code == 404 and missing.get_json()["error"]["code"] == "not_found"


def test_the_cli_prints_the_comparison(client, sock, data_dir, capsys):
    from explorer.cli import main

    session = upload(client)
    a = _run(sock, session["id"], passes=["ExplorerTestNoop", "ExplorerTestRebuild"])
    b = _run(sock, session["id"], passes=["ExplorerTestNoop"])
    assert main(["compare", a, b, "--data", str(data_dir)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("pass") and a in lines[0] and b in lines[0]
    assert lines[1].startswith("ExplorerTestNoop") and lines[1].endswith("same")
    assert lines[2].startswith("ExplorerTestRebuild") and "not run" in lines[2]
    assert lines[-1] == "final modules: identical"  # a rebuild prints the same text
    assert main(["compare", a, "nope", "--data", str(data_dir)]) == 1
    assert "no run 'nope'" in capsys.readouterr().err
