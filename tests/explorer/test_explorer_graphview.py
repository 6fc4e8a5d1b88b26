"""The Graph view's data (explorer.graphview, GET /api/snapshots/<id>/graph): a snapshot's
dataflow read back from its text and source map. After FuseOps each fused function is a
group whose parameters are replaced by the call's arguments; layer paths group nodes; a
long chain is split into runs of consecutive nodes so that no group shows too many boxes."""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from explorer_helpers import collect_until, start, subscribe, terminal, upload
from shared_models import chain_relay_text

import engine as tvm
from engine import relay, transform
from explorer.compiler import print_snapshot
from explorer.graphview import MAX_CHILDREN, GraphIndex, build_graph, layer_path
from explorer.protocol.checks import problems
from explorer.protocol.graph import GraphMembers, GraphSearch, SnapshotGraph

MODEL = """#[version = "0.0.5"]
def @main(%x: Tensor[(1, 3, 8, 8), float32], %w: Tensor[(4, 3, 3, 3), float32]) {
  %0 = nn.conv2d(%x, %w, padding=[1, 1, 1, 1]) /* block1/conv */;
  %1 = nn.relu(%0) /* block1/relu */;
  %2 = nn.max_pool2d(%1, pool_size=[2, 2]) /* block1/pool */;
  nn.relu(%2) /* head/relu */
}
"""


def _graph(mod: Any) -> tuple[list[dict[str, Any]], list[dict[str, Any]], str]:
    text, table = print_snapshot(mod)
    nodes, groups = build_graph(text, table.to_json())
    return [dict(n) for n in nodes], [dict(g) for g in groups], text


def _typed() -> Any:
    return transform.Sequential([relay.transform.InferType()])(relay.fromtext(MODEL))


def test_nodes_and_edges_follow_the_dataflow() -> None:
    nodes, groups, text = _graph(_typed())
    by_label = {n["label"]: n for n in nodes if n["kind"] == "call" and n["label"] != "nn.relu"}
    conv, pool = by_label["nn.conv2d"], by_label["nn.max_pool2d"]
    relus = [n for n in nodes if n["label"] == "nn.relu"]
    inputs = {n["label"]: n for n in nodes if n["kind"] == "var"}
    assert set(inputs) == {"%x", "%w"}
    assert conv["inputs"] == [inputs["%x"]["id"], inputs["%w"]["id"]]
    assert conv["type"] == "Tensor[(1, 4, 8, 8), float32]" and conv["spans"] == ["block1/conv"]
    assert text.splitlines()[conv["line"] - 1].lstrip().startswith("%0 = nn.conv2d(")
    first_relu = next(r for r in relus if r["inputs"] == [conv["id"]])
    assert pool["inputs"] == [first_relu["id"]]
    # layer paths: block1's three calls in one group, head's call alone stays at the top
    block1 = [i for i, g in enumerate(groups) if g["label"] == "block1"]
    assert len(block1) == 1 and groups[block1[0]]["kind"] == "layer"
    assert {n["group"] for n in (conv, first_relu, pool)} == set(block1)
    assert groups[block1[0]]["size"] == 3


def test_fused_functions_are_groups_of_their_body() -> None:
    fused = transform.Sequential([relay.transform.FuseOps(2), relay.transform.InferType()])(_typed())
    nodes, groups, text = _graph(fused)
    fns = [(i, g) for i, g in enumerate(groups) if g["kind"] == "function"]
    assert len(fns) >= 2, groups
    # no call of a function and no fused parameter is a node: the body stands for them
    assert not [n for n in nodes if n["kind"] == "call" and n["op"] is None]
    assert {n["label"] for n in nodes if n["kind"] == "var"} == {"%x", "%w"}
    conv = next(n for n in nodes if n["op"] == "nn.conv2d")
    xw = {n["id"] for n in nodes if n["kind"] == "var"}
    assert set(conv["inputs"]) == xw  # the call's arguments, not %p0 / %p1
    conv_fn = next(i for i, g in fns if conv["group"] == i)
    assert groups[conv_fn]["label"].startswith("fn conv2d")
    # the function's node id and its call's name the group (the text's `fn (` and `%k(`)
    fn_id, call_id = groups[conv_fn]["node_ids"]
    assert fn_id != call_id
    # the pool reads the conv function's result (its relu) across the group boundary
    pool = next(n for n in nodes if n["op"] == "nn.max_pool2d")
    relu = next(n for n in nodes if n["op"] == "nn.relu" and n["group"] == conv_fn)
    assert pool["inputs"] == [relu["id"]]


