"""The diff's scope (static/src/scope.js, run with node): a printed module's functions are
@main and each fused primitive kernel, named by operator chain so the name survives a pass
that renumbers the module; a scoped side is exactly that function's lines."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from shared_models import TWO_CONVS_RELAY

from engine import relay, transform
from explorer.compiler import print_snapshot

ROOT = Path(__file__).resolve().parents[2]
MODULE = (ROOT / "static" / "src" / "scope.js").as_uri()
SCRIPT = """
import(process.argv[1]).then(({ functionsOf, scopeText }) => {
  const texts = JSON.parse(require("fs").readFileSync(0, "utf8"));
  console.log(JSON.stringify(texts.map((t) => {
    const fns = functionsOf(t);
    return { fns, parts: fns.map((f) => scopeText(t, fns, f.key)) };
  })));
});
"""
pytestmark = pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")


def scopes(*texts: str) -> list[dict[str, Any]]:
    done = subprocess.run(["node", "--input-type=commonjs", "-e", SCRIPT, MODULE],
                          input=json.dumps(texts), capture_output=True, text=True, timeout=60,
                          check=True)
    return list(json.loads(done.stdout))


def test_functions_of_a_fused_module_and_their_text() -> None:
    mod = transform.Sequential([relay.transform.InferType()])(relay.fromtext(TWO_CONVS_RELAY))
    fused = transform.Sequential([relay.transform.FuseOps(2), relay.transform.InferType()])(mod)
    plain_text, _ = print_snapshot(mod)
    fused_text, _ = print_snapshot(fused)
    # a pass that only renumbers: the same module printed after a copy pass
    plain, after = scopes(plain_text, fused_text)
    assert [f["key"] for f in plain["fns"]] == ["@main"]
    keys = [f["key"] for f in after["fns"]]
    assert keys[0] == "@main"
    fused_keys = keys[1:]
    # conv2d+relu twice (ranked #0, #1), the pool alone
    assert "fused:nn.conv2d,nn.relu#0" in fused_keys and "fused:nn.conv2d,nn.relu#1" in fused_keys
    assert any(k.startswith("fused:nn.max_pool2d") for k in fused_keys)
    lines = fused_text.splitlines(keepends=True)
    for fn, part in zip(after["fns"], after["parts"], strict=True):
        assert part["text"] == "".join(lines[fn["from"]:fn["to"] + 1])
        assert part["offset"] == len("".join(lines[:fn["from"]]))
        assert part["text"].splitlines()[-1].lstrip().startswith("}")  # the closing brace
        if fn["key"] != "@main":
            assert "Primitive=1" in part["text"].splitlines()[0]
            assert len(re.findall(r"^\s*%\S+ = fn \(", part["text"], re.M)) == 1
    second = next(f for f in after["fns"] if f["key"] == "fused:nn.conv2d,nn.relu#1")
    assert second["label"] == "fused nn.conv2d → nn.relu [2]"
