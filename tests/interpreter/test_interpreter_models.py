"""ResNet-50, MobileNetV2 and BERT-2 built with the relay API evaluate to finite outputs."""

from __future__ import annotations

import numpy as np
import pytest

from engine import relay
from engine.relay.interpreter import evaluate
from engine.relay.testing import bert, mobilenet, resnet

pytestmark = pytest.mark.slow


def _image() -> np.ndarray:
    return np.random.default_rng(0).standard_normal((1, 3, 224, 224)).astype("float32")


def test_resnet50_evaluates_to_a_distribution() -> None:
    mod, params = resnet.get_workload(num_layers=50)
    assert mod["main"].checked_type.ret_type == relay.TensorType((1, 1000))
    out = evaluate(mod, {"data": _image(), **params})
    assert out.shape == (1, 1000) and np.isfinite(out).all()
    assert abs(float(out.sum()) - 1.0) < 1e-4


def test_mobilenetv2_evaluates() -> None:
    mod, params = mobilenet.get_workload()
    out = evaluate(mod, {"data": _image(), **params})
    assert out.shape == (1, 1000) and np.isfinite(out).all() and out.std() > 0


def test_bert2_evaluates_both_outputs() -> None:
    mod, params = bert.get_workload(num_layers=2)
    rng = np.random.default_rng(0)
    inputs = {"input_ids": rng.integers(0, 30522, (1, 128)).astype("int32"),
              "attention_mask": np.ones((1, 128), "int32"),
              "token_type_ids": np.zeros((1, 128), "int32"), **params}
    seq, pooled = evaluate(mod, inputs)
    assert seq.shape == (1, 128, 768) and pooled.shape == (1, 768)
    assert np.isfinite(seq).all() and np.isfinite(pooled).all()
    # layer_norm output: each token has ~zero mean before the affine params
    assert np.abs(pooled).max() <= 1.0


def test_small_bert_masking_changes_the_output() -> None:
    mod, params = bert.get_workload(seq_len=8, num_layers=1, hidden=16, heads=2, ffn=32,
                                    vocab=50)
    ids = np.arange(8, dtype="int32")[None]
    full = evaluate(mod, {"input_ids": ids, "attention_mask": np.ones((1, 8), "int32"),
                          "token_type_ids": np.zeros((1, 8), "int32"), **params})[0]
    half = evaluate(mod, {"input_ids": ids,
                          "attention_mask": np.array([[1] * 4 + [0] * 4], "int32"),
                          "token_type_ids": np.zeros((1, 8), "int32"), **params})[0]
    assert not np.allclose(full[0, 0], half[0, 0])