SHARED_FN = """#[version = "0.0.5"]
def @main(%x: Tensor[(1, 4), float32]) {
  %0 = fn (%p0: Tensor[(1, 4), float32], Primitive=1) {
    %1 = nn.relu(%p0) /* shared/relu */;
    tanh(%1) /* shared/tanh */
  };
  %2 = %0(%x);
  %3 = %0(%2);
  add(%2, %3) /* head/add */
}
"""


def test_a_function_called_twice_has_edges_in_and_out() -> None:
    """A fused function called more than once stays one group: its parameter is fed by each
    call's argument and each call reads the body's result, so edges enter and leave it."""
    mod = transform.Sequential([relay.transform.InferType()])(relay.fromtext(SHARED_FN))
    nodes, groups, _ = _graph(mod)
    (fn,) = [i for i, g in enumerate(groups) if g["kind"] == "function"]
    inside = {n["id"]: n for n in nodes if n["group"] == fn}
    param = next(n for n in inside.values() if n["kind"] == "var")
    tanh = next(n for n in inside.values() if n["op"] == "tanh")
    x = next(n for n in nodes if n["label"] == "%x")
    calls = [n for n in nodes if n["kind"] == "call" and n["op"] is None]
    assert len(calls) == 2 and all(c["group"] != fn for c in calls)
    assert all(c["inputs"] == [tanh["id"]] and c["label"] == "call fn relu+tanh" for c in calls)
    assert param["inputs"] == [x["id"], calls[0]["id"]]  # %0(%x), then %0(%2)
    into = [i for n in inside.values() for i in n["inputs"] if i not in inside]
    out_of = [n for n in nodes if n["group"] != fn and set(n["inputs"]) & set(inside)]
    assert into and len(out_of) == 2


LOOP = """#[version = "0.0.5"]
def @main(%x: Tensor[(2, 2), float32], %n: int64) {
  %0 = {
    let %loop: fn (int64, Tensor[(2, 2), float32]) -> Tensor[(2, 2), float32] =
      fn (%i: int64, %y: Tensor[(2, 2), float32]) -> Tensor[(2, 2), float32] {
      %1 = less(%i, %n) /* loop/less */;
      if (%1) {
        %2 = add(%i, 1i64) /* loop/add */;
        %3 = nn.relu(%y) /* loop/relu */;
        %loop(%2, %3) /* loop */
      } else {
        %y
      }
    };
    %loop(0i64, %x) /* loop */
  };
  let %z = add(%0, %x) /* head/add */;
  multiply(%z, %z) /* head/mul */
}
"""


def test_let_bound_names_and_a_loop_function_read_their_values() -> None:
    """An imported ONNX Loop is a let-bound function that calls itself by its name: the
    calls are edges into the function's group, not operands naming the let's variable (which
    is no node); a let's other uses read its value."""
    mod = transform.Sequential([relay.transform.InferType()])(relay.fromtext(LOOP))
    nodes, groups, _ = _graph(mod)
    ids = {n["id"] for n in nodes}
    assert [(n["label"], i) for n in nodes for i in n["inputs"] if i not in ids] == []
    assert all(n["id"] not in n["inputs"] for n in nodes)
    (fn,) = [i for i, g in enumerate(groups) if g["kind"] == "function"]
    calls = [n for n in nodes if n["kind"] == "call" and n["op"] is None]
    branch = next(n for n in nodes if n["kind"] == "if")
    assert len(calls) == 2 and all(c["inputs"] == [branch["id"]] for c in calls)
    assert all(c["label"].startswith("call fn ") for c in calls)
    i, y = (next(n for n in nodes if n["label"] == name) for name in ("%i", "%y"))
    assert i["group"] == y["group"] == fn and len(y["inputs"]) == 2  # first call, recursion
    add = next(n for n in nodes if n["op"] == "add" and n["spans"] == ["head/add"])
    mul = next(n for n in nodes if n["op"] == "multiply")
    assert mul["inputs"] == [add["id"], add["id"]]


