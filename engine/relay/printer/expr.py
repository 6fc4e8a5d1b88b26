"""Prints expressions in graph normal form, iteratively on dataflow.

Every non-atomic expression (call, tuple, tuple item, if, fn, non-tail let) is
bound once to `%N = ...;` in the scope that first needs it; vars, global vars,
ops and constants are printed inline. Dataflow dependencies are bound by an
explicit post-order walk, so a 100,000-node chain never recurses; nesting
(`fn`, `if` branches, let blocks) recurses once per level.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from engine.ir.expr import (
    DATAFLOW_KINDS,
    Call,
    Constant,
    Expr,
    Function,
    GlobalVar,
    If,
    Let,
    Tuple,
    TupleGetItem,
    Var,
    operands,
)
from engine.ir.op import Op
from engine.relay.printer.format import (
    attrs_text,
    name_or_quoted,
    sanitize_var_name,
    scalar_text,
    span_trailer,
    type_text,
)
from engine.relay.printer.qparams import qparam_of, qparam_roles, values_note
from engine.relay.printer.writer import Writer

ATOMIC = (Var, GlobalVar, Op, Constant)


def _dataflow_kids(node: Expr) -> Sequence[Expr]:
    if isinstance(node, Call):
        return (*node.args, node.op)  # operands first: a fused fn is bound next to its call
    return operands(node) if isinstance(node, DATAFLOW_KINDS) else ()


def _dataflow_closure(root: Expr) -> dict[Expr, None]:
    """Non-atomic nodes reachable from `root` without entering a let, if or fn."""
    found: dict[Expr, None] = {}
    stack = [root]
    while stack:
        node = stack.pop()
        if isinstance(node, ATOMIC) or node in found:
            continue
        found[node] = None
        stack.extend(_dataflow_kids(node))
    return found


def _deps(node: Expr) -> Sequence[Expr]:
    """Sub-expressions that must be bound before `node` is printed inline.

    For an `if`, that includes what both branches share: it is bound once, before the
    `if`, as converting to A-normal form would place it (the lowest common scope).
    """
    if isinstance(node, If):
        other = _dataflow_closure(node.false_branch)
        shared = [n for n in _dataflow_closure(node.true_branch) if n in other]
        return (node.cond, *reversed(shared))
    return _dataflow_kids(node)


class MetaTable:
    """Constants printed as `meta[relay.Constant][k]`, numbered from `base`."""

    def __init__(self, base: int = 0) -> None:
        self.base = base
        self.constants: list[Constant] = []
        self._index: dict[Constant, int] = {}

    def index(self, const: Constant) -> int:
        found = self._index.get(const)
        if found is None:
            found = self._index[const] = self.base + len(self.constants)
            self.constants.append(const)
        return found


class ExprPrinter:
    """Prints one top-level function (or expression) into a Writer."""

    def __init__(self, writer: Writer, meta: MetaTable, show_types: bool = False) -> None:
        self.w = writer
        self.meta = meta
        self.show_types = show_types
        # Every name visible here, and per open scope the nodes it bound (removed from
        # `bound` when the scope closes): one lookup however deep the nesting.
        self.bound: dict[Expr, str] = {}
        self.scopes: list[list[Expr]] = [[]]
        self.var_names: dict[Var, str] = {}
        self.used_names: set[str] = set()
        self.next_suffix: dict[str, int] = {}
        self.temps = 0
        self._render_table: dict[type, Callable[[Any], None]] = {
            Var: self._var_ref, GlobalVar: self._global_var, Op: self._op,
            Constant: self._constant, Call: self._call, Tuple: self._tuple,
            TupleGetItem: self._getitem, If: self._if, Function: self._function,
            Let: self._let_block,
        }

    # --- entry points ---------------------------------------------------------------
    def print_def(self, gv: GlobalVar, fn: Function) -> None:
        w = self.w
        start = w.begin(fn)
        w.write("def ")
        gv_start = w.begin(gv, "@" + name_or_quoted(gv.name_hint))
        w.end(gv, gv_start)
        self._signature(fn)
        self.w.trailers(fn, self.show_types)
        w.end(fn, start)
        w.newline()

    def print_top(self, expr: Expr) -> None:
        """A bare expression: `free_var %x: T;` declarations (as TVM), then its scope."""
        from engine.relay.analysis import free_vars

        for var in free_vars(expr):
            self.w.write("free_var ")
            self._var_def(var)
            self.w.write(";")
            self.w.newline()
        self._scope_body(expr)

    # --- names and scopes -------------------------------------------------------------
    def var_name(self, var: Var) -> str:
        """`%name`, unique in this function (`%x`, `%x1`, ...)."""
        text = self.var_names.get(var)
        if text is not None:
            return text
        base = sanitize_var_name(var.name_hint)
        # Candidates are base, base1, base2, ...; names only get used, so a candidate
        # found taken stays taken: resume from the last suffix tried (linear, not quadratic).
        suffix = self.next_suffix.get(base, 0)
        name = f"{base}{suffix}" if suffix else base
        while name in self.used_names:
            suffix += 1
            name = f"{base}{suffix}"
        self.next_suffix[base] = suffix
        self.used_names.add(name)
        text = self.var_names[var] = "%" + name
        return text

    def _lookup(self, node: Expr) -> str | None:
        return self.bound.get(node)

    def _open_scope(self) -> None:
        self.scopes.append([])

    def _close_scope(self) -> None:
        bound = self.bound
        for node in self.scopes.pop():
            del bound[node]

    # --- scopes -------------------------------------------------------------------------
    def _block(self, body: Expr) -> None:
        w = self.w
        w.write("{")
        w.newline()
        w.depth += 1
        self._open_scope()
        self._scope_body(body)
        self._close_scope()
        w.depth -= 1
        w.write("}")

    def _scope_body(self, expr: Expr) -> None:
        w = self.w
        node = expr
        while isinstance(node, Let) and self._lookup(node) is None:
            self._bind_deps(node.value)
            start = w.begin(node)
            w.write("let ")
            self._var_def(node.var)
            w.write(" = ")
            self._expr(node.value)
            w.write(";")
            self.w.trailers(node, self.show_types)
            w.end(node, start)
            w.newline()
            node = node.body
        self._bind_deps(node)
        self._expr(node)
        w.newline()

    def _bind_deps(self, root: Expr) -> None:
        """Bind, in post-order, every non-atomic dependency of `root` not yet bound."""
        bound = self.bound
        if isinstance(root, ATOMIC) or root in bound:
            return
        stack: list[tuple[Expr, bool]] = [(root, False)]
        seen: set[Expr] = set()
        while stack:
            node, expanded = stack.pop()
            if expanded:
                if node is not root:
                    self._bind(node)
                continue
            if node in seen:
                continue
            seen.add(node)
            stack.append((node, True))
            for kid in reversed(_deps(node)):
                if kid not in seen and kid not in bound and not isinstance(kid, ATOMIC):
                    stack.append((kid, False))

    def _bind(self, node: Expr) -> None:
        w = self.w
        name = f"%{self.temps}"
        self.temps += 1
        start = w.begin(node, name + " = ")
        if type(node) is Call:  # most bindings: skip the dispatch
            self._call(node)
        else:
            self._render(node)
        w.end(node, start)
        w.end_line(";")
        self.bound[node] = name
        self.scopes[-1].append(node)

    # --- expressions ----------------------------------------------------------------------
    def _expr(self, node: Expr) -> None:
        """Print a use of `node`: its name if bound, else the node itself."""
        if isinstance(node, ATOMIC):
            self._render(node)
            return
        name = self._lookup(node)
        if name is not None:
            self.w.ref(node, name)
            return
        start = self.w.begin(node)
        self._render(node)
        self.w.end(node, start)

    def _render(self, node: Expr) -> None:
        render = self._render_table.get(type(node))
        if render is None:
            render = next((f for c, f in self._render_table.items() if isinstance(node, c)), None)
        if render is None:
            raise TypeError(f"the printer cannot print {type(node).__name__}")
        render(node)

    def _atom(self, node: Expr, text: str) -> None:
        self.w.atom(node, text, self.show_types)

    def _var_ref(self, var: Var) -> None:
        self.w.ref(var, self.var_name(var))

    def _var_def(self, var: Var) -> None:
        w = self.w
        start = w.begin(var, self.var_name(var))
        if var.type_annotation is not None:
            w.write(": " + type_text(var.type_annotation))
        comment = span_trailer(var.span)
        if comment:
            w.write(comment)
        w.end(var, start)

    def _global_var(self, gv: GlobalVar) -> None:
        """`@name`, bare: a global names a function (its type and spans are the
        function's, printed with its definition), as TVM prints it."""
        w = self.w
        start = w.begin(gv, "@" + name_or_quoted(gv.name_hint))
        w.end(gv, start)

    def _op(self, op: Op) -> None:
        self.w.write(op.name)

    def _constant(self, const: Constant) -> None:
        text = None if const.data.shape else scalar_text(const.data.numpy())
        if text is None:
            text = f"meta[relay.Constant][{self.meta.index(const)}]"
        self.w.atom(const, text, self.show_types)

    def _qparam(self, const: Constant, role: str) -> None:
        """A scale or zero point of a qnn call: its value, or its meta reference plus a
        note of its values (see `printer.qparams`); the source map gets every value."""
        array = const.data.numpy()
        text = scalar_text(array)
        if text is None:
            text = f"meta[relay.Constant][{self.meta.index(const)}]" + values_note(array)
        self.w.note(const, qparam_of(role, array))
        self._atom(const, text)

    def _call(self, call: Call) -> None:
        w = self.w
        op = call.op
        if isinstance(op, Op):
            w.write(op.name + "(")
            roles = qparam_roles(call)
        else:
            self._expr(op)
            w.write("(")
            roles = ()
        bound, expr = self.bound, self._expr
        for i, arg in enumerate(call.args):
            if i:
                w.write(", ")
            name = bound.get(arg)
            role = roles[i] if roles else None
            if name is not None:  # the common case: an operand bound to %N before
                w.ref(arg, name)
            elif type(arg) is Var:
                w.ref(arg, self.var_names.get(arg) or self.var_name(arg))
            elif role is not None and isinstance(arg, Constant):
                self._qparam(arg, role)
            elif type(arg) is Constant:
                self._constant(arg)
            else:
                expr(arg)
        attrs = attrs_text(call.attrs)  # "" for none (memoized by the attrs object)
        if attrs:
            w.write((", " + attrs if call.args else attrs) + ")")
        else:
            w.write(")")
        self.w.trailers(call, self.show_types)

    def _tuple(self, tup: Tuple) -> None:
        w = self.w
        w.write("(")
        for i, field in enumerate(tup.fields):
            if i:
                w.write(", ")
            self._expr(field)
        w.write(",)" if len(tup.fields) == 1 else ")")
        self.w.trailers(tup, self.show_types)

    def _getitem(self, item: TupleGetItem) -> None:
        self._expr(item.tuple_value)
        self.w.write(f".{item.index}")
        self.w.trailers(item, self.show_types)

    def _if(self, ite: If) -> None:
        w = self.w
        w.write("if (")
        self._expr(ite.cond)
        w.write(") ")
        self._block(ite.true_branch)
        w.write(" else ")
        self._block(ite.false_branch)
        self.w.trailers(ite, self.show_types)

    def _function(self, fn: Function) -> None:
        self.w.write("fn ")
        self._signature(fn)
        self.w.trailers(fn, self.show_types)

    def _let_block(self, let: Let) -> None:
        self._block(let)

    def _signature(self, fn: Function) -> None:
        w = self.w
        self._open_scope()
        w.write("(")
        for i, param in enumerate(fn.params):
            if i:
                w.write(", ")
            self._var_def(param)
        attrs = attrs_text(fn.attrs) if fn.attrs else ""
        if attrs:
            w.write(", " + attrs if fn.params else attrs)
        w.write(")")
        if fn.ret_type is not None:
            w.write(" -> " + type_text(fn.ret_type))
        w.write(" ")
        self._block(fn.body)
        self._close_scope()
