"""TEDD-style views of a schedule as DOT text (TVM's `tvm.contrib.tedd`).

    viz_schedule_tree(s)                -> stages and where each is computed
    viz_itervar_relationship_graph(s)   -> per stage, iter vars and split/fuse relations
    viz_dataflow_graph(s)               -> tensors flowing between stages

Output is deterministic (node ids from positions) and every label is escaped,
so names from uploaded models cannot break the DOT syntax.
"""

from __future__ import annotations

from pathlib import Path

from engine.te.schedule import Schedule
from engine.te.stage import AttachType, IterVarAttr, Split, Stage
from engine.te.tensor import IterVar
from engine.tir.stmt import ForKind


def escape(text: str) -> str:
    """A DOT double-quoted string body: backslashes, quotes and newlines escaped."""
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _q(text: str) -> str:
    return f'"{escape(text)}"'


def _finish(lines: list[str], dot_file_path: str, output_dot_string: bool) -> str | None:
    text = "\n".join(lines) + "\n"
    if dot_file_path:
        Path(dot_file_path).write_text(text, encoding="utf-8")
    return text if output_dot_string else None


def _shape(stage: Stage) -> str:
    tensor = stage.op.output(0)
    return f"[{', '.join(str(d) for d in tensor.shape)}] {tensor.dtype}"


def _kind(attr: IterVarAttr | None) -> str:
    if attr is None or attr.kind is ForKind.SERIAL:
        return ""
    if attr.kind is ForKind.THREAD_BINDING and attr.thread is not None:
        return f" [{attr.thread.thread_tag}]"
    return f" [{attr.kind.value}]"


def _leaf_text(stage: Stage, iv: IterVar) -> str:
    reduce = " (reduce)" if iv.is_reduce else ""
    return f"{iv.name}{reduce}{_kind(stage.iter_var_attrs.get(iv))}"


def viz_schedule_tree(sch: Schedule, dot_file_path: str = "",
                      output_dot_string: bool = True) -> str | None:
    """Each stage with its leaf loops, hung under the loop it is computed at."""
    lines = ["digraph schedule_tree {", "  rankdir=TB;", "  node [shape=box, fontname=monospace];",
             '  root [label="ROOT", shape=oval];']
    for index, stage in enumerate(sch.stages):
        leaves = "\n".join(f"{k}: {_leaf_text(stage, iv)}"
                           for k, iv in enumerate(stage.leaf_iter_vars))
        label = f"{stage.name}\nscope: {stage.scope}\n{leaves}".rstrip()
        style = ", style=dashed" if stage.attach_type == AttachType.INLINE else ""
        lines.append(f"  stage{index} [label={_q(label)}{style}];")
    for index, stage in enumerate(sch.stages):
        if stage.attach_type == AttachType.SCOPE and stage.attach_stage is not None:
            parent = sch.stage_index(stage.attach_stage)
            at = stage.attach_ivar.name if stage.attach_ivar is not None else "?"
            lines.append(f"  stage{parent} -> stage{index} [label={_q('at ' + at)}];")
        else:
            lines.append(f"  root -> stage{index} [label={_q(stage.attach_type)}];")
    lines.append("}")
    return _finish(lines, dot_file_path, output_dot_string)


def _stage_itervars(sch: Schedule, index: int, stage: Stage) -> list[str]:
    lines = [f"  subgraph cluster_stage{index} {{", f"    label={_q(stage.name)};"]
    ids = {id(iv): f"iv{index}_{k}" for k, iv in enumerate(stage.all_iter_vars)}
    leaf_pos = {id(iv): k for k, iv in enumerate(stage.leaf_iter_vars)}
    for k, iv in enumerate(stage.all_iter_vars):
        extent = f"\nextent: {iv.dom.extent}" if iv.dom is not None else ""
        pos = leaf_pos.get(id(iv))
        leaf = f"\nleaf {pos}{_kind(stage.iter_var_attrs.get(iv))}" if pos is not None else ""
        shape = "box" if pos is not None else "ellipse"
        lines.append(f"    iv{index}_{k} [label={_q(iv.name + extent + leaf)}, shape={shape}];")
    for r, rel in enumerate(stage.relations):
        node = f"rel{index}_{r}"
        if isinstance(rel, Split):
            how = f"factor={rel.factor}" if rel.factor is not None else f"nparts={rel.nparts}"
            lines.append(f"    {node} [label={_q('split ' + how)}, shape=diamond];")
            lines.append(f"    {ids[id(rel.parent)]} -> {node};")
            lines.append(f'    {node} -> {ids[id(rel.outer)]} [label="outer"];')
            lines.append(f'    {node} -> {ids[id(rel.inner)]} [label="inner"];')
        else:
            lines.append(f'    {node} [label="fuse", shape=diamond];')
            lines.append(f'    {ids[id(rel.outer)]} -> {node} [label="outer"];')
            lines.append(f'    {ids[id(rel.inner)]} -> {node} [label="inner"];')
            lines.append(f"    {node} -> {ids[id(rel.fused)]};")
    lines.append("  }")
    return lines


def viz_itervar_relationship_graph(sch: Schedule, dot_file_path: str = "",
                                   output_dot_string: bool = True) -> str | None:
    """Per stage: root and derived iter vars, linked through split and fuse nodes."""
    lines = ["digraph itervar_relationship {", "  node [fontname=monospace];"]
    for index, stage in enumerate(sch.stages):
        if stage.is_placeholder:
            continue
        lines.extend(_stage_itervars(sch, index, stage))
    lines.append("}")
    return _finish(lines, dot_file_path, output_dot_string)


def viz_dataflow_graph(sch: Schedule, dot_file_path: str = "",
                       output_dot_string: bool = True) -> str | None:
    """Stages as nodes, an edge per tensor a stage reads (labelled with the tensor)."""
    lines = ["digraph dataflow {", "  rankdir=LR;", "  node [shape=box, fontname=monospace];"]
    for index, stage in enumerate(sch.stages):
        kind = "placeholder" if stage.is_placeholder else stage.attach_type
        label = f"{stage.name}\n{_shape(stage)}\n{kind}"
        shape = ", shape=oval" if stage.is_placeholder else ""
        lines.append(f"  stage{index} [label={_q(label)}{shape}];")
    for index, stage in enumerate(sch.stages):
        for tensor in stage.op.input_tensors:
            producer = sch.stage_index(sch[tensor])
            lines.append(f"  stage{producer} -> stage{index} [label={_q(tensor.name)}];")
    lines.append("}")
    return _finish(lines, dot_file_path, output_dot_string)