def test_a_long_chain_is_split_into_runs() -> None:
    x = relay.var("x", shape=(1, 4))
    y = x
    for k in range(MAX_CHILDREN * 5 + 3):
        y = relay.nn.relu(y) if k % 2 else relay.tanh(y)
    mod = transform.Sequential([relay.transform.InferType()])(
        tvm.IRModule.from_expr(relay.Function([x], y)))
    nodes, groups, _ = _graph(mod)
    assert len(nodes) == MAX_CHILDREN * 5 + 4
    children: dict[int, int] = {}
    for n in nodes:
        children[n["group"]] = children.get(n["group"], 0) + 1
    for i, _ in enumerate(groups):
        children[i] = children.get(i, 0) + sum(1 for g in groups if g["parent"] == i)
    children[-1] = children.get(-1, 0) + sum(1 for g in groups if g["parent"] == -1)
    assert max(children.values()) <= MAX_CHILDREN, children
    runs = [g for g in groups if g["kind"] == "range"]
    assert runs and all(" … " in g["label"] for g in runs)


def test_layer_path() -> None:
    assert layer_path("/encoder/layer.3/attention/self/MatMul") == ("encoder", "layer.3", "attention", "self")
    assert layer_path("layer1.0.conv1") == ("layer1", "0")
    assert layer_path("relu") == ()


def test_graph_endpoint(client: Any, sock: Any) -> None:
    session = upload(client)
    run_id = start(sock, session["id"], passes=["InferType", "FuseOps"])
    subscribe(sock, run_id)
    events = collect_until(sock, terminal)
    fuse = next(e["data"] for e in events if e["type"] == "pass_finished" and e["data"]["name"] == "FuseOps")
    infer = next(e["data"] for e in events if e["type"] == "pass_finished" and e["data"]["name"] == "InferType")
    # the graph before FuseOps starts building the next snapshot's (after FuseOps) behind it
    assert infer["after"] + 1 == fuse["after"]
    assert client.get(f"/api/snapshots/{infer['after']}/graph").status_code == 200
    cache = client.application.extensions["explorer.graphs"]
    for _ in range(200):
        if cache.cached(fuse["after"]):
            break
        time.sleep(0.05)
    assert cache.cached(fuse["after"])
    resp = client.get(f"/api/snapshots/{fuse['after']}/graph")
    assert resp.status_code == 200 and resp.mimetype == "application/json"
    body = resp.get_json()
    assert body["snapshot_id"] == fuse["after"]
    assert {n["op"] for n in body["nodes"] if n["kind"] == "call"} == {"add", "nn.relu", "multiply"}
    assert any(g["kind"] == "function" for g in body["groups"])
    ids = {n["id"] for n in body["nodes"]}
    assert all(i in ids for n in body["nodes"] for i in n["inputs"])
    again = client.get(f"/api/snapshots/{fuse['after']}/graph")
    assert again.data == resp.data  # cached: the same bytes
    missing = client.get("/api/snapshots/999999/graph")
    assert missing.status_code == 404 and missing.get_json()["error"]["code"] == "not_found"


