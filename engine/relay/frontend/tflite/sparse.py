"""TFLite sparse tensors (the schema's `SparsityParameters`) densified with numpy.

The stored values are the non-zeros in traversal order. The tensor's dense shape is split
into `rank` outer dimensions plus one inner dimension per blocked dimension (`block_map`);
`traversal_order` permutes those `rank + len(block_map)` dimensions into storage order, and
`dim_metadata[level]` describes storage level `level`: DENSE (every index 0..dense_size) or
SPARSE_CSR (`array_segments[parent] .. array_segments[parent + 1]` into `array_indices`).
A leaf takes the next stored value; its dense coordinate is the outer index times the block
size plus the inner index (TFLite's `sparsity::FormatConverter::SparseToDense`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

DENSE, SPARSE_CSR = 0, 1


@dataclass(frozen=True)
class DimLevel:
    format: int
    dense_size: int
    segments: np.ndarray
    indices: np.ndarray


@dataclass(frozen=True)
class Sparsity:
    traversal_order: tuple[int, ...]
    block_map: tuple[int, ...]
    levels: tuple[DimLevel, ...]


def _block_sizes(shape: Sequence[int], sparsity: Sparsity) -> list[int]:
    rank = len(shape)
    sizes = []
    for k, dim in enumerate(sparsity.block_map):
        size = sparsity.levels[sparsity.traversal_order[rank + k]].dense_size
        if size <= 0 or shape[dim] % size:
            raise ValueError(f"block size {size} does not divide dimension {dim} ({shape[dim]})")
        sizes.append(size)
    return sizes


def _coordinates(sparsity: Sparsity) -> np.ndarray:
    """Storage-order coordinates of every stored value, one row per value (in order)."""
    coords = np.zeros((1, 0), dtype=np.int64)
    parents = np.zeros(1, dtype=np.int64)  # position of each partial path in its level
    for level in sparsity.levels:
        if level.format == DENSE:
            size = level.dense_size
            inner = np.tile(np.arange(size, dtype=np.int64), len(parents))
            coords = np.repeat(coords, size, axis=0)
            parents = np.repeat(parents, size) * size + inner
        elif level.format == SPARSE_CSR:
            starts, ends = level.segments[parents], level.segments[parents + 1]
            counts = ends - starts
            if np.any(counts < 0) or (counts.sum() and ends.max() > len(level.indices)):
                raise ValueError("sparse segments point outside the index array")
            positions = np.concatenate([np.arange(s, e) for s, e in zip(starts, ends)]) \
                if len(parents) else np.zeros(0, dtype=np.int64)
            coords = np.repeat(coords, counts, axis=0)
            inner = level.indices[positions.astype(np.int64)]
            parents = positions.astype(np.int64)
        else:
            raise ValueError(f"unknown dimension format {level.format}")
        coords = np.concatenate([coords, inner.reshape(-1, 1).astype(np.int64)], axis=1)
    return coords


def densify(values: np.ndarray, shape: Sequence[int], sparsity: Sparsity) -> np.ndarray:
    rank = len(shape)
    order = sparsity.traversal_order
    if len(order) != rank + len(sparsity.block_map) or len(sparsity.levels) != len(order):
        raise ValueError(f"traversal order {list(order)} does not fit a rank-{rank} tensor "
                         f"with {len(sparsity.block_map)} blocked dimensions")
    blocks = _block_sizes(shape, sparsity)
    coords = _coordinates(sparsity)
    if len(coords) != values.size:
        raise ValueError(f"the sparsity structure addresses {len(coords)} values, the buffer "
                         f"holds {values.size}")
    dense_index = np.zeros((len(coords), rank), dtype=np.int64)
    for level, dim in enumerate(order[:rank]):
        dense_index[:, dim] = coords[:, level]
    for level in range(rank, len(order)):
        block = order[level] - rank
        dim = sparsity.block_map[block]
        dense_index[:, dim] = dense_index[:, dim] * blocks[block] + coords[:, level]
    if np.any(dense_index >= np.asarray(shape, dtype=np.int64)) or np.any(dense_index < 0):
        raise ValueError("a sparse index lies outside the dense shape")
    out = np.zeros(tuple(shape), dtype=values.dtype)
    out[tuple(dense_index.T)] = values.reshape(-1)
    return out
