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
from engine.relay.transform.fold_constant import FoldConstant as FoldConstant
from engine.relay.transform.dead_code import DeadCodeElimination as DeadCodeElimination
from engine.relay.transform.eliminate_common_subexpr import EliminateCommonSubexpr as EliminateCommonSubexpr
from engine.relay.transform.simplify_inference import SimplifyInference as SimplifyInference
from engine.relay.transform.dynamic_to_static import DynamicToStatic as DynamicToStatic
from engine.relay.transform.simplify_expr import SimplifyExpr as SimplifyExpr
from engine.relay.transform.canonicalize_ops import CanonicalizeOps as CanonicalizeOps
from engine.relay.transform.to_a_normal_form import ToANormalForm as ToANormalForm
from engine.relay.transform.to_graph_normal_form import ToGraphNormalForm as ToGraphNormalForm
from engine.relay.transform.lambda_lift import LambdaLift as LambdaLift
from engine.relay.transform.remove_unused_functions import RemoveUnusedFunctions as RemoveUnusedFunctions
from engine.relay.transform.fuse_ops import FuseOps as FuseOps
from engine.relay.transform.fold_scale_axis import FoldScaleAxis as FoldScaleAxis
from engine.relay.transform.fold_scale_axis import BackwardFoldScaleAxis as BackwardFoldScaleAxis
from engine.relay.transform.fold_scale_axis import ForwardFoldScaleAxis as ForwardFoldScaleAxis
from engine.relay.transform.convert_layout import ConvertLayout as ConvertLayout
from engine.relay.transform.alter_op_layout import AlterOpLayout as AlterOpLayout
from engine.relay.qnn.fq2i import FakeQuantizationToInteger as FakeQuantizationToInteger
