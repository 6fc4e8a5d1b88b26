"""Source information: where an expression came from.

A `Span` names one source location (for frontends: the layer name, with zero
line/column); a `SequentialSpan` keeps every source of an expression that a
many-to-one transformation produced. Unknown is a value (`UNKNOWN_SPAN`), never
None, and is falsy, so `if expr.span:` reads as "has a known source".
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class SourceName:
    """The name of a source: a file, or (for frontends) a layer name."""

    name: str

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True, slots=True)
class Span:
    """One source location. Frontend spans have line = column = 0."""

    source_name: SourceName
    line: int = 0
    column: int = 0
    end_line: int = 0
    end_column: int = 0

    def __post_init__(self) -> None:
        if isinstance(self.source_name, str):
            object.__setattr__(self, "source_name", SourceName(self.source_name))

    def __bool__(self) -> bool:
        return bool(self.source_name.name)

    @property
    def layer(self) -> str:
        """The layer this span names: the source name of a frontend span (line 0), and
        `line N` for a position in a text file (Relay text parsed without span comments)."""
        return f"line {self.line}" if self.line > 0 else self.source_name.name

    def source_names(self) -> tuple[str, ...]:
        """The layers this span names (one, or none when unknown)."""
        return (self.layer,) if self else ()


@dataclass(frozen=True, slots=True)
class SequentialSpan:
    """All the sources of one expression, in order, without repeats.

    Nested SequentialSpans flatten and unknown spans drop out, so equality is
    element-wise over the known sources.
    """

    spans: tuple[Span, ...]

    def __init__(self, spans: Iterable[Span | SequentialSpan]) -> None:
        object.__setattr__(self, "spans", _flatten(spans))

    def __bool__(self) -> bool:
        return bool(self.spans)

    def source_names(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(s.layer for s in self.spans))

    def __iter__(self) -> Iterator[Span]:
        return iter(self.spans)

    def __len__(self) -> int:
        return len(self.spans)

    def __getitem__(self, index: int) -> Span:
        return self.spans[index]


SpanLike = Span | SequentialSpan

UNKNOWN_SPAN = Span(SourceName(""))


def span_leaves(span: SpanLike) -> tuple[Span, ...]:
    """The known Spans in `span`: its elements, itself, or none when it is unknown."""
    if isinstance(span, SequentialSpan):
        return span.spans
    return (span,) if span else ()


def _flatten(spans: Iterable[Span | SequentialSpan]) -> tuple[Span, ...]:
    out: dict[Span, None] = {}
    for span in spans:
        if span is None:
            continue
        for leaf in span_leaves(span):
            out.setdefault(leaf, None)
    return tuple(out)


def merge_spans(spans: Iterable[SpanLike]) -> SpanLike:
    """Merge spans into the smallest value: unknown, one Span, or a SequentialSpan."""
    flat = _flatten(spans)
    if not flat:
        return UNKNOWN_SPAN
    if len(flat) == 1:
        return flat[0]
    return SequentialSpan(flat)


def layer_span(name: str) -> Span:
    """The span frontends give an expression converted from layer `name`."""
    return Span(SourceName(name), 0, 0, 0, 0)
