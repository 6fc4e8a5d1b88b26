"""FuseOps: group operators into primitive functions (TVM's `relay.transform.FuseOps`).

The groups come from `GraphPartitioner` (fusion by `TOpPattern` along the
post-dominator tree, see fuse_partition.py). Each group becomes

    %1 = fn (%p0, %p1, Primitive=1) { nn.relu(add(nn.conv2d(%p0, %p1), 1f)) }
    %2 = %1(%x, meta[relay.Constant][0])

The function and its call carry the merged spans of every expression inside
the group (`SIBuilder(body, params).CreateSpan()`), so a kernel names the
layers it came from. `fused_function_name(func)` gives TVM's kernel name for
it (`fused_nn_conv2d_add_nn_relu`). `fuse_opt_level=-1` uses the PassContext's
opt_level; at 0 every op gets its own function. The config
`relay.FuseOps.max_depth` bounds the ops per group; `relay.FuseOps.link_params`
keeps constants inside the functions. The statistic `fused_groups` counts the
functions made.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from engine.ir.attrs import Attrs
from engine.ir.expr import Call, Constant, Expr, Function, Tuple, TupleGetItem, Var
from engine.ir.module import IRModule
from engine.ir.op import Op
from engine.ir.type import Type
from engine.relay.expr_functor import ExprMutator, post_order_visit
from engine.relay.si_builder import SIBuilder
from engine.relay.transform._rewrite import copy_type, ensure_typed
from engine.relay.transform.fuse_ops_graph import IndexedForwardGraph
from engine.relay.transform.fuse_partition import GraphPartitioner, Group
from engine.relay.transform.pass_infra import function_pass
from engine.transform import Pass, PassContext, allow_rewrite, register_pass

RESHAPE_OPS = frozenset({"reshape", "contrib_reverse_reshape", "squeeze", "expand_dims",
                         "nn.batch_flatten", "reshape_like"})
"""Ops that only reinterpret a buffer: a group of only these is marked `relay.reshape_only`."""

MAX_NAME_LENGTH = 80


@dataclass(eq=False)
class GroupInfo:
    """The parameters of one fused function and the arguments its call passes."""

    params: list[Var] = field(default_factory=list)
    arguments: list[Expr] = field(default_factory=list)
    by_argument: dict[Expr, Var] = field(default_factory=dict)

    def param_for(self, arg: Expr, ty: Type) -> Var:
        param = self.by_argument.get(arg)
        if param is None:
            param = Var(f"p{len(self.params)}", ty)
            self.params.append(param)
            self.arguments.append(arg)
            self.by_argument[arg] = param
        return param


class FuseMutator(ExprMutator):
    """Rewrites a function body so that every group is a call to a Primitive function."""

    def __init__(self, opt_level: int, max_depth: int, link_params: bool = False) -> None:
        super().__init__()
        self.opt_level = opt_level
        self.max_depth = max_depth
        self.link_params = link_params
        self.gmap: dict[Expr, Group] = {}
        self.ginfo: dict[Group, GroupInfo] = {}

    def transform(self, body: Expr) -> Expr:
        graph = IndexedForwardGraph.create(body)
        groups = GraphPartitioner(self.opt_level, self.max_depth).partition(graph)
        refused = _refused_groups(graph.post_dfs_order, groups)
        for node, group in zip(graph.post_dfs_order, groups):
            root = group.find_root()
            self.gmap[node.ref] = Group(node.ref, root.pattern) if root in refused else group
        return self.visit(body)

    @property
    def fused_groups(self) -> int:
        return len(self.ginfo)

    def visit_function(self, fn: Function) -> Expr:
        if fn.is_primitive():
            return fn
        return super().visit_function(fn)

    def visit_call(self, call: Call) -> Expr:
        if not isinstance(call.op, Op) or call not in self.gmap:
            return super().visit_call(call)
        group = self.gmap[call].find_root()
        args = self._new_arguments(call.args, group)
        new_call = _rebuilt(call, args=args)
        if group.root_ref is call:
            return self._make_function(group, new_call)
        return new_call

    def visit_tuple(self, tup: Tuple) -> Expr:
        group = self.gmap[tup].find_root() if tup in self.gmap else None
        if group is None or group.root_ref is tup:
            return super().visit_tuple(tup)
        return _rebuilt(tup, fields=self._new_arguments(tup.fields, group))

    def visit_tuple_getitem(self, item: TupleGetItem) -> Expr:
        group = self.gmap[item].find_root() if item in self.gmap else None
        if group is None:
            return super().visit_tuple_getitem(item)
        if group.root_ref is item and self.gmap[item.tuple_value].find_root() is not group:
            return super().visit_tuple_getitem(item)  # isolated: the tuple is an opaque op's
        value = self._new_arguments((item.tuple_value,), group)[0]
        new_item = _rebuilt(item, tuple_value=value)
        if group.root_ref is item:
            return self._make_function(group, new_item)
        return new_item

    # --- helpers ----------------------------------------------------------------------------
    def _new_arguments(self, args: tuple[Expr, ...], group: Group) -> tuple[Expr, ...]:
        out: list[Expr] = []
        for arg in args:
            new_arg = self.visit(arg)
            arg_group = self.gmap[arg].find_root() if arg in self.gmap else None
            if arg_group is group or (self.link_params and isinstance(new_arg, Constant)):
                out.append(new_arg)
                continue
            info = self.ginfo.setdefault(group, GroupInfo())
            out.append(info.param_for(new_arg, arg.checked_type))
        return tuple(out)

    def _make_function(self, group: Group, body: Expr) -> Expr:
        info = self.ginfo.setdefault(group, GroupInfo())
        span = SIBuilder(body, info.params).CreateSpan()
        attrs: dict[str, Any] = {"Primitive": 1}
        if _reshape_only(body):
            attrs["relay.reshape_only"] = 1
        # no ret_type: InferType types the function (and TVM-style Expected functions,
        # built without one, compare equal)
        func = Function(tuple(info.params), body, attrs=Attrs(attrs), span=span)
        return Call(func, tuple(info.arguments), span=span)  # typed by the next InferType


def _refused_groups(order: list[Any], groups: list[Group]) -> set[Group]:
    """The groups of several nodes whose fusion `allow_rewrite` refused (asked once each,
    at the group's root, in post-order); their nodes are made functions one by one."""
    refused: set[Group] = set()
    for node, group in zip(order, groups):
        root = group.find_root()
        if root.root_ref is node.ref and root.num_nodes > 1 and not allow_rewrite(node.ref):
            refused.add(root)
    return refused


def _rebuilt(node: Expr, **fields: Any) -> Expr:
    """`node` with new children (the same node when none changed), its type kept."""
    if all(getattr(node, k) is v or (isinstance(v, tuple) and len(v) == len(getattr(node, k))
                                      and all(a is b for a, b in zip(v, getattr(node, k))))
           for k, v in fields.items()):
        return node
    return copy_type(replace(node, **fields), node)


def _reshape_only(body: Expr) -> bool:
    names: list[str] = []
    post_order_visit(body, lambda e: names.append(e.op.name) if isinstance(e, Call)
                     and isinstance(e.op, Op) else None)
    return bool(names) and all(n in RESHAPE_OPS for n in names)


def fused_function_name(func: Function) -> str:
    """TVM's kernel name of a fused function: `fused_` + its op names in post-order."""
    names: list[str] = []

    def visit(expr: Expr) -> None:
        if isinstance(expr, Call) and isinstance(expr.op, Op):
            names.append(expr.op.name.replace(".", "_"))

    post_order_visit(func.body, visit)
    name = "_".join(["fused", *names]) if names else "fused"
    return name[:MAX_NAME_LENGTH]


def fuse_ops(func: Function, opt_level: int, max_depth: int = 256,
             link_params: bool = False) -> tuple[Function, int]:
    """`func` with its body fused, and the number of fused functions made."""
    if func.is_primitive():
        return func, 0
    mutator = FuseMutator(opt_level, max_depth, link_params)
    body = mutator.transform(func.body)
    if body is func.body:
        return func, 0
    return replace(func, body=body), mutator.fused_groups


@register_pass
def FuseOps(fuse_opt_level: int = -1) -> Pass:  # TVM's name
    """Fuse operators into Primitive functions (fuse_opt_level -1: the context's opt_level)."""

    def transform(func: Function, mod: IRModule, ctx: PassContext) -> Function:
        level = ctx.opt_level if fuse_opt_level == -1 else fuse_opt_level
        max_depth = int(ctx.get_config("relay.FuseOps.max_depth"))
        link = bool(ctx.get_config("relay.FuseOps.link_params"))
        new, count = fuse_ops(ensure_typed(func, mod), level, max_depth, link)
        ctx.add_stat("fused_groups", count)
        return new

    return function_pass(transform, opt_level=0, required=["InferType"])


__all__ = ["FuseMutator", "FuseOps", "fuse_ops", "fused_function_name"]
