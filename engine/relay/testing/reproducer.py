"""Reproducers: one pass, the module it ran on, and a pytest file that runs it again.

`write_reproducer(before, spec, folder)` writes a folder a colleague can run in a clean
checkout (the repository on PYTHONPATH, nothing else):

    before.relay, before.npz   the module the pass received (text + its constants)
    after.relay                what the pass makes of it (the golden text)
    inputs.npz                 seeded inputs of @main; expected.npz: the before module's
                               outputs on them (the interpreter's)
    pass.json                  the pass, its PassContext (opt level, required and disabled
                               passes, config) and the plugin modules to import
    plugins/*.py               the source of those plugin modules (they register passes)
                               and of the modules beside them that they import
    test_reproducer.py         pytest: the pass still rewrites as recorded, and its
                               result computes the expected outputs

`apply_recorded_pass(folder, mod)` is what the test (and `explorer run --passes`) calls:
plugins imported, the pass taken from the registry by name, run under the recorded
context on the typed module.
"""

from __future__ import annotations

import importlib
import json
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from engine.ir.module import IRModule
from engine.relay.interpreter import evaluate
from engine.relay.testing.numerics import ATOL, RTOL, flatten_outputs, make_inputs
from engine.relay.textfile import load_relay, module_text, same_code, save_arrays, save_relay
from engine.transform import PassContext, get_pass

SPEC_FILE = "pass.json"
TEST_FILE = "test_reproducer.py"


@dataclass(frozen=True, slots=True)
class PassSpec:
    """A pass by registered name and the context it ran in."""

    name: str
    opt_level: int = 3
    required_pass: tuple[str, ...] = ()
    disabled_pass: tuple[str, ...] = ()
    config: Mapping[str, Any] = field(default_factory=dict)
    plugins: Mapping[str, str] = field(default_factory=dict)  # module name -> source
    support: Mapping[str, str] = field(default_factory=dict)  # modules the plugins import
    seed: int = 0
    title: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"pass": self.name, "opt_level": self.opt_level,
                "required_pass": list(self.required_pass),
                "disabled_pass": list(self.disabled_pass), "config": dict(self.config),
                "plugins": sorted(self.plugins), "seed": self.seed, "title": self.title}


def apply_pass(spec_json: Mapping[str, Any], mod: IRModule) -> IRModule:
    """Run the pass `spec_json` names on `mod` (typed first) under its recorded context."""
    from engine.relay.transform import InferType

    ctx = PassContext(opt_level=spec_json["opt_level"],
                      required_pass=spec_json["required_pass"],
                      disabled_pass=spec_json["disabled_pass"], config=spec_json["config"])
    with ctx:
        the_pass = get_pass(spec_json["pass"])
        return the_pass(InferType()(mod))


def import_plugins(folder: Path, names: list[str]) -> None:
    """Import the plugin modules shipped in `folder/plugins` (they register their passes)."""
    if not names:
        return
    plugins = str(folder / "plugins")
    if plugins not in sys.path:
        sys.path.insert(0, plugins)
    for name in names:
        importlib.import_module(name)


def apply_recorded_pass(folder: Path, mod: IRModule) -> IRModule:
    spec_json = json.loads((folder / SPEC_FILE).read_text())
    import_plugins(folder, spec_json["plugins"])
    return apply_pass(spec_json, mod)


