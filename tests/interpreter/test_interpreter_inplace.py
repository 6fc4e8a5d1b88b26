"""The interpreter reuses an intermediate array for an op's result (FNumpyInplace) only at
its last use: inputs, constants and values other ops still read are never overwritten."""

from __future__ import annotations

import numpy as np
import pytest

from engine import relay
from engine.relay import interpreter
from engine.relay.interpreter import evaluate


@pytest.fixture
def donations(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    seen: list[bool] = []
    decide = interpreter._donated

    def spy(args: list[np.ndarray]) -> bool:
        seen.append(decide(args))
        return seen[-1]
    monkeypatch.setattr(interpreter, "_donated", spy)
    return seen


def test_inputs_and_constants_are_never_overwritten(donations: list[bool]) -> None:
    x = relay.var("x", shape=(4,))
    c = relay.const(np.array([-1.0, 2.0, 7.0, 3.0], "float32"))
    func = relay.Function([x], relay.clip(x, 0.0, 6.0) + relay.clip(c, 0.0, 6.0))
    data = np.array([-2.0, 1.0, 9.0, 5.0], "float32")
    kept = data.copy()
    out = evaluate(func, [data])
    np.testing.assert_array_equal(out, [0.0, 3.0, 12.0, 8.0])
    np.testing.assert_array_equal(data, kept)
    np.testing.assert_array_equal(evaluate(func, [data]), out)  # the constant is intact
    assert donations[:2] == [False, False]  # the input and the constant themselves


def test_a_value_read_twice_is_reused_only_by_its_last_reader(donations: list[bool]) -> None:
    x = relay.var("x", shape=(2, 3))
    y = x * relay.const(2.0)              # a fresh intermediate, read by two ops
    z = relay.nn.relu(y)                  # may not overwrite y: the add still reads it
    func = relay.Function([x], relay.add(relay.clip(z, 0.0, 5.0), y))
    data = np.arange(-3, 3, dtype="float32").reshape(2, 3)
    want = np.clip(np.maximum(data * 2, 0), 0, 5) + data * 2
    np.testing.assert_array_equal(evaluate(func, [data]), want)
    assert True in donations and False in donations


def test_batch_norm_in_place_matches_the_copying_evaluation(
        monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(0)
    x = relay.var("x", shape=(2, 3, 4, 4))
    params = [relay.var(name, shape=(3,)) for name in ("g", "b", "m", "v")]
    bn = relay.nn.batch_norm(relay.nn.relu(x), *params, epsilon=1e-3)[0]
    func = relay.Function([x, *params], relay.clip(bn, -1.0, 1.0))
    args = [rng.standard_normal((2, 3, 4, 4)).astype("float32"),
            *(rng.random(3).astype("float32") + 0.5 for _ in params)]
    fast = evaluate(func, args)
    monkeypatch.setattr(interpreter, "_donated", lambda args: False)
    np.testing.assert_allclose(fast, evaluate(func, args), rtol=1e-6)