MODEL_JS = (Path(__file__).resolve().parents[2] / "static" / "src" / "graph" / "model.js").as_uri()
SCRIPT = """
import(process.argv[1]).then(({ GraphModel }) => {
  const { graph, budget } = JSON.parse(require("fs").readFileSync(0, "utf8"));
  const m = new GraphModel(graph);
  m.openDefault(budget);
  const count = (boxes) => boxes.reduce((n, b) => n + 1 + count(b.children), 0);
  const opened = { boxes: count(m.boxes()), edges: m.edges() };
  const conv = graph.nodes.find((n) => n.op === "nn.conv2d");
  const before = m.ownerKey(conv.id);
  const revealed = m.reveal(conv.id);
  const fn = graph.groups.findIndex((g) => g.kind === "function");
  // the edges between the boxes shown, counted the slow way: each operand's owner box
  const slow = {};
  for (const n of graph.nodes) for (const src of n.inputs) {
    const a = m.byId.has(src) ? m.ownerKey(src) : null; const b = m.ownerKey(n.id);
    if (a && b && a !== b) slow[`${a}>${b}`] = (slow[`${a}>${b}`] ?? 0) + 1;
  }
  const fast = {};
  for (const e of m.edges()) fast[`${e.from}>${e.to}`] = e.count;
  const sizes = m.rollup(() => 1, (x, y) => x + y, 0);
  console.log(JSON.stringify({ opened, before, revealed, after: m.ownerKey(conv.id), slow, fast,
    sizesMatch: graph.groups.every((g, i) => g.size === sizes[i]),
    fnKey: m.ownerKey(graph.groups[fn].node_ids[1]), fn,
    search: m.search("max_pool").map((h) => h.id), byId: m.search(String(conv.id)).map((h) => h.id) }));
});
"""


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_the_page_model_collapses_reveals_and_searches() -> None:
    """static/src/graph/model.js (run with node) on the graph of a fused chain: with a budget
    of a few boxes it opens collapsed, edges join the boxes shown, reveal expands down to a
    node, a function's call id names its group, search finds by operator and node id."""
    x = relay.var("x", shape=(1, 4, 8, 8))
    y = x
    for k in range(60):
        y = relay.nn.max_pool2d(y, pool_size=(1, 1)) if k % 3 == 0 else relay.nn.relu(y)
    mod = transform.Sequential([relay.transform.InferType(), relay.transform.FuseOps(2),
                                relay.transform.InferType()])(tvm.IRModule.from_expr(relay.Function([x], y)))
    text, table = print_snapshot(mod)
    graph = json.loads(json.dumps(GraphIndex(text, table.to_json()).graph(1, lazy=False)))
    nodes = graph["nodes"]
    # one node renamed conv2d: the node the test reveals and finds by id
    graph["nodes"][1] = {**graph["nodes"][1], "op": "nn.conv2d"}
    done = subprocess.run(["node", "--input-type=commonjs", "-e", SCRIPT, MODEL_JS],
                          input=json.dumps({"graph": graph, "budget": 6}), capture_output=True,
                          text=True, timeout=60, check=True)
    out = json.loads(done.stdout)
    assert out["opened"]["boxes"] <= 6 + MAX_CHILDREN, out["opened"]
    assert out["before"].startswith("g") and out["revealed"] is True
    assert out["after"] == f"n{graph['nodes'][1]['id']}"
    assert out["fnKey"] == f"g{out['fn']}"
    pools = {n["id"] for n in nodes if n["op"] == "nn.max_pool2d"}
    assert set(out["search"]) >= pools and out["byId"] == [graph["nodes"][1]["id"]]
    # edges aggregated per pair of boxes (after the reveal) equal the per-node count; group
    # sizes fold up from the nodes
    assert out["fast"] == out["slow"] and len(out["slow"]) > 1
    assert out["sizesMatch"]
    for e in out["opened"]["edges"]:
        assert e["from"] != e["to"] and e["count"] >= 1