def write_reproducer(before: IRModule, spec: PassSpec, folder: Path,
                     recorded_after: str | None = None) -> dict[str, Any]:
    """Write the reproducer folder (see module docstring); returns what it found: the
    after text's size, whether the pass kept the outputs within tolerance and, given the
    text the recorded run printed after the pass, whether applying it to the written text
    makes the same code (`matches_recorded`; None when not given)."""
    folder.mkdir(parents=True, exist_ok=True)
    plugins = folder / "plugins"
    for name, source in {**spec.support, **spec.plugins}.items():
        plugins.mkdir(exist_ok=True)
        (plugins / f"{name}.py").write_text(source)
    (folder / SPEC_FILE).write_text(json.dumps(spec.to_json(), indent=2) + "\n")
    save_relay(before, folder / "before")
    parsed = load_relay(folder / "before.relay")  # what the test will run the pass on
    after = apply_recorded_pass(folder, parsed)
    after_text = module_text(after)[0]
    (folder / "after.relay").write_text(after_text)
    matches = None if recorded_after is None else same_code(after_text, recorded_after)
    inputs = make_inputs(parsed, {}, spec.seed)
    save_arrays(folder / "inputs.npz", dict(inputs))
    expected = flatten_outputs(evaluate(parsed, inputs))
    save_arrays(folder / "expected.npz", {f"out{k}": a for k, a in enumerate(expected)})
    got = flatten_outputs(evaluate(after, inputs))
    keeps = len(got) == len(expected) and all(
        g.shape == e.shape and np.allclose(g, e, rtol=RTOL, atol=ATOL)
        for g, e in zip(got, expected))
    (folder / TEST_FILE).write_text(_TEST_SOURCE.format(title=spec.title or spec.name,
                                                        name=spec.name))
    (folder / "README.md").write_text(_readme(spec, keeps, matches))
    return {"keeps_numerics": keeps, "matches_recorded": matches,
            "after_lines": after_text.count("\n")}


def _readme(spec: PassSpec, keeps: bool, matches: bool | None) -> str:
    verdict = ("The pass keeps the outputs within tolerance: the test is green." if keeps
               else "The pass changes the outputs beyond tolerance here: "
                    "test_numerics fails until the pass is fixed.")
    if matches is False:
        verdict += ("\n\nNote: made from the registry by name and applied to this text, the "
                    "pass does not make the code the recorded run printed after it (the "
                    "pipeline gave it arguments, or it reads state the text does not hold); "
                    "after.relay is what it makes here.")
    plugins = "".join(f" --plugin {name}" for name in sorted(spec.plugins))
    path = "PYTHONPATH=/path/to/the/repository" + (":plugins" if plugins else "")
    return (f"# Reproducer: {spec.title or spec.name}\n\n"
            f"Runs pass `{spec.name}` (opt_level {spec.opt_level}) on `before.relay` "
            "(constants in `before.npz`).\n\n"
            "    PYTHONPATH=/path/to/the/repository pytest -q\n"
            f"    {path} explorer run{plugins} --passes {spec.name} before.relay\n\n"
            f"{verdict}\n")


_TEST_SOURCE = '''"""Reproducer: {title}.

Runs pass {name} on before.relay (its constants in before.npz) under the PassContext of
pass.json, and checks that it still rewrites the module as recorded (after.relay) and
that the result computes the before module's outputs (expected.npz) on the seeded
inputs (inputs.npz). Needs only the repository on PYTHONPATH.
"""

from pathlib import Path

import numpy as np

from engine.relay.interpreter import evaluate
from engine.relay.testing.numerics import ATOL, RTOL, flatten_outputs
from engine.relay.testing.reproducer import apply_recorded_pass
from engine.relay.textfile import load_relay, module_text

HERE = Path(__file__).resolve().parent


def run_pass():
    return apply_recorded_pass(HERE, load_relay(HERE / "before.relay"))


def test_the_pass_rewrites_as_recorded():
    assert module_text(run_pass())[0] == (HERE / "after.relay").read_text()


def test_numerics():
    after = run_pass()
    with np.load(HERE / "inputs.npz") as archive:
        inputs = dict(archive)
    with np.load(HERE / "expected.npz") as archive:
        expected = [archive[f"out{{k}}"] for k in range(len(archive.files))]
    got = flatten_outputs(evaluate(after, inputs))
    assert len(got) == len(expected)
    for out, want in zip(got, expected):
        np.testing.assert_allclose(out, want, rtol=RTOL, atol=ATOL)
'''

__all__ = ["PassSpec", "apply_pass", "apply_recorded_pass", "import_plugins",
           "write_reproducer"]
