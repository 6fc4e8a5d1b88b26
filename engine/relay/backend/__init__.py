"""The build (TVM's `tvm.relay.backend`): `relay.build`, LowerTE and the TE compiler,
graph codegen and the graph executor.

`build_module` runs optimize -> LowerTE -> graph codegen, every stage a pass
under the caller's PassContext; `te_compiler` lowers one fused function to a
recorded TE schedule; `graph_codegen` turns the lowered @main into graph JSON.
"""
