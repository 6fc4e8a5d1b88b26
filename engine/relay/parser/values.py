"""The Relay text grammar that is not expressions: attribute values (`axis=1`,
`padding=[1, 1]`, `{...}`) and types (`Tensor[(1, ?), float32]`, tuples, `fn (...) -> ...`).
`ValueReader` is the token-stream reader the expression parser (reader.py) builds on."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from engine.ir.attrs import Attrs
from engine.ir.type import AnyDim, FuncType, IncompleteType, TensorType, TupleType, Type
from engine.relay.parser import lexer as lx

_ATTR_WORDS: dict[str, Any] = {"True": True, "False": False, "None": None}


class ValueReader(lx.TokenStream):
    # --- attributes ---------------------------------------------------------------------
    def attr(self) -> tuple[str, Any]:
        kind, text, offset = self.take()
        key = lx.decode_string(text) if kind == lx.STRING else text
        if kind not in (lx.IDENT, lx.STRING):
            raise self.error(f"expected an attribute name, got {text!r}", offset)
        self.expect("=")
        return key, self.attr_value()

    def attr_value(self) -> Any:
        kind, text, offset = self.take()
        if kind == lx.NUMBER:
            try:
                return lx.attr_number(text)
            except ValueError as err:
                raise self.error(str(err), offset) from None
        if kind == lx.STRING:
            return lx.decode_string(text)
        if kind == lx.IDENT and text in _ATTR_WORDS:
            return _ATTR_WORDS[text]
        if text == "[":
            return tuple(self.attr_list("]", self.attr_value))
        if text == "{":
            return Attrs(dict(self.attr_list("}", self.attr)))
        raise self.error(f"expected an attribute value, got {text!r}", offset)

    def attr_list(self, close: str, item: Any) -> list[Any]:
        out: list[Any] = []
        while not self.at(close):
            if out:
                self.expect(",")
                if self.at(close):
                    break
            out.append(item())
        self.expect(close)
        return out

    # --- types --------------------------------------------------------------------------
    def type(self) -> Type:
        kind, text, offset = self.take()
        if text == "(":
            fields = self.attr_list(")", self.type)
            return TupleType(fields)
        if kind != lx.IDENT:
            raise self.error(f"expected a type, got {text!r}", offset)
        if text == "Tensor":
            return self.tensor_type()
        if text == "fn":
            self.expect("(")
            args = self.attr_list(")", self.type)
            self.expect("->")
            return FuncType(args, self.type())
        if text == "_":
            return IncompleteType()
        return self.dtype_type(text, offset, ())

    def tensor_type(self) -> TensorType:
        self.expect("[")
        self.expect("(")
        dims = self.attr_list(")", self.dim)
        self.expect(",")
        text, offset = self.expect_kind(lx.IDENT, "a dtype such as float32")
        self.expect("]")
        return self.dtype_type(text, offset, dims)

    def dim(self) -> Any:
        kind, text, offset = self.take()
        if text == "?":
            return AnyDim()
        if kind == lx.NUMBER and text.isdigit():
            return int(text)
        raise self.error(f"expected a dimension (an integer or ?), got {text!r}", offset)

    def dtype_type(self, dtype: str, offset: int, dims: Sequence[Any]) -> TensorType:
        try:
            return TensorType(dims, dtype)
        except TypeError as err:
            raise self.error(f"invalid dtype {dtype!r}: {err}", offset) from None
