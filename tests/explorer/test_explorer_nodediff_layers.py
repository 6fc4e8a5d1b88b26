"""The node-level diff's summary groups the changed expressions by frontend layer (the span
source names): FuseOps on a three-layer module counts each layer's grouped calls under it."""

from __future__ import annotations

from typing import Any

from engine import relay, transform
from explorer.compiler import print_snapshot
from explorer.nodediff import NO_LAYER, node_diff
from explorer.store import Store

MODEL = """#[version = "0.0.5"]
def @main(%x: Tensor[(1, 3, 8, 8), float32], %w: Tensor[(4, 3, 3, 3), float32]) {
  %0 = nn.conv2d(%x, %w, padding=[1, 1, 1, 1]) /* conv1 */;
  %1 = nn.relu(%0) /* relu1 */;
  nn.max_pool2d(%1, pool_size=[2, 2]) /* pool1 */
}
"""


def _snapshot(store: Store, mod: Any) -> dict[str, Any]:
    text, table = print_snapshot(mod)
    return store.snapshot(store.add_snapshot("run", text, table))


def test_summary_groups_the_changes_by_layer() -> None:
    store = Store(":memory:")
    mod = transform.Sequential([relay.transform.InferType()])(relay.fromtext(MODEL))
    fused = transform.Sequential([relay.transform.FuseOps(2), relay.transform.InferType()])(mod)
    summary = node_diff(_snapshot(store, mod), _snapshot(store, fused))["summary"]
    layers = summary["layers"]
    assert {"conv1", "relu1", "pool1"} <= set(layers), layers
    # each layer's call moved into a new primitive function: one created call per layer
    for name in ("conv1", "relu1", "pool1"):
        assert layers[name].get("created", 0) >= 1, (name, layers[name])
    assert NO_LAYER not in layers or sum(layers[NO_LAYER].values()) <= summary["functions"] * 2
    counts = [sum(v.values()) for v in layers.values()]
    assert counts == sorted(counts, reverse=True)  # most changed first
    assert "in 3 layers" in summary["text"], summary["text"]
