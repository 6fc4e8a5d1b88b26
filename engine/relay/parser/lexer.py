"""Tokens of the Relay text format, and the contents of span comments.

`tokenize` returns three parallel lists (kinds, texts, offsets) ending with an
EOF token; block comments are kept as COMMENT tokens because the parser reads
span and type comments that trail an expression. Line comments are dropped.
A `#[metadata]` line ends the program: the rest of the text is its JSON.
"""

from __future__ import annotations

import base64
import bisect
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from engine.ir.errors import ParseError
from engine.ir.expr import Constant
from engine.ir.span import SequentialSpan, SourceName, Span, SpanLike
from engine.relay.printer.format import SUFFIX_DTYPE

TEMP = "TEMP"          # %0
LOCAL = "LOCAL"        # %x
GLOBAL = "GLOBAL"      # @main, @"odd name"
NUMBER = "NUMBER"      # 1, -2.5e3f, 1i64, inff, nanf16
STRING = "STRING"      # "NCHW"
IDENT = "IDENT"        # nn.conv2d, Tensor, float32, fn, let
COMMENT = "COMMENT"    # /* ... */
VERSION = "VERSION"    # #[version = "0.0.5"]
METADATA = "METADATA"  # #[metadata]
PUNCT = "PUNCT"        # ( ) [ ] { } , ; = : -> => . ?
EOF = "EOF"

_STRING = r'"(?:[^"\\\n]|\\.)*"'
_PATTERN = re.compile("|".join([  # most frequent first
    r"(?P<WS>\s+)",
    r"(?P<PUNCT>->|=>|[()\[\]{},;=:.?])",
    r"(?P<TEMP>%\d+)",
    rf"(?P<LOCAL>%(?:[A-Za-z_][A-Za-z0-9_]*|{_STRING}))",
    r"(?P<NUMBER>-?(?:\d+(?:\.\d+)?(?:[eE][+-]?\d+)?|(?:inf|nan)(?=f))(?:[fiu]\d*)?"
    r"(?![A-Za-z0-9_]))",
    r"(?P<IDENT>[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)",
    r"(?P<COMMENT>/\*.*?\*/)",
    rf"(?P<GLOBAL>@(?:[A-Za-z_][A-Za-z0-9_]*|{_STRING}))",
    rf"(?P<STRING>{_STRING})",
    r"(?P<LINE_COMMENT>//[^\n]*)",
    r'(?P<VERSION>#\[version\s*=\s*"[^"]*"\s*\])',
    r"(?P<METADATA>#\[metadata\])",
    r"(?P<ERROR>.)",
]), re.DOTALL)


class LexError(ValueError):
    def __init__(self, message: str, offset: int) -> None:
        super().__init__(message)
        self.offset = offset


@dataclass(slots=True)
class Tokens:
    kinds: list[str]
    texts: list[str]
    offsets: list[int]
    metadata: str | None = None
    metadata_offset: int = -1


def _error_message(text: str, offset: int) -> str:
    if text.startswith("/*", offset):
        return "unterminated comment"
    if text.startswith('"', offset):
        return "unterminated string literal"
    return f"unexpected character {text[offset]!r}"


def tokenize(text: str, start: int = 0, end: int | None = None) -> Tokens:
    """Split `text[start:end]` into tokens; raise LexError at the first bad character."""
    kinds: list[str] = []
    texts: list[str] = []
    offsets: list[int] = []
    out = Tokens(kinds, texts, offsets)
    stop = len(text) if end is None else end
    for match in _PATTERN.finditer(text, start, stop):
        kind = match.lastgroup
        if kind == "WS" or kind == "LINE_COMMENT":
            continue
        if kind == "ERROR":
            raise LexError(_error_message(text, match.start()), match.start())
        if kind == METADATA:
            out.metadata = text[match.end():stop]
            out.metadata_offset = match.end()
            break
        kinds.append(kind)  # type: ignore[arg-type]
        texts.append(match.group())
        offsets.append(match.start())
    kinds.append(EOF)
    texts.append("")
    offsets.append(stop if out.metadata_offset < 0 else out.metadata_offset)
    return out


