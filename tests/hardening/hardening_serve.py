"""`python -m hardening_serve serve ...`: the explorer CLI with the hardening test passes
registered (run with tests/hardening on PYTHONPATH), for the kill-and-restart tests."""

from __future__ import annotations

import sys

import hardening_helpers  # noqa: F401  (registers the test passes)

from explorer.cli import main

if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
