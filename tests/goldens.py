"""Golden texts: compare with a stored file; a missing or different file fails the test.

Regenerate with `pytest --update-goldens` (or `UPDATE_GOLDENS=1 pytest ...`): the files
are then written instead of compared. A missing golden is never created silently.
"""

from __future__ import annotations

import os
from pathlib import Path

HOW = "regenerate with `pytest --update-goldens` (or UPDATE_GOLDENS=1)"

_update = [os.environ.get("UPDATE_GOLDENS", "") not in ("", "0")]


def set_update(update: bool) -> None:
    """Called by tests/conftest.py with the `--update-goldens` option."""
    _update[0] = _update[0] or update


def check_golden(path: Path, text: str) -> None:
    """Assert `text` equals the golden file `path` (or write it, when updating)."""
    if _update[0]:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return
    if not path.exists():
        raise AssertionError(f"golden file {path} is missing; {HOW}")
    assert text == path.read_text(), f"golden {path.name} differs; {HOW}"
