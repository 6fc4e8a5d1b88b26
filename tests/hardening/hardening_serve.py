"""`python -m hardening_serve serve ...`: the explorer CLI with the hardening test passes
registered in the server and its run workers (run with tests/hardening on PYTHONPATH), for
the kill-and-restart tests."""

from __future__ import annotations

import sys

from hardening_helpers import PLUGIN

from explorer.cli import main

if __name__ == "__main__":
    args = sys.argv[1:]
    if args[:1] == ["serve"]:
        args += ["--plugin", PLUGIN]
    raise SystemExit(main(args))