UNION_JS = (Path(__file__).resolve().parents[2] / "static" / "src" / "graph" / "union.js").as_uri()
UNION_SCRIPT = """
import(process.argv[1]).then(({ unionOf }) => {
  const node = (id) => ({ key: `n${id}`, kind: "node", id, group: null, label: "relu", sub: "",
    expanded: false, children: [], members: 1 });
  const group = (g, expanded, children) => ({ key: `g${g}`, kind: "group", id: null, group: g,
    label: "layer", sub: "", expanded, children, members: children.length });
  // before: layer{1, 2} 3 ; after: layer{1} 2 4, the layer numbered differently
  const before = { model: "a", boxes: [group(0, true, [node(1), node(2)]), node(3)],
    edges: [{ from: "n2", to: "n3", count: 1 }] };
  const after = { model: "b", boxes: [group(5, true, [node(1)]), node(2), node(4)],
    edges: [{ from: "n2", to: "n4", count: 1 }, { from: "g5", to: "n2", count: 1 }] };
  const u = unionOf([before, after], (model, g) => "layer#0");
  const keys = (list) => list.map((b) => [b.key, keys(b.children)]);
  console.log(JSON.stringify({ tree: keys(u.boxes), maps: u.maps.map((m) => Object.fromEntries(m)),
    edges: u.edges.map((e) => `${e.from}>${e.to}`) }));
});
"""


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_side_by_side_lays_out_the_union_once() -> None:
    """static/src/graph/union.js: before | after share one box tree: the same node id or
    group key is one box (same place on both sides), a node that moved to another parent
    gets a box per side, and each side's keys map into the union."""
    done = subprocess.run(["node", "--input-type=commonjs", "-e", UNION_SCRIPT, UNION_JS],
                          capture_output=True, text=True, timeout=60, check=True)
    out = json.loads(done.stdout)
    assert out["tree"] == [["Glayer#0", [["n1", []], ["n2", []]]], ["n3", []], ["1:n2", []], ["n4", []]]
    assert out["maps"][0] == {"g0": "Glayer#0", "n1": "n1", "n2": "n2", "n3": "n3"}
    assert out["maps"][1] == {"g5": "Glayer#0", "n1": "n1", "n2": "1:n2", "n4": "n4"}
    assert out["edges"] == ["n2>n3", "1:n2>n4", "Glayer#0>1:n2"]


def test_a_torch_onnx_export_after_fuse_ops() -> None:
    """A file torch.onnx wrote (ResNet-18, random weights): after FuseOps every operand edge
    names a node of the graph, torchvision's module paths (`layer1`, `layer1.0`) are layer
    groups, each fused conv is a function group inside its layer, no group is overfull."""
    pytest.importorskip("torch")
    if importlib.util.find_spec("torchvision") is None:  # (its import needs torch_models' help)
        pytest.skip("torchvision is not installed")
    import onnx

    from engine.relay.testing.torch_models import Export, cached_export

    exports = Path(__file__).resolve().parents[2] / "bench" / "models" / "torch_export"
    path = cached_export(exports, "resnet18", Export("torchscript", 17))
    mod, params = relay.frontend.from_onnx(onnx.load(str(path)))
    mod["main"] = relay.build_module.bind_params_by_name(mod["main"], params)
    mod = transform.Sequential([
        relay.transform.InferType(), relay.transform.SimplifyInference(),
        relay.transform.FoldConstant(), relay.transform.FuseOps(2),
        relay.transform.InferType()])(mod)
    nodes, groups, _ = _graph(mod)
    ids = {n["id"] for n in nodes}
    assert all(i in ids for n in nodes for i in n["inputs"])
    labels = {g["label"] for g in groups if g["kind"] == "layer"}
    assert {"layer1", "layer4"} <= labels, sorted(labels)[:20]
    convs = [n for n in nodes if n["op"] == "nn.conv2d"]
    assert len(convs) == 20
    for conv in convs:
        group = groups[conv["group"]]
        assert group["kind"] == "function" and group["label"].startswith("fn conv2d"), group
    children: dict[int, int] = {}
    for n in nodes:
        children[n["group"]] = children.get(n["group"], 0) + 1
    for g in groups:
        children[g["parent"]] = children.get(g["parent"], 0) + 1
    assert max(children.values()) <= MAX_CHILDREN, children


