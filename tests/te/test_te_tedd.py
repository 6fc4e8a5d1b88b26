"""TEDD-style DOT views: deterministic, escaped, showing relations and attachment."""

from __future__ import annotations

from engine import te
from engine.contrib import tedd


def _schedule(name: str = "C"):
    k = te.reduce_axis((0, 16), "k")
    A = te.placeholder((16, 16), name="A")
    B = te.placeholder((16, 16), name="B")
    C = te.compute((16, 16), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name=name)
    s = te.create_schedule(C.op)
    CC = s.cache_write(C, "local")
    io, jo, ii, ji = s[C].tile(C.op.axis[0], C.op.axis[1], 4, 4)
    s[C].bind(s[C].fuse(io, jo), te.thread_axis("blockIdx.x"))
    s[CC].compute_at(s[C], ji)
    return s


def test_views_are_deterministic() -> None:
    for view in (tedd.viz_schedule_tree, tedd.viz_itervar_relationship_graph,
                 tedd.viz_dataflow_graph):
        assert view(_schedule()) == view(_schedule())


def test_schedule_tree_shows_attachment_and_loop_kinds() -> None:
    dot = tedd.viz_schedule_tree(_schedule())
    assert dot.startswith("digraph schedule_tree {")
    assert 'stage3 -> stage2 [label="at j.inner"];' in dot
    assert "i.outer.j.outer.fused [blockIdx.x]" in dot


def test_itervar_graph_links_split_and_fuse() -> None:
    dot = tedd.viz_itervar_relationship_graph(_schedule())
    assert 'rel3_0 [label="split factor=4", shape=diamond];' in dot
    assert "iv3_0 -> rel3_0;" in dot
    assert 'rel3_2 [label="fuse", shape=diamond];' in dot
    assert "rel3_2 -> iv3_6;" in dot


def test_dataflow_graph_has_an_edge_per_read() -> None:
    dot = tedd.viz_dataflow_graph(_schedule())
    assert 'stage0 -> stage2 [label="A"];' in dot
    assert 'stage2 -> stage3 [label="C.local"];' in dot


def test_labels_are_escaped(tmp_path) -> None:
    s = _schedule(name='C"evil\\name\n')
    path = tmp_path / "tree.dot"
    dot = tedd.viz_schedule_tree(s, dot_file_path=str(path))
    assert path.read_text() == dot
    assert 'C\\"evil\\\\name\\n' in dot
    assert tedd.viz_dataflow_graph(s, output_dot_string=False) is None
