"""PyTorch frontend: torch.export programs (in memory and as .pt2 files) -> Relay."""

from __future__ import annotations

import inspect
import io
import zipfile
from pathlib import Path

import pytest
from frontend_helpers import assert_close, assert_fully_spanned, infer_type, run_module

from engine.ir.errors import UnsupportedOperatorError
from engine.relay import frontend
from engine.relay.frontend import UnsafeModelError

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch


class Block(torch.nn.Module):
    def __init__(self, channels: int) -> None:
        super().__init__()
        self.conv1 = torch.nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn1 = torch.nn.BatchNorm2d(channels)
        self.conv2 = torch.nn.Conv2d(channels, channels, 3, padding=1)

    def forward(self, x):
        return torch.relu(self.conv2(torch.relu(self.bn1(self.conv1(x)))) + x)


class Net(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stem = torch.nn.Conv2d(3, 8, 3, stride=2, padding=1)
        self.layer1 = torch.nn.Sequential(Block(8), Block(8))
        self.pool = torch.nn.AdaptiveAvgPool2d(1)
        self.fc = torch.nn.Linear(8, 5)

    def forward(self, x):
        h = torch.nn.functional.max_pool2d(self.stem(x), 2)
        h = self.pool(self.layer1(h)).flatten(1)
        return torch.softmax(self.fc(h), dim=-1)


@pytest.fixture(scope="module")
def net_and_input():
    torch.manual_seed(0)
    net = Net().eval()
    with torch.no_grad():
        for module in net.modules():
            if isinstance(module, torch.nn.BatchNorm2d):
                module.running_mean.uniform_(-0.1, 0.1)
                module.running_var.uniform_(0.8, 1.2)
    x = torch.randn(1, 3, 32, 32)
    with torch.no_grad():
        expected = net(x).numpy()
    return net, x, expected


def test_module_matches_torch(net_and_input) -> None:
    net, x, expected = net_and_input
    mod, params = frontend.from_pytorch(net, [("input", (1, 3, 32, 32))])
    assert params == {}
    assert [p.name_hint for p in mod["main"].params] == ["input"]
    infer_type(mod)
    assert_close(run_module(mod, {"input": x.numpy()}), [expected])


def test_spans_are_module_scopes(net_and_input) -> None:
    net, x, _ = net_and_input
    program = torch.export.export(net, (x,))
    from engine.relay.frontend.pytorch import import_program

    result = import_program(program, [("input", (1, 3, 32, 32))])
    assert_fully_spanned(result)
    layers = {layer["name"] for layer in result.graph["layers"]}
    assert {"layer1.0.conv1", "layer1.1.bn1", "stem", "fc"} <= layers
    text = result.mod.astext()
    # the span is the module path; the layer's source is the model's own line calling it
    # (Block.forward's return)
    assert "/* layer1.0.conv1 */" in text
    line = inspect.getsourcelines(Block.forward)[1] + 1
    conv = next(entry for entry in result.graph["layers"] if entry["name"] == "layer1.0.conv1")
    assert conv["attrs"]["source"] == f"{__file__}:{line}"


def test_pt2_file_round_trip(net_and_input, tmp_path: Path) -> None:
    net, x, expected = net_and_input
    path = tmp_path / "net.pt2"
    torch.export.save(torch.export.export(net, (x,)), str(path))
    result = frontend.load(path)
    assert result.format == "pytorch"
    assert_fully_spanned(result)
    name = result.mod["main"].params[0].name_hint
    assert_close(run_module(result.mod, {name: x.numpy()}), [expected])


def _rewrite(data: bytes, change) -> bytes:
    source = zipfile.ZipFile(io.BytesIO(data))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as target:
        for info in source.infolist():
            content = change(info.filename, source.read(info.filename))
            if content is not None:
                target.writestr(info.filename, content)
    return out.getvalue()


def test_pt2_with_pickled_weights_is_refused(net_and_input, tmp_path: Path) -> None:
    net, x, _ = net_and_input
    path = tmp_path / "net.pt2"
    torch.export.save(torch.export.export(net, (x,)), str(path))

    def pickled(name: str, content: bytes) -> bytes:
        if name.endswith("weights_config.json"):
            return content.replace(b'"use_pickle": false', b'"use_pickle": true')
        return content

    with pytest.raises(UnsafeModelError, match="pickle"):
        frontend.load(_rewrite(path.read_bytes(), pickled))


def test_pt2_calling_python_code_is_refused(net_and_input, tmp_path: Path) -> None:
    net, x, _ = net_and_input
    path = tmp_path / "net.pt2"
    torch.export.save(torch.export.export(net, (x,)), str(path))

    def evil(name: str, content: bytes) -> bytes:
        if "/models/" in name:
            return content.replace(b"torch.ops.aten.relu.default", b"os.system")
        return content

    with pytest.raises(UnsafeModelError, match="non-ATen"):
        frontend.load(_rewrite(path.read_bytes(), evil))


def test_unsupported_aten_ops_are_listed() -> None:
    class Odd(torch.nn.Module):
        def forward(self, x):
            return torch.linalg.inv(x) + torch.fft.rfft(x).abs().sum()

    with pytest.raises(UnsupportedOperatorError) as info:
        frontend.from_pytorch(Odd(), [("x", (4, 4))])
    assert info.value.frontend == "pytorch"
    assert any(op.startswith("aten.linalg_inv") for op in info.value.ops)
    assert "aten.fft_rfft.default" in info.value.ops


def test_unknown_pytree_classes_become_dicts_or_tuples() -> None:
    import json

    from engine.relay.frontend.pytorch.safety import builtin_treespec

    leaf = {"type": None, "context": None, "children_spec": []}
    spec = json.dumps([1, {"type": "transformers.modeling_outputs.BaseModelOutput",
                           "context": json.dumps(["last_hidden_state", "pooler_output"]),
                           "children_spec": [leaf, {"type": "mylib.Pair",
                                                    "context": "{\"opaque\": 1}",
                                                    "children_spec": [leaf, leaf]}]}])
    _, root = json.loads(builtin_treespec(spec))
    assert root["type"] == "builtins.dict"
    assert json.loads(root["context"]) == ["last_hidden_state", "pooler_output"]
    pair = root["children_spec"][1]
    assert (pair["type"], pair["context"], len(pair["children_spec"])) == (
        "builtins.tuple", "null", 2)
    restored = torch.utils._pytree.treespec_loads(builtin_treespec(spec))
    assert restored.num_leaves == 3