LAZY_SCRIPT = """
import(process.argv[1]).then(({ GraphModel }) => {
  const { full, lazy, members, constants } = JSON.parse(require("fs").readFileSync(0, "utf8"));
  const a = new GraphModel(full, { constants });
  const c = new GraphModel(JSON.parse(JSON.stringify(lazy)), { constants });
  const b = new GraphModel(lazy, { constants });
  const edges = (m) => Object.fromEntries(m.edges().map((e) => [`${e.from}>${e.to}`, e.count]).sort());
  const steps = [];
  const compare = (what) => {
    b.missing().forEach((g) => b.addMembers({ groups: [g], nodes: members[g] }));
    steps.push({ what, same: JSON.stringify(edges(a)) === JSON.stringify(edges(b)),
      boxes: JSON.stringify(a.boxes()) === JSON.stringify(b.boxes()), n: Object.keys(edges(b)).length });
  };
  const deep = full.holders.ids[full.holders.ids.length - 1];
  const fetchedBefore = b.missing().length;
  compare("opened");
  // open every group, one at a time, both models alike
  for (let g = 0; g < full.groups.length; g++) { a.expanded.add(g); b.expanded.add(g); }
  const wanted = b.missing().length;
  compare("all open");
  a.openDefault(); b.openDefault();
  compare("collapsed again");
  const rolled = JSON.stringify(a.rollup(() => 1, (x, y) => x + y, 0)) === JSON.stringify(b.rollup(() => 1, (x, y) => x + y, 0));
  console.log(JSON.stringify({ steps, fetchedBefore, wanted, rolled, lazyNodes: lazy.nodes.length,
    key: c.ownerKey(deep), revealed: c.reveal(deep), missing: c.missing(), again: b.missing() }));
});
"""


def _chain() -> Any:
    x = relay.var("x", shape=(1, 8))
    y = x
    for k in range(400):
        y = relay.nn.relu(y) if k % 2 else relay.tanh(y)
    return relay.Function([x], y)


def _residual_net() -> Any:
    """Conv blocks with constant weights and a residual add each: branches, constants."""
    rng = np.random.default_rng(0)
    x = relay.var("x", shape=(1, 4, 8, 8))
    y = x
    for k in range(40):
        w = relay.const(rng.standard_normal((4, 4, 3, 3)).astype("float32"))
        b = relay.nn.relu(relay.nn.conv2d(y, w, padding=(1, 1)))
        y = relay.add(y, b) if k % 2 else relay.multiply(b, relay.const(np.float32(0.5)))
    return relay.Function([x], y)


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
@pytest.mark.parametrize(("make", "constants"), [(_chain, False), (_residual_net, False),
                                                  (_residual_net, True)])
def test_a_lazy_graph_draws_the_same_boxes_and_edges_as_the_whole(make: Any, constants: bool) -> None:
    """A lazy answer (groups, holders, links, the nodes of the groups open by default) in
    static/src/graph/model.js: collapsed, with every group opened (members fetched as the
    page would) and collapsed again, its boxes and edges equal those of the whole graph
    (constants hidden or shown)."""
    mod = transform.Sequential([relay.transform.InferType(), relay.transform.FuseOps(2),
                                relay.transform.InferType()])(tvm.IRModule.from_expr(make()))
    text, table = print_snapshot(mod)
    index = GraphIndex(text, table)
    full = index.graph(1, lazy=False)
    lazy = index.graph(1, lazy=True)
    members = {g: index.members({g}) for g in range(len(index.groups))}
    assert len(lazy["nodes"]) < len(index) // 4 and lazy["links"]
    assert all(g["loaded"] for g in full["groups"]) and not full["links"]
    done = subprocess.run(["node", "--input-type=commonjs", "-e", LAZY_SCRIPT, MODEL_JS],
                          input=json.dumps({"full": full, "lazy": lazy, "members": members,
                                            "constants": constants}),
                          capture_output=True, text=True, timeout=60, check=True)
    out = json.loads(done.stdout)
    # the server loaded what the page opens by default (with constants hidden, as it opens)
    assert out["fetchedBefore"] == 0 or constants
    assert out["wanted"] > 0
    for step in out["steps"]:
        assert step["same"] and step["boxes"] and step["n"] > 0, step
    assert out["rolled"]
    # a node deep in a closed group: revealing it asks for its group's members (and only
    # groups not fetched before)
    assert out["key"].startswith("g") and out["revealed"] and len(out["missing"]) >= 1
    assert out["again"] == []


