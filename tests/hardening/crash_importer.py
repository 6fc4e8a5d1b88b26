"""A run plugin standing in for an importer bug that kills its process: a file whose
bytes start with CRASH_MARK makes the import segfault, HANG_MARK makes it hang. The
server's probe children and run workers import plugins, so the crash happens where a
real one would: in the process that parses the upload."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Any

from explorer import compiler

PLUGIN = "crash_importer"
CRASH_MARK = b"CRASH-THE-IMPORTER"
HANG_MARK = b"HANG-THE-IMPORTER"
_real_load_model = compiler.load_model


def _load_model(path: Path, shapes: Any, **options: Any) -> Any:
    head = Path(path).read_bytes()[:32]
    if head.startswith(CRASH_MARK):
        os.kill(os.getpid(), signal.SIGSEGV)
    if head.startswith(HANG_MARK):
        time.sleep(3600)
    return _real_load_model(path, shapes, **options)


compiler.load_model = _load_model
