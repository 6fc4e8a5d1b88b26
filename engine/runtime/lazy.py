"""Constants whose bytes are not in memory: memory-mapped weights and deferred computations.

A 7B-parameter model carries 13 GB of weights; showing its passes needs only their types.
An `NDArray` can therefore stand for a `LazySource`: its shape and dtype are known, its
bytes are produced only when `numpy()` asks for them:

- `mapped(path, offset, shape, dtype)`: a tensor stored in a file (an ONNX initializer's
  `raw_data`, or its external data file), read through `numpy.memmap`: the pages come in
  when the numbers are read and the kernel may drop them again, nothing is copied;
- `deferred(shape, dtype, key, compute)`: the result of a computation over other
  constants (FoldConstant on a transposed weight, FoldScaleAxis scaling it, AlterOpLayout
  re-laying it out), run when the value is asked for, not when the pass folds it.

The choice (rather than a size limit that leaves big constants unfolded) keeps TVM's
semantics: after FoldConstant the IR holds a constant, typed as TVM's would be, printed
as a `meta[relay.Constant]` reference; only the moment its bytes exist moves. Consumers
that need types only (type inference, printing, diffs, structural hashing, the explorer's
recording) read `shape`/`dtype`/`content_key()` and never the bytes; `reads` counts the
times a source produced its value, so tests can assert that a pipeline read none.

Equality and hashing of a lazy constant go by its `key` (its file, offset, shape and
dtype, or the computation and the keys of its inputs), not by its bytes: two constants
read from the same place compare equal without reading it; two of equal content from
different places compare unequal (a common-subexpression merge is missed, never wrong).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

CACHE_LIMIT = 1 << 20
"""A deferred result up to this many bytes is kept once computed; a bigger one is
computed again on each read (holding it would keep the weights in memory)."""


@dataclass(eq=False, slots=True)
class LazySource:
    """Shape, dtype and a way to produce the bytes (see module docstring)."""

    shape: tuple[int, ...]
    dtype: str
    key: Hashable
    loader: Callable[[], np.ndarray]
    reads: int = 0
    _cached: np.ndarray | None = field(default=None, repr=False)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) if self.shape else 1

    @property
    def nbytes(self) -> int:
        return self.size * np.dtype(self.dtype).itemsize

    def load(self) -> np.ndarray:
        """The value (read-only); counts in `reads` unless it was cached."""
        if self._cached is not None:
            return self._cached
        self.reads += 1
        array = np.asanyarray(self.loader())  # a memmap stays one (no copy)
        if tuple(array.shape) != self.shape or str(array.dtype) != self.dtype:
            raise ValueError(f"lazy constant {self.key!r} produced {array.shape}/{array.dtype}, "
                             f"declared {self.shape}/{self.dtype}")
        if array.flags.writeable:
            array = array.view()
            array.flags.writeable = False
        if self.nbytes <= CACHE_LIMIT:
            self._cached = array
        return array


def mapped(path: str | Path, offset: int, shape: tuple[int, ...], dtype: np.dtype | str
           ) -> LazySource:
    """A tensor of `dtype` (little-endian, C order) at `offset` in the file at `path`."""
    dt = np.dtype(dtype).newbyteorder("<")
    name = str(path)
    shape = tuple(int(d) for d in shape)

    def load() -> np.ndarray:
        if not shape or 0 in shape:
            with open(name, "rb") as handle:
                handle.seek(offset)
                raw = handle.read(dt.itemsize * int(np.prod(shape, dtype=np.int64)))
            return np.frombuffer(raw, dtype=dt).reshape(shape).astype(dt.newbyteorder("="))
        array = np.memmap(name, dtype=dt, mode="r", offset=offset, shape=shape)
        return array if dt.isnative else array.astype(dt.newbyteorder("="))

    return LazySource(shape, str(np.dtype(dtype)), ("file", name, offset, shape, str(dt)), load)


def deferred(shape: tuple[int, ...], dtype: str, key: Hashable,
             compute: Callable[[], np.ndarray]) -> LazySource:
    """A value computed by `compute` when it is first read (see module docstring)."""
    return LazySource(tuple(int(d) for d in shape), str(np.dtype(dtype)), key, compute)


__all__ = ["CACHE_LIMIT", "LazySource", "deferred", "mapped"]