def test_a_lazy_answer_never_leaves_a_group_of_groups_to_fetch() -> None:
    """A group that holds only groups (the runs of runs of a long chain) has no nodes to ask
    for, so a lazy answer marks it loaded: opening it must not wait for the server's index
    to learn that its members are none."""
    x = relay.var("x", shape=(1, 8))
    y = x
    for k in range(1500):
        y = relay.nn.relu(y) if k % 2 else relay.tanh(y)
    mod = transform.Sequential([relay.transform.InferType()])(
        tvm.IRModule.from_expr(relay.Function([x], y)))
    text, table = print_snapshot(mod)
    body = GraphIndex(text, table.to_json()).graph(1, lazy=True)
    holding = set(body["holders"]["groups"])
    closed = [i for i, g in enumerate(body["groups"]) if not g["loaded"]]
    groups_only = [i for i in range(len(body["groups"])) if i not in holding]
    assert closed and groups_only
    assert all(i in holding for i in closed)
    assert all(body["groups"][i]["loaded"] for i in groups_only)


def test_lazy_graph_endpoints(client: Any, sock: Any) -> None:
    """Over the lazy threshold the first answer holds every group and node id but only the
    nodes of the groups open by default; members and search answer the rest; bad input is a
    400 that names the problem."""
    from explorer.graphserve import GraphCache

    client.application.extensions["explorer.graphs"] = GraphCache(prefetch=False, lazy_nodes=2)
    session = upload(client, chain_relay_text(150))
    run_id = start(sock, session["id"], passes=["InferType", "FuseOps"])
    subscribe(sock, run_id)
    events = collect_until(sock, terminal)
    fuse = next(e["data"] for e in events if e["type"] == "pass_finished" and e["data"]["name"] == "FuseOps")
    base = f"/api/snapshots/{fuse['after']}/graph"
    body = client.get(base).get_json()
    assert problems(SnapshotGraph, body) == []
    assert body["lazy"] is True
    closed = [i for i, g in enumerate(body["groups"]) if not g["loaded"]]
    assert closed and len(body["nodes"]) < len(body["holders"]["ids"])
    sent = {n["id"] for n in body["nodes"]}
    want = [i for i, g in zip(body["holders"]["ids"], body["holders"]["groups"], strict=True) if g == closed[0]]
    members = client.get(f"{base}/members?groups={closed[0]}").get_json()
    assert problems(GraphMembers, members) == []
    assert members["groups"] == [closed[0]] and sorted(n["id"] for n in members["nodes"]) == sorted(want)
    assert not sent & {n["id"] for n in members["nodes"]}
    relu = next(n for n in members["nodes"] + body["nodes"] if n["op"] == "nn.relu")
    hits = client.get(f"{base}/search?q=relu").get_json()
    assert problems(GraphSearch, hits) == []
    assert relu["id"] in {h["id"] for h in hits["hits"]} and hits["total"] >= 1
    by_id = client.get(f"{base}/search?q={relu['id']}").get_json()["hits"]
    assert [h["id"] for h in by_id if h["group"] is None] == [relu["id"]]
    layer = relu["spans"][0]
    by_layer = client.get(f"{base}/search?layer={layer}").get_json()["hits"]
    assert relu["id"] in {h["id"] for h in by_layer}
    for url, code in ((f"{base}/members", "bad_groups"), (f"{base}/members?groups=x", "bad_groups"),
                      (f"{base}/members?groups=99999", "bad_groups"), (f"{base}/search", "bad_query")):
        resp = client.get(url)
        assert resp.status_code == 400 and resp.get_json()["error"]["code"] == code, url
