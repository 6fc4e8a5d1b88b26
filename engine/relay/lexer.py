"""Tokens of the Relay text format, and the contents of span comments.

`tokenize` returns three parallel lists (kinds, texts, offsets) ending with an
EOF token; block comments are kept as COMMENT tokens because the parser reads
span and type comments that trail an expression. Line comments are dropped.
A `#[metadata]` line ends the program: the rest of the text is its JSON.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from engine.ir.span import SequentialSpan, SourceName, Span, SpanLike

TEMP = "TEMP"          # %0
LOCAL = "LOCAL"        # %x
GLOBAL = "GLOBAL"      # @main, @"odd name"
NUMBER = "NUMBER"      # 1, -2.5e3f, 1i64, inff, nanf16
STRING = "STRING"      # "NCHW"
IDENT = "IDENT"        # nn.conv2d, Tensor, float32, fn, let
COMMENT = "COMMENT"    # /* ... */
VERSION = "VERSION"    # #[version = "0.0.5"]
METADATA = "METADATA"  # #[metadata]
PUNCT = "PUNCT"        # ( ) [ ] { } , ; = : -> . ?
EOF = "EOF"

_STRING = r'"(?:[^"\\\n]|\\.)*"'
_PATTERN = re.compile("|".join([
    r"(?P<WS>\s+)",
    r"(?P<LINE_COMMENT>//[^\n]*)",
    r"(?P<COMMENT>/\*.*?\*/)",
    r"(?P<TEMP>%\d+)",
    rf"(?P<LOCAL>%(?:[A-Za-z_][A-Za-z0-9_]*|{_STRING}))",
    rf"(?P<GLOBAL>@(?:[A-Za-z_][A-Za-z0-9_]*|{_STRING}))",
    r"(?P<NUMBER>-?(?:\d+(?:\.\d+)?(?:[eE][+-]?\d+)?|(?:inf|nan)(?=f))(?:[fiu]\d*)?"
    r"(?![A-Za-z0-9_]))",
    rf"(?P<STRING>{_STRING})",
    r"(?P<IDENT>[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)",
    r'(?P<VERSION>#\[version\s*=\s*"[^"]*"\s*\])',
    r"(?P<METADATA>#\[metadata\])",
    r"(?P<PUNCT>->|[()\[\]{},;=:.?])",
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


def parse_span_comment(content: str) -> SpanLike:
    """The span written in a comment's content; LexError (offset in content) if malformed."""
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


def _span_from(match: re.Match[str]) -> Span:
    name = match.group("plain")
    if name is None:
        name = decode_string(match.group("quoted"))
    nums = [int(match.group(k) or 0) for k in ("line", "col", "eline", "ecol")]
    return Span(SourceName(name), *nums)
