"""The golden-file helper: a missing golden fails (never silently created)."""

from __future__ import annotations

from pathlib import Path

import goldens
import pytest


def test_missing_golden_fails_and_says_how_to_regenerate(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    monkeypatch.setattr(goldens, "_update", [False])
    path = tmp_path / "absent.txt"
    with pytest.raises(AssertionError, match="missing.*--update-goldens"):
        goldens.check_golden(path, "text")
    assert not path.exists()


def test_different_golden_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(goldens, "_update", [False])
    path = tmp_path / "g.txt"
    path.write_text("old")
    with pytest.raises(AssertionError, match="differs.*--update-goldens"):
        goldens.check_golden(path, "new")
    goldens.check_golden(path, "old")


def test_update_mode_writes_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(goldens, "_update", [True])
    path = tmp_path / "sub" / "g.txt"
    goldens.check_golden(path, "fresh")
    assert path.read_text() == "fresh"