def decode_string(literal: str) -> str:
    """The value of a double-quoted literal (JSON escapes, plus `\\/`)."""
    return json.loads(literal)


# --- span comments: `conv1, "a b":3:4-5:6, bn1` ---------------------------------------

_SPAN_ITEM = re.compile(
    rf"\s*(?:(?P<plain>[A-Za-z0-9_][A-Za-z0-9_.\-/]*)|(?P<quoted>{_STRING}))"
    r"(?::(?P<line>-?\d+):(?P<col>-?\d+)(?:-(?P<eline>-?\d+):(?P<ecol>-?\d+))?)?\s*"
    r"(?P<sep>,)?\s*")


_ONE_PLAIN_NAME = re.compile(r"\s*([A-Za-z0-9_][A-Za-z0-9_.\-/]*)\s*\Z")


def parse_span_comment(content: str) -> SpanLike:
    """The span written in a comment's content; LexError (offset in content) if malformed."""
    plain = _ONE_PLAIN_NAME.match(content)
    if plain is not None:  # the common case: one layer name
        return Span(SourceName(plain.group(1)))
    spans: list[Span] = []
    pos, trailing_comma = 0, False
    while pos < len(content):
        match = _SPAN_ITEM.match(content, pos)
        if match is None or match.end() == pos:
            raise LexError("malformed span comment: expected a source name", pos)
        spans.append(_span_from(match))
        trailing_comma = match.group("sep") is not None
        pos = match.end()
        if not trailing_comma and pos < len(content):
            raise LexError("malformed span comment: expected ',' between source names", pos)
    if not spans:
        raise LexError("empty span comment", 0)
    if len(spans) == 1 and not trailing_comma:
        return spans[0]
    return SequentialSpan(spans)


def tvm_span(text: str) -> Span:
    """The span TVM's printer writes after `span=`: `name:line:column`."""
    name, sep1, line = text.rpartition(":")
    name, sep2, column = name.rpartition(":")
    if not (sep1 and sep2 and name) or not _is_int(line) or not _is_int(column):
        raise LexError(f"malformed span {text!r}: expected name:line:column", 0)
    return Span(SourceName(name), int(line), int(column))


def _is_int(text: str) -> bool:
    return text.lstrip("-").isdigit()


def _span_from(match: re.Match[str]) -> Span:
    name = match.group("plain")
    if name is None:
        name = decode_string(match.group("quoted"))
    nums = [int(match.group(k) or 0) for k in ("line", "col", "eline", "ecol")]
    return Span(SourceName(name), *nums)


# --- token cursor ---------------------------------------------------------------------


