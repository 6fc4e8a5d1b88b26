"""Shapes computed at run time, as torch.onnx writes them: with a dynamic batch, a
`x.reshape(x.shape[0], -1)` becomes Shape -> Gather -> Concat -> Reshape, whose target is
only known when the model runs. The import keeps it dynamic (relay.dyn.reshape over `?`
dims), the interpreter computes it for any batch, and pinning the batch makes it static."""

from __future__ import annotations

import io
import warnings

import numpy as np
import onnx
import pytest

from engine.relay import interpreter
from engine.relay.frontend import from_onnx

torch = pytest.importorskip("torch")


class Head(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3, padding=1)
        self.fc = torch.nn.Linear(4 * 6 * 6, 5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.conv(x))
        return self.fc(y.reshape(y.shape[0], -1))


@pytest.fixture(scope="module")
def exported() -> tuple[onnx.ModelProto, torch.nn.Module]:
    torch.manual_seed(0)
    model = Head().eval()
    buffer = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (torch.randn(2, 3, 6, 6),), buffer, dynamo=False,
                          input_names=["x"], output_names=["y"],
                          dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}})
    proto = onnx.load_from_string(buffer.getvalue())
    assert "Shape" in {n.op_type for n in proto.graph.node}  # the target is computed
    return proto, model


def _torch(model: torch.nn.Module, x: np.ndarray) -> np.ndarray:
    with torch.no_grad():
        return model(torch.from_numpy(x)).numpy()


def test_a_reshape_target_computed_at_run_time_runs_for_any_batch(exported) -> None:
    proto, model = exported
    mod, params = from_onnx(proto)
    assert "dyn.reshape(" in mod.astext()  # not folded: the batch is unknown
    for batch in (1, 3):
        x = np.random.default_rng(batch).standard_normal((batch, 3, 6, 6)).astype("float32")
        got = np.asarray(interpreter.evaluate(mod, {"x": x, **params}))
        np.testing.assert_allclose(got, _torch(model, x), rtol=1e-3, atol=1e-5)


def test_pinning_the_batch_makes_the_reshape_static(exported) -> None:
    from engine import relay

    proto, model = exported
    mod, params = from_onnx(proto, shape={"x": [4, 3, 6, 6]})
    optimized = relay.optimize(mod, target="llvm", params=params)[0]
    assert "dyn." not in optimized.astext()
    x = np.random.default_rng(4).standard_normal((4, 3, 6, 6)).astype("float32")
    got = np.asarray(interpreter.evaluate(mod, {"x": x, **params}))
    np.testing.assert_allclose(got, _torch(model, x), rtol=1e-3, atol=1e-5)
