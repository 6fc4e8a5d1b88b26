"""The constants of the hand-written TVM-printed fixtures, from a seed, and numpy versions
of the two networks (written here independently of the engine's kernels).

The fixtures' `#[metadata]` sections hold these arrays in TVM's format; regenerate them with
`python tests/relay_text/tvm_fixtures.py` after changing a shape or the seed.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np

HERE = Path(__file__).parent
FIXTURES = {"conv_bn_relu": HERE / "conv_bn_relu.relay", "bert_block": HERE / "bert_block.relay"}

_BN = [("gamma", "pos"), ("beta", "normal"), ("mean", "normal"), ("var", "pos")]
SPECS: dict[str, list[tuple[tuple[int, ...], str]]] = {
    "conv_bn_relu": [((8, 3, 3, 3), "normal"), *[((8,), k) for _, k in _BN],
                     ((8, 8, 3, 3), "normal"), *[((8,), k) for _, k in _BN],
                     ((10, 8), "normal"), ((10,), "normal")],
    "bert_block": [((32, 16), "normal"), ((8, 16), "normal"), ((16,), "pos"), ((16,), "normal"),
                   *[s for _ in range(4) for s in (((16, 16), "normal"), ((16,), "normal"))],
                   ((16,), "pos"), ((16,), "normal"), ((32, 16), "normal"), ((32,), "normal"),
                   ((16, 32), "normal"), ((16,), "normal"), ((16,), "pos"), ((16,), "normal")],
}


def constants(name: str) -> list[np.ndarray]:
    """The fixture's meta[relay.Constant] list, seeded."""
    rng = np.random.default_rng(14)
    out = []
    for shape, kind in SPECS[name]:
        if kind == "pos":
            out.append(rng.uniform(0.5, 1.5, shape).astype("float32"))
        else:
            out.append((0.3 * rng.standard_normal(shape)).astype("float32"))
    return out


def inputs(name: str) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(7)
    if name == "conv_bn_relu":
        return {"data": rng.standard_normal((1, 3, 16, 16)).astype("float32")}
    mask = np.zeros((1, 1, 8), "float32")
    mask[..., 6:] = -10000.0
    return {"input_ids": rng.integers(0, 32, (8,)).astype("int32"), "attention_mask": mask}


# --- numpy references ------------------------------------------------------------------------
def _conv3x3(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    n, c, h, wd = x.shape
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    out = np.zeros((n, w.shape[0], h, wd), "float64")
    for i in range(3):
        for j in range(3):
            out += np.einsum("nchw,oc->nohw", xp[:, :, i:i + h, j:j + wd], w[:, :, i, j])
    return out


def _bn(x: np.ndarray, g, b, m, v) -> np.ndarray:
    s = (None, slice(None), None, None)
    return (x - m[s]) / np.sqrt(v[s] + 1e-5) * g[s] + b[s]


def conv_bn_relu(data: np.ndarray, c: list[np.ndarray]) -> np.ndarray:
    y = np.maximum(_bn(_conv3x3(data, c[0]), *c[1:5]), 0)
    y = y.reshape(1, 8, 8, 2, 8, 2).max(axis=(3, 5))
    z = np.maximum(_bn(_conv3x3(y, c[5]), *c[6:10]) + y, 0)
    logits = z.mean(axis=(2, 3)) @ c[10].T + c[11]
    e = np.exp(logits - logits.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _ln(x: np.ndarray, g: np.ndarray, b: np.ndarray) -> np.ndarray:
    mu = x.mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(((x - mu) ** 2).mean(-1, keepdims=True) + 1e-12) * g + b


def bert_block(input_ids: np.ndarray, attention_mask: np.ndarray, c: list[np.ndarray]
               ) -> np.ndarray:
    x = _ln(c[0][input_ids] + c[1], c[2], c[3])
    q, k, v = ((x @ c[i].T + c[i + 1]).reshape(8, 2, 8).transpose(1, 0, 2) for i in (4, 6, 8))
    scores = q @ k.transpose(0, 2, 1) / math.sqrt(8) + attention_mask
    p = np.exp(scores - scores.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    att = (p @ v).transpose(1, 0, 2).reshape(8, 16) @ c[10].T + c[11]
    h = _ln(att + x, c[12], c[13])
    f = h @ c[14].T + c[15]
    f = f * 0.5 * (1 + np.vectorize(math.erf)(f / math.sqrt(2)))
    return _ln(f @ c[16].T + c[17] + h, c[18], c[19])


REFERENCES = {"conv_bn_relu": conv_bn_relu, "bert_block": bert_block}


def regenerate() -> None:
    from engine.relay.parser.tvm_json import meta_section

    for name, path in FIXTURES.items():
        text = re.split(r"\n#\[metadata\]\n", path.read_text())[0].rstrip("\n")
        section = meta_section({"relay.Constant": constants(name)})
        path.write_text(f"{text}\n\n#[metadata]\n{section}\n")


if __name__ == "__main__":
    regenerate()
