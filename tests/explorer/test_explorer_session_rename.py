"""A session can be renamed: PATCH /api/sessions/<sid> {"name"} stores the new name (the
sessions list and the session's detail show it, after a restart too); a blank, too long or
non-text name is refused with a sentence, control characters are dropped."""

from __future__ import annotations

from typing import Any

import pytest
from explorer_helpers import upload

from explorer import protocol as p
from explorer.protocol.checks import problems
from explorer.store import Store


def _rename(client: Any, sid: str, body: Any) -> Any:
    return client.patch(f"/api/sessions/{sid}", json=body)


def test_rename_is_stored_and_listed(client: Any, data_dir: Any) -> None:
    sid = upload(client)["id"]
    resp = _rename(client, sid, {"name": "  my\u202e MLP\x07 "})
    assert resp.status_code == 200, resp.get_json()
    assert problems(p.SessionRenamed, resp.get_json()) == []
    assert resp.get_json()["session"]["name"] == "my MLP"
    assert client.get(f"/api/sessions/{sid}").get_json()["session"]["name"] == "my MLP"
    listed = {s["id"]: s["name"] for s in client.get("/api/sessions").get_json()["sessions"]}
    assert listed[sid] == "my MLP"
    # persisted in the store (another connection to the database reads it)
    store = Store(data_dir / "explorer.sqlite3")
    try:
        assert store.session(sid)["name"] == "my MLP"
    finally:
        store.close()


@pytest.mark.parametrize(("body", "words"), [
    ({"name": "   "}, "must not be empty"),
    ({"name": "x" * 256}, "at most 255"),
    ({"name": 7}, "must be a string"),
    ({"title": "x"}, '{"name": "new name"}'),
])
def test_bad_names_are_refused(client: Any, body: Any, words: str) -> None:
    sid = upload(client)["id"]
    resp = _rename(client, sid, body)
    assert resp.status_code == 400
    error = resp.get_json()["error"]
    assert error["code"] in ("bad_name", "bad_payload") and words in error["message"], error
    assert client.get(f"/api/sessions/{sid}").get_json()["session"]["name"] == "model.relay"


def test_renaming_an_unknown_session_is_404(client: Any) -> None:
    assert _rename(client, "nope", {"name": "x"}).status_code == 404
