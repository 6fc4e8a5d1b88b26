"""relay.build_module (TVM's `tvm.relay.build_module`): `optimize` for now; `build` comes
with the TE lowering."""

from engine.relay.transform.pipeline import bind_params_by_name, optimize

__all__ = ["bind_params_by_name", "optimize"]
