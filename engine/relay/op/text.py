"""Text features: `tfidf_vectorizer` (ONNX TfIdfVectorizer): count the n-grams of a pool in
each row of token ids, skipping up to `max_skip_count` tokens between an n-gram's items,
and weigh the counts (TF, IDF or TFIDF) into a fixed-size vector per row."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from engine.ir.attrs import Attrs
from engine.ir.expr import Call, Expr
from engine.ir.type import TensorType, Type
from engine.relay.op._typing import check_arity, check_ndim, tensor_arg, type_str
from engine.relay.op.op import OPAQUE, TypeRelationError, define_op, make_call

TFIDF_KEY = "relay.attrs.TfIdfVectorizerAttrs"
MODES = ("TF", "IDF", "TFIDF")


def _tfidf_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    """tokens (C,) or (B, C) ints -> (size,) or (B, size) float32."""
    check_arity(arg_types, 1)
    data = tensor_arg(arg_types, 0)
    check_ndim(data, 0, (1, 2))
    if not data.dtype.startswith(("int", "uint")):
        raise TypeRelationError("needs integer token ids", arg=0, expected="an int tensor",
                                actual=type_str(data))
    return TensorType((*data.shape[:-1], int(attrs.output_size)), "float32")


def _vocabulary(attrs: Attrs) -> dict[tuple[int, ...], int]:
    """n-gram -> output column, for the n-grams of the counted lengths."""
    low, high = int(attrs.min_gram_length), int(attrs.max_gram_length)
    return {tuple(gram): int(col) for gram, col in zip(attrs.ngrams, attrs.columns)
            if low <= len(gram) <= high}


def _count_row(row: Sequence[int], vocabulary: dict[tuple[int, ...], int], attrs: Attrs,
               counts: np.ndarray) -> None:
    """Add the n-grams of `row` to `counts`; a unigram counts once, a longer n-gram once
    per gap 1 .. max_skip_count + 1 between its items."""
    n = len(row)
    for size in range(int(attrs.min_gram_length), int(attrs.max_gram_length) + 1):
        gaps = range(1, 2) if size == 1 else range(1, int(attrs.max_skip_count) + 2)
        for gap in gaps:
            for start in range(n - gap * (size - 1)):
                column = vocabulary.get(tuple(row[start:start + gap * (size - 1) + 1:gap]))
                if column is not None:
                    counts[column] += 1


def _tfidf_compute(xs: list[np.ndarray], attrs: Attrs) -> np.ndarray:
    data = xs[0]
    rows = data.reshape(-1, data.shape[-1]).tolist()
    counts = np.zeros((len(rows), int(attrs.output_size)), np.float32)
    vocabulary = _vocabulary(attrs)
    for row, out in zip(rows, counts):
        _count_row(row, vocabulary, attrs, out)
    size = int(attrs.output_size)
    weights = np.asarray(attrs.weights[:size], np.float32) if attrs.weights else None
    if attrs.mode == "IDF":
        counts = (counts > 0) * (weights if weights is not None else np.float32(1))
    elif attrs.mode == "TFIDF" and weights is not None:
        counts = counts * weights
    return counts.astype(np.float32).reshape((*data.shape[:-1], int(attrs.output_size)))


define_op("tfidf_vectorizer", ("data",), _tfidf_rel, OPAQUE, _tfidf_compute,
          attrs_type_key=TFIDF_KEY)


def tfidf_vectorizer(data: Expr, ngrams: Sequence[Sequence[int]], columns: Sequence[int],
                     min_gram_length: int, max_gram_length: int, max_skip_count: int,
                     mode: str = "TF", weights: Sequence[float] = ()) -> Call:
    """Count the `ngrams` (each into its output column of `columns`) of the lengths
    min..max_gram_length in each row of `data`; `mode` TF keeps the counts, IDF puts the
    column's weight (or 1) where the count is positive, TFIDF multiplies by the weights."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    size = max(columns, default=-1) + 1
    if len(ngrams) != len(columns):
        raise ValueError(f"{len(ngrams)} ngrams but {len(columns)} columns")
    if weights and len(weights) < size:
        raise ValueError(f"{len(weights)} weights for {size} output columns")
    return make_call("tfidf_vectorizer", (data,), {
        "ngrams": tuple(tuple(int(t) for t in g) for g in ngrams),
        "columns": tuple(int(c) for c in columns), "output_size": size,
        "min_gram_length": int(min_gram_length), "max_gram_length": int(max_gram_length),
        "max_skip_count": int(max_skip_count), "mode": mode,
        "weights": tuple(float(w) for w in weights)}, TFIDF_KEY)


__all__ = ["tfidf_vectorizer"]
