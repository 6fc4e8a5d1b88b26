"""Shapes computed at run time, as torch.onnx writes them: with a dynamic batch, a
`x.reshape(x.shape[0], -1)` becomes Shape -> Gather -> Concat -> Reshape, whose target is
only known when the model runs. The import keeps it dynamic (relay.dyn.reshape over `?`
dims), the interpreter computes it for any batch, and pinning the batch makes it static."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from shared_models import dynamic_batch_head

from engine.relay import interpreter
from engine.relay.frontend import from_onnx

torch = pytest.importorskip("torch")


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> tuple[onnx.ModelProto, torch.nn.Module]:
    path = tmp_path_factory.mktemp("head") / "head.onnx"
    model = dynamic_batch_head(path)
    proto = onnx.load(str(path))
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
