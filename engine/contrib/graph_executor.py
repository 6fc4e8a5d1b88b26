"""`tvm.contrib.graph_executor`: run what `relay.build` made, node by node.

    m = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    m.set_input("data", x); m.run(); y = m.get_output(0).numpy()

The runtime itself lives with the build (engine.relay.backend.graph_executor);
this module is TVM's import path for it.
"""

from engine.relay.backend.graph_executor import GraphModule, GraphRuntime, create

__all__ = ["GraphModule", "GraphRuntime", "create"]
