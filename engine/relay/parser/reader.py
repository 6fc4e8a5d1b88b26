"""The Relay text parser proper: a recursive-descent reader of the printer's format.

    mod = parse(text)                 # an IRModule (a bare expression becomes @main)
    expr = parse_expr("%0 = nn.relu(%x); add(%0, 1f)")

Scopes (`%N = ...;` bindings and `let` chains) are read in a loop, so 100,000-line
programs parse without deep recursion; nesting (`fn`, `if`, parentheses) recurses
once per level. Trailing comments after an expression are its span
(`/* conv1, bn1 */`) or its type (`/* ty=... */`, checked for syntax, not used).
Errors are `ParseError`s with the line, column and a caret.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from engine.ir.attrs import Attrs
from engine.ir.expr import (
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
)
from engine.ir.module import IRModule
from engine.ir.op import Op, OpNotFoundError
from engine.ir.span import UNKNOWN_SPAN, SpanLike
from engine.ir.type import Type
from engine.relay.op.attrs_defaults import UnknownAttributeError
from engine.relay.op.op import op_attrs
from engine.relay.parser import lexer as lx
from engine.relay.parser.tvm_json import MetaFormatError, is_node_graph, meta_tables
from engine.relay.parser.values import ValueReader
from engine.relay.printer.format import VALUES_NOTE
from engine.runtime.ndarray import NDArray

__all__ = ["fromtext", "parse", "parse_expr", "parse_type"]

_KEYWORDS = {"fn", "if", "else", "let", "def", "meta", "True", "False", "None", "free_var",
             "type", "match"}
_NO_ADTS = ("algebraic data types (type definitions, constructors and match) are not "
            "supported by this engine's IR")


class _Parser(ValueReader):
    def __init__(self, text: str, source_name: str, tokens: lx.Tokens,
                 meta: Mapping[str, Sequence[Any]], free_vars: bool) -> None:
        super().__init__(text, source_name, tokens)
        self.meta = meta
        self.allow_free = free_vars
        self.free: dict[str, Var] = {}
        self.scopes: list[dict[str, Expr]] = [{}]
        self.globals: dict[str, GlobalVar] = {}
        self.const_cache: dict[tuple[int, SpanLike], Constant] = {}

    # --- program ------------------------------------------------------------------------
    def program(self) -> IRModule:
        self.version()
        if self.peek()[0] == lx.EOF:
            return IRModule()
        if self.at("type"):
            raise self.error(_NO_ADTS)
        if not self.at("def"):  # a bare expression: its free vars become main's params
            self.allow_free = True
            expr = self.scope_body()
            self.end()
            return IRModule.from_expr(expr)
        self.declare_globals()
        mod = IRModule()
        while self.at("def"):
            gv, fn = self.definition()
            mod[gv] = fn
        self.end()
        return mod

    def version(self) -> None:
        self.skip_comments()
        if self.kinds[self.i] == lx.VERSION:
            self.i += 1

    def end(self) -> None:
        kind, text, offset = self.take()
        if kind != lx.EOF:
            raise self.error(f"unexpected {text!r} after the end of the program", offset)

    def declare_globals(self) -> None:
        kinds, texts = self.kinds, self.texts
        for j in range(len(kinds) - 1):
            if texts[j] == "def" and kinds[j] == lx.IDENT and kinds[j + 1] == lx.GLOBAL:
                name = lx.global_name(texts[j + 1])
                if name in self.globals:
                    raise self.error(f"function @{name} is defined twice", self.offsets[j + 1])
                self.globals[name] = GlobalVar(name)

    def definition(self) -> tuple[GlobalVar, Function]:
        start = self.expect("def")
        text, _ = self.expect_kind(lx.GLOBAL, "a global function name such as @main")
        gv = self.globals[lx.global_name(text)]
        return gv, self.function_rest(start)

    def function_rest(self, start: int) -> Function:
        self.scopes.append({})
        params, attrs = self.params()
        ret = None
        if self.at("->"):
            self.take()
            ret = self.type()
        body = self.block()
        self.scopes.pop()
        return Function(tuple(params), body, ret, attrs=Attrs(attrs), span=self.located(start))

    def params(self) -> tuple[list[Var], dict[str, Any]]:
        self.expect("(")
        params: list[Var] = []
        attrs: dict[str, Any] = {}
        while not self.at(")"):
            if params or attrs:
                self.expect(",")
            if self.peek()[0] == lx.LOCAL:
                if self.peek()[1] in self.scopes[-1]:
                    raise self.error(f"duplicate parameter {self.peek()[1]}")
                params.append(self.var_def())
            else:
                key, value = self.attr()
                attrs[key] = value
        self.expect(")")
        return params, attrs

    def var_def(self) -> Var:
        text, offset = self.expect_kind(lx.LOCAL, "a variable such as %x")
        name = lx.local_name(text)
        ann = None
        if self.texts[self.i] == ":" and self.kinds[self.i] == lx.PUNCT:  # not past a comment
            self.take()
            ann = self.type()
        var = Var(name, ann, span=self.located(offset))
        self.scopes[-1][text] = var
        return var

    # --- scopes -------------------------------------------------------------------------
    def block(self) -> Expr:
        self.expect("{")
        self.scopes.append({})
        body = self.scope_body()
        self.scopes.pop()
        self.expect("}")
        return body

    def scope_body(self) -> Expr:
        lets: list[tuple[Var, Expr, SpanLike]] = []
        scope = self.scopes[-1]
        while True:
            kind, text = self.peek()
            if kind == lx.TEMP and self.peek(1)[1] == "=":
                self.take()
                self.take()
                value = self.expr()
                self.expect(";")
                scope[text] = value
            elif kind == lx.IDENT and text == "free_var" and self.allow_free:
                self.take()
                var = self.var_def()
                self.free[var.name_hint] = var
                self.expect(";")
            elif kind == lx.IDENT and text == "let":
                start = self.take()[2]
                var = self.var_def()
                self.expect("=")
                value = self.expr()
                self.expect(";")
                lets.append((var, value, self.located(start)))
            else:
                break
        body = self.expr()
        for var, value, span in reversed(lets):
            body = Let(var, value, body, span=span)
        return body

    # --- expressions ------------------------------------------------------------------
    def expr(self) -> Expr:
        self.skip_comments()
        start = self.offsets[self.i]
        node = self.atom()
        while True:
            if self.at("("):
                node = self.call(node, start)
            elif self.at("."):
                node = self.getitem(node, start)
            else:
                return node

    def call(self, callee: Expr, start: int) -> Call:
        self.expect("(")
        args: list[Expr] = []
        attrs: dict[str, Any] = {}
        where: dict[str, int] = {}
        while not self.at(")"):
            if args or attrs:
                self.expect(",")
            kind, _ = self.peek()
            if kind in (lx.IDENT, lx.STRING) and self.peek(1)[1] == "=":
                where_key = self.offsets[self.i]
                key, value = self.attr()
                attrs[key] = value
                where[key] = where_key
            elif attrs:
                raise self.error("positional argument after keyword attributes")
            else:
                args.append(self.expr())
        self.expect(")")
        call_attrs = self.call_attrs(callee, attrs, where, start)
        return Call(callee, tuple(args), call_attrs, span=self.located(start))

    def call_attrs(self, callee: Expr, attrs: dict[str, Any], where: dict[str, int],
                   start: int) -> Attrs:
        """The attrs as the op declares them: an omitted one holds its default (TVM's
        printer leaves defaults out)."""
        if not isinstance(callee, Op):
            return Attrs(attrs)
        try:
            return op_attrs(callee.name, attrs, callee.info.attrs_type_key)
        except UnknownAttributeError as err:
            raise self.error(str(err), where.get(err.key, start)) from None
        except (ValueError, TypeError) as err:
            raise self.error(f"{callee.name}: invalid attribute: {err}", start) from None

    def getitem(self, value: Expr, start: int) -> Expr:
        self.expect(".")
        text, offset = self.expect_kind(lx.NUMBER, "a tuple index")
        parts = text.split(".")
        if not all(p.isdigit() for p in parts):
            raise self.error(f"invalid tuple index {text!r}", offset)
        for k, part in enumerate(parts):
            span = self.located(start) if k == len(parts) - 1 else self.source_span(start)
            value = TupleGetItem(value, int(part), span=span)
        return value

    def atom(self) -> Expr:
        kind, text, offset = self.take()
        handler = _ATOMS.get(kind)
        if handler is None:
            shown = repr(text) if kind != lx.EOF else "end of input"
            raise self.error(f"expected an expression, got {shown}", offset)
        return handler(self, text, offset)

    def name_ref(self, text: str, offset: int) -> Expr:
        for scope in reversed(self.scopes):
            found = scope.get(text)
            if found is not None:
                return found
        if text.startswith("%") and not text[1:].isdigit() and self.allow_free:
            name = lx.local_name(text)
            return self.free.setdefault(name, Var(name))
        raise self.error(f"undefined variable {text}", offset)

    def global_ref(self, text: str, offset: int) -> Expr:
        name = lx.global_name(text)
        gv = self.globals.get(name)
        if gv is None:
            if not self.allow_free:
                raise self.error(f"undefined global function @{name}", offset)
            gv = self.globals[name] = GlobalVar(name)
        span = self.trailer()
        if span:
            from dataclasses import replace

            return replace(gv, span=span)
        return gv

    def number(self, text: str, offset: int) -> Constant:
        try:
            array = lx.scalar(text)
        except (ValueError, OverflowError) as err:
            raise self.error(f"invalid number {text!r}: {err}", offset) from None
        return Constant(NDArray(array), span=self.located(offset))

    def ident(self, text: str, offset: int) -> Expr:
        handler = _KEYWORD_ATOMS.get(text)
        if handler is not None:
            return handler(self, text, offset)
        if text == "match":
            raise self.error(_NO_ADTS, offset)
        if text in _KEYWORDS:
            raise self.error(f"unexpected keyword {text!r}", offset)
        try:
            return Op.get(text)
        except OpNotFoundError as err:
            raise self.error(str(err), offset) from None

    def boolean(self, text: str, offset: int) -> Constant:
        return Constant(NDArray(np.array(text == "True")), span=self.located(offset))

    def meta_ref(self, text: str, offset: int) -> Constant:
        self.expect("[")
        kind, _ = self.expect_kind(lx.IDENT, "a metadata kind such as relay.Constant")
        self.expect("]")
        self.expect("[")
        index_text, index_offset = self.expect_kind(lx.NUMBER, "a metadata index")
        self.expect("]")
        table = self.meta.get(kind)
        if table is None:
            raise self.error(f"no metadata of kind {kind!r}: the text has no #[metadata] "
                             "section and none was given", offset)
        if not index_text.isdigit() or int(index_text) >= len(table):
            raise self.error(f"metadata index {index_text} out of range ({kind} has "
                             f"{len(table)} entries)", index_offset)
        span = self.located(offset)
        key = (int(index_text), span)
        found = self.const_cache.get(key)
        if found is None:
            array = NDArray(lx.as_array(table[key[0]]))
            found = self.const_cache[key] = Constant(array, span=span)
        return found

    def function(self, text: str, offset: int) -> Function:
        return self.function_rest(offset)

    def if_expr(self, text: str, offset: int) -> If:
        self.expect("(")
        cond = self.expr()
        self.expect(")")
        then = self.block()
        self.expect("else")
        other = self.block()
        return If(cond, then, other, span=self.located(offset))

    def paren(self, text: str, offset: int) -> Expr:
        fields: list[Expr] = []
        trailing_comma = False
        while not self.at(")"):
            fields.append(self.expr())
            trailing_comma = self.at(",")
            if not trailing_comma:
                break
            self.take()
        self.expect(")")
        if len(fields) == 1 and not trailing_comma:
            return fields[0]
        return Tuple(tuple(fields), span=self.located(offset))

    def brace(self, text: str, offset: int) -> Expr:
        self.scopes.append({})
        body = self.scope_body()
        self.scopes.pop()
        self.expect("}")
        return body

    # --- trailing comments --------------------------------------------------------------
    def located(self, start: int) -> SpanLike:
        """The span of the expression that began at `start`: its span comment, or else its
        place in the file (TVM's parser spans), so hand-written text has lineage too."""
        return self.trailer() or self.source_span(start)

    def trailer(self) -> SpanLike:
        span: SpanLike = UNKNOWN_SPAN
        while self.kinds[self.i] == lx.COMMENT:
            text, offset = self.texts[self.i], self.offsets[self.i]
            self.i += 1
            content = text[2:-2]
            stripped = content.lstrip()
            if stripped.startswith(("ty=", "span=")):
                span = self.info_comment(content, offset + 2) or span
                continue
            if stripped.startswith(VALUES_NOTE):  # the printer's note of a constant's values
                continue
            try:
                span = lx.parse_span_comment(content)
            except lx.LexError as err:
                raise self.error(str(err), offset + 2 + err.offset) from None
        return span

    def info_comment(self, content: str, start: int) -> SpanLike:
        """TVM's `/* ty=Tensor[(1, 4), float32] span=conv1:0:0 */`: the type is checked for
        syntax (InferType recomputes it); the span is returned."""
        type_text, _, span_text = content.partition("span=")
        type_text = type_text.strip()
        if type_text:
            type_start = start + content.index("ty=") + 3
            parse_type(self.text, start=type_start, end=type_start + len(type_text) - 3,
                       source_name=self.source_name)
        if not span_text.strip():
            return UNKNOWN_SPAN
        try:
            return lx.tvm_span(span_text.strip())
        except lx.LexError as err:
            raise self.error(str(err), start + content.index("span=") + 5) from None


def _punct_atom(parser: _Parser, text: str, offset: int) -> Expr:
    if text == "(":
        return parser.paren(text, offset)
    if text == "{":
        return parser.brace(text, offset)
    raise parser.error(f"expected an expression, got {text!r}", offset)


_ATOMS: dict[str, Any] = {
    lx.TEMP: _Parser.name_ref, lx.LOCAL: _Parser.name_ref, lx.GLOBAL: _Parser.global_ref,
    lx.NUMBER: _Parser.number, lx.IDENT: _Parser.ident, lx.PUNCT: _punct_atom,
}
_KEYWORD_ATOMS: dict[str, Any] = {
    "True": _Parser.boolean, "False": _Parser.boolean, "meta": _Parser.meta_ref,
    "fn": _Parser.function, "if": _Parser.if_expr,
}


# --- entry points -------------------------------------------------------------------------


def _parser(text: str, source_name: str, metadata: Mapping[str, Sequence[Any]] | None,
            free_vars: bool, start: int = 0, end: int | None = None) -> _Parser:
    try:
        tokens = lx.tokenize(text, start, end)
    except lx.LexError as err:
        raise lx.TokenStream(text, source_name, lx.Tokens([lx.EOF], [""], [0])).error(
            str(err), err.offset) from None
    table: dict[str, Sequence[Any]] = {}
    if tokens.metadata is not None:
        stream = lx.TokenStream(text, source_name, tokens)
        try:
            section = json.loads(tokens.metadata)
            table.update(meta_tables(section) if is_node_graph(section) else section)
        except json.JSONDecodeError as err:
            raise stream.error(f"invalid metadata section: {err.msg}",
                               tokens.metadata_offset + err.pos) from None
        except (MetaFormatError, KeyError, IndexError, TypeError) as err:
            raise stream.error(f"invalid metadata section: {err}",
                               tokens.metadata_offset) from None
    table.update(metadata or {})
    return _Parser(text, source_name, tokens, table, free_vars)


def parse(text: str, source_name: str = "<string>",
          metadata: Mapping[str, Sequence[Any]] | None = None) -> IRModule:
    """Parse Relay text into an IRModule (`metadata`: `{"relay.Constant": [arrays]}`)."""
    return _parser(text, source_name, metadata, free_vars=False).program()


fromtext = parse


def parse_expr(text: str, source_name: str = "<string>",
               metadata: Mapping[str, Sequence[Any]] | None = None) -> Expr:
    """Parse one expression (bindings and lets allowed); free `%vars` become new Vars."""
    parser = _parser(text, source_name, metadata, free_vars=True)
    parser.version()
    expr = parser.scope_body()
    parser.end()
    return expr


def parse_type(text: str, start: int = 0, end: int | None = None,
               source_name: str = "<string>") -> Type:
    """Parse a type such as `Tensor[(1, ?), float32]` (in `text[start:end]`)."""
    parser = _parser(text, source_name, None, free_vars=False, start=start, end=end)
    ty = parser.type()
    parser.end()
    return ty
