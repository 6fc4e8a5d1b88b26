"""The JS half of the protocol: static/src/protocol.gen.js is generated from
explorer/protocol/ and committed as generated; every protocol name the front end uses
exists in the Python declarations; protocol.js loads in node and re-exports them."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from explorer import protocol as p
from explorer.protocol import js_gen

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "static" / "src"
GENERATED = set(js_gen.render())

# Each namespace object of protocol.js and the names the Python declarations give it.
DECLARED = {
    "EV": js_gen.by_upper_name(list(p.EVENT_PAYLOADS)),
    "C2S": js_gen.by_upper_name(p.CLIENT_EVENTS),
    "S2C": {"RUN_EVENT": p.RUN_EVENT},
    "RUN_STATUS": js_gen.by_upper_name(p.RUN_STATUSES),
    "ACTION": js_gen.by_upper_name(p.BACKTRACE_ACTIONS),
}
USE = re.compile(r"\b(" + "|".join(DECLARED) + r")\.([A-Za-z_]\w*)")
IMPORT = re.compile(r"import\s*\{([^}]*)\}\s*from\s*\"[./]*/?protocol\.js\"")


def _sources() -> list[Path]:
    return [f for f in sorted(SRC.rglob("*.js")) if f not in GENERATED]


def test_the_generated_file_is_current():
    for path, expected in js_gen.render().items():
        if not path.exists() or path.read_text() != expected:
            pytest.fail(f"{path.relative_to(ROOT)} is stale: run `{js_gen.COMMAND}`")


def test_every_protocol_name_used_in_static_src_is_declared():
    unknown = []
    for path in _sources():
        for number, line in enumerate(path.read_text().splitlines(), 1):
            for obj, name in USE.findall(line):
                if name not in DECLARED[obj]:
                    unknown.append(f"{path.relative_to(ROOT)}:{number}: {obj}.{name}")
    assert not unknown, "not in explorer/protocol: " + ", ".join(unknown)


def _imported_names() -> dict[str, str]:
    """name -> first file importing it from protocol.js."""
    found: dict[str, str] = {}
    for path in _sources():
        for group in IMPORT.findall(path.read_text()):
            for item in group.split(","):
                name = item.strip().split(" as ")[0].strip()
                if name:
                    found.setdefault(name, str(path.relative_to(ROOT)))
    return found


SCRIPT = """
import(process.argv[1]).then((m) => {
  console.log(JSON.stringify({
    exports: Object.keys(m).sort(),
    EV: m.EV, C2S: m.C2S, S2C: m.S2C, RUN_STATUS: m.RUN_STATUS, ACTION: m.ACTION,
    NAMESPACE: m.NAMESPACE, FORMATS: m.FORMATS, UPLOAD_ACCEPT: m.UPLOAD_ACCEPT,
    TERMINAL_EVENTS: [...m.TERMINAL_EVENTS].sort(), TEDD_VIEWS: m.TEDD_VIEWS,
    frozen: Object.isFrozen(m.EV),
  }));
});
"""


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_protocol_js_loads_and_carries_the_python_names():
    module = (SRC / "protocol.js").as_uri()
    done = subprocess.run(["node", "--input-type=module", "-e", SCRIPT, module],
                          capture_output=True, text=True, timeout=60, check=True)
    got = json.loads(done.stdout)
    for obj, names in DECLARED.items():
        assert got[obj] == names, obj
    assert got["NAMESPACE"] == p.NAMESPACE and got["frozen"]
    assert got["FORMATS"] == list(p.MODEL_FORMATS)
    assert got["UPLOAD_ACCEPT"].split(",") == [s for g in p.UPLOAD_EXTENSIONS.values()
                                               for s in g]
    assert got["TERMINAL_EVENTS"] == sorted(p.TERMINAL_EVENTS)
    assert [key for key, _ in got["TEDD_VIEWS"]] == list(p.TEDD_VIEWS)
    missing = {n: f for n, f in _imported_names().items() if n not in got["exports"]}
    assert not missing, f"imported from protocol.js but not exported: {missing}"


def test_every_payload_has_a_typedef():
    text = "".join(path.read_text() for path in sorted(GENERATED))
    for declared in js_gen.declarations(*js_gen.DECLARING):
        assert f"@typedef {{Object}} {declared.__name__}\n" in text
    for event_type, payload in p.EVENT_PAYLOADS.items():
        assert f"@property {{{payload.__name__}}} {event_type}\n" in text