class TokenStream:
    """Token cursor with positions rendered as ParseErrors."""

    def __init__(self, text: str, source_name: str, tokens: Tokens) -> None:
        self.text = text
        self.source_name = source_name
        self.kinds = tokens.kinds
        self.texts = tokens.texts
        self.offsets = tokens.offsets
        self.tokens = tokens
        self.i = 0
        self._line_starts: list[int] | None = None

    def error(self, message: str, offset: int | None = None) -> ParseError:
        if offset is None:
            offset = self.offsets[self.i]
        line, column = self.position(offset)
        return ParseError(message, source=self.text, line=line, column=column,
                          source_name=self.source_name)

    def position(self, offset: int) -> tuple[int, int]:
        """1-based line and column of `offset`."""
        if self._line_starts is None:
            self._line_starts = [0, *(m.end() for m in re.finditer("\n", self.text))]
        line = bisect.bisect_right(self._line_starts, offset)
        return line, offset - self._line_starts[line - 1] + 1

    def source_span(self, start: int) -> Span:
        """TVM's parser span: the source file, from `start` to the end of the last token
        taken (`Span(SourceName(path), line, column, end_line, end_column)`)."""
        last = self.i - 1
        while last > 0 and self.kinds[last] == COMMENT:
            last -= 1
        end = max(self.offsets[last] + len(self.texts[last]), start)
        line, column = self.position(start)
        end_line, end_column = self.position(end)
        return Span(SourceName(self.source_name), line, column, end_line, end_column)

    def skip_comments(self) -> None:
        while self.kinds[self.i] == COMMENT:
            self.i += 1

    def peek(self, ahead: int = 0) -> tuple[str, str]:
        self.skip_comments()
        j = self.i
        for _ in range(ahead):
            j += 1
            while self.kinds[j] == COMMENT:
                j += 1
            if self.kinds[j] == EOF:
                break
        return self.kinds[j], self.texts[j]

    def at(self, text: str) -> bool:
        self.skip_comments()
        return self.texts[self.i] == text and self.kinds[self.i] in (PUNCT, IDENT)

    def take(self) -> tuple[str, str, int]:
        self.skip_comments()
        i = self.i
        if self.kinds[i] != EOF:
            self.i += 1
        return self.kinds[i], self.texts[i], self.offsets[i]

    def expect(self, text: str) -> int:
        kind, got, offset = self.take()
        if got != text or kind not in (PUNCT, IDENT):
            shown = repr(got) if kind != EOF else "end of input"
            raise self.error(f"expected {text!r}, got {shown}", offset)
        return offset

    def expect_kind(self, kind: str, what: str) -> tuple[str, int]:
        got_kind, text, offset = self.take()
        if got_kind != kind:
            shown = repr(text) if got_kind != EOF else "end of input"
            raise self.error(f"expected {what}, got {shown}", offset)
        return text, offset


# --- literals -----------------------------------------------------------------------------


def split_number(text: str) -> tuple[str, str]:
    """`-2.5e3f16` -> ("-2.5e3", "f16"); `inff` -> ("inf", "f")."""
    body = text.rstrip("0123456789")
    digits = text[len(body):]
    if body and body[-1] in "fiu" and body.lstrip("-") not in ("", "in", "na"):
        return body[:-1], body[-1] + digits
    return text, ""


def scalar(text: str) -> np.ndarray:
    number, suffix = split_number(text)
    if suffix:
        dtype = SUFFIX_DTYPE.get(suffix)
        if dtype is None:
            raise ValueError(f"unknown literal suffix {suffix!r}")
    elif any(c in number for c in ".eEn"):
        dtype = "float32"
    else:
        dtype = "int32"
    if dtype.startswith("float"):
        return np.array(float(number), dtype=dtype)
    if any(c in number for c in ".eEn"):
        raise ValueError(f"{dtype} literal with a fraction")
    return np.array(int(number), dtype=dtype)


def attr_number(text: str) -> int | float:
    """An attribute number as TVM's printer writes it: `1e-05f` (a double or float32),
    `2i64` / `3i16` (an IntImm of that width), `1`."""
    number, suffix = split_number(text)
    if suffix.startswith("f") or any(c in number for c in ".eEn"):
        return float(number)
    if suffix and suffix not in SUFFIX_DTYPE:
        raise ValueError(f"unknown literal suffix {suffix!r}")
    return int(number)


def as_array(value: Any) -> np.ndarray:
    if isinstance(value, Constant):
        return value.data.numpy()
    if isinstance(value, Mapping):
        dtype = np.dtype(value["dtype"]).newbyteorder("<")
        raw = np.frombuffer(base64.b64decode(value["data"]), dtype=dtype)
        return raw.reshape(value["shape"]).astype(dtype.newbyteorder("="))
    return np.asarray(value)


def local_name(text: str) -> str:
    body = text[1:]
    return decode_string(body) if body.startswith('"') else body


def global_name(text: str) -> str:
    return local_name(text)
