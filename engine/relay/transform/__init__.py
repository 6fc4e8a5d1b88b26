"""Relay passes (TVM's `relay.transform`): one module per pass, imported here.

Keep this a plain list of imports, one line per pass module (append in any order).
"""
# ruff: noqa: I001

from engine.relay.transform.pass_infra import FunctionPass as FunctionPass
from engine.relay.transform.pass_infra import ModulePass as ModulePass
from engine.relay.transform.pass_infra import Pass as Pass
from engine.relay.transform.pass_infra import PassContext as PassContext
from engine.relay.transform.pass_infra import PassInfo as PassInfo
from engine.relay.transform.pass_infra import PrintIR as PrintIR
from engine.relay.transform.pass_infra import Sequential as Sequential
from engine.relay.transform.pass_infra import function_pass as function_pass
from engine.relay.transform.pass_infra import module_pass as module_pass
from engine.relay.transform.infer_type import InferType as InferType
