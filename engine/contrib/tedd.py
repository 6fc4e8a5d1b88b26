"""`tvm.contrib.tedd`: schedule views as DOT text (implemented in engine.te.tedd)."""

from engine.te.tedd import (
    escape,
    viz_dataflow_graph,
    viz_itervar_relationship_graph,
    viz_schedule_tree,
)

__all__ = ["escape", "viz_dataflow_graph", "viz_itervar_relationship_graph", "viz_schedule_tree"]
