"""``.npy`` matrices written and read in row blocks with ordinary file I/O.

A memory map is convenient, but every page it touches stays in the process's resident set: copying a mapped
matrix, or adding it to an index block by block, ends with the whole matrix resident as well as whatever the
blocks were copied into. :class:`NpyWriter` appends rows to a ``.npy`` in order and :class:`NpyRows` reads
row ranges (or a set of rows) of one, so a stage holds one block at a time; the files are byte for byte those
``numpy.save`` writes of the same matrix.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from typing import BinaryIO

import numpy as np

BLOCK_ROWS = 131_072  # rows read or copied at a time (32 MiB of 64-dimensional float32 vectors)


def _header(dtype, shape: tuple[int, ...]) -> dict:
    return {
        "descr": np.lib.format.dtype_to_descr(np.dtype(dtype)),
        "fortran_order": False,
        "shape": tuple(int(n) for n in shape),
    }


def read_header(handle: BinaryIO) -> tuple[tuple[int, ...], np.dtype]:
    """Shape and dtype of the ``.npy`` open in ``handle``, left at the start of its data; a Fortran-ordered
    array is refused (its rows are not contiguous)."""
    version = np.lib.format.read_magic(handle)
    read = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
    shape, fortran_order, dtype = read(handle)
    if fortran_order and len(shape) > 1:
        raise ValueError(f"{getattr(handle, 'name', 'the .npy file')} is Fortran-ordered; rows must be contiguous")
    if dtype.hasobject:
        raise ValueError(f"{getattr(handle, 'name', 'the .npy file')} holds Python objects")
    return shape, dtype


class NpyWriter:
    """Write a ``.npy`` of ``shape`` and ``dtype`` to ``path`` by appending rows in order (``write``); closing
    it checks that every row was written. Use it on a temporary path (:func:`hardneg.io.atomic.atomic_path`)."""

    def __init__(self, path: str | os.PathLike, shape: tuple[int, ...], dtype):
        self.path, self.shape, self.dtype = os.fspath(path), tuple(int(n) for n in shape), np.dtype(dtype)
        self.rows = 0
        self._handle = open(self.path, "wb")  # noqa: SIM115 (closed by close())
        np.lib.format.write_array_header_1_0(self._handle, _header(self.dtype, self.shape))

    def write(self, rows: np.ndarray) -> None:
        rows = np.ascontiguousarray(rows, dtype=self.dtype)
        if rows.shape[1:] != self.shape[1:] or self.rows + len(rows) > self.shape[0]:
            raise ValueError(f"{self.path}: cannot append {rows.shape} rows at row {self.rows} of {self.shape}")
        self._handle.write(rows.data)
        self.rows += len(rows)

    def copy_from(self, path: str | os.PathLike) -> int:
        """Append every row of the ``.npy`` at ``path`` (same dtype and row shape), copied as bytes; its rows."""
        with open(path, "rb") as source:
            shape, dtype = read_header(source)
            if dtype != self.dtype or tuple(shape[1:]) != self.shape[1:]:
                raise ValueError(f"{path} holds {shape} {dtype}, not rows of {self.shape[1:]} {self.dtype}")
            if self.rows + shape[0] > self.shape[0]:
                raise ValueError(f"{self.path}: {path} has more rows than are left ({self.shape[0] - self.rows})")
            shutil.copyfileobj(source, self._handle, length=1 << 22)
        self.rows += shape[0]
        return shape[0]

    def close(self) -> None:
        self._handle.close()
        if self.rows != self.shape[0]:
            raise ValueError(f"{self.path}: {self.rows} of {self.shape[0]} rows were written")

    def __enter__(self) -> NpyWriter:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.close()
        else:
            self._handle.close()


class NpyRows:
    """A 2-D ``.npy`` file read by rows: ``m[lo:hi]`` and ``m[sorted_rows]`` return ordinary arrays read from
    the file, nothing of it stays mapped. It has ``shape``, ``dtype``, ``ndim`` and ``len`` like an array."""

    ndim = 2

    def __init__(self, path: str | os.PathLike):
        self.path = os.fspath(path)
        with open(self.path, "rb") as handle:
            shape, self.dtype = read_header(handle)
            self.offset = handle.tell()
        if len(shape) != 2:
            raise ValueError(f"{self.path} is not a matrix: shape {shape}")
        self.shape = shape
        self.nbytes = shape[0] * shape[1] * self.dtype.itemsize

    def __len__(self) -> int:
        return self.shape[0]

    def read(self, lo: int, hi: int) -> np.ndarray:
        """Rows [lo, hi) (clipped to the matrix)."""
        lo, hi = max(0, lo), min(hi, self.shape[0])
        count = max(hi - lo, 0)
        with open(self.path, "rb") as handle:
            handle.seek(self.offset + lo * self.shape[1] * self.dtype.itemsize)
            rows = np.fromfile(handle, dtype=self.dtype, count=count * self.shape[1])
        if len(rows) != count * self.shape[1]:
            raise ValueError(f"{self.path} is truncated: rows {lo}-{hi} of {self.shape[0]} could not be read")
        return rows.reshape(count, self.shape[1])

    def take(self, rows: np.ndarray, block_rows: int = BLOCK_ROWS) -> np.ndarray:
        """The given rows, in the order given, read block by block (only the blocks holding one)."""
        rows = np.asarray(rows, dtype=np.int64)
        if len(rows) and (rows.min() < 0 or rows.max() >= self.shape[0]):
            raise IndexError(f"row index out of range for {self.shape[0]} rows")
        out = np.empty((len(rows), self.shape[1]), dtype=self.dtype)
        order = np.argsort(rows, kind="stable")
        ordered = rows[order]
        start = 0
        while start < len(ordered):
            lo = int(ordered[start])
            stop = int(np.searchsorted(ordered, lo + block_rows, side="left"))
            block = self.read(lo, int(ordered[stop - 1]) + 1)
            out[order[start:stop]] = block[ordered[start:stop] - lo]
            start = stop
        return out

    def __getitem__(self, key) -> np.ndarray:
        if isinstance(key, slice):
            lo, hi, step = key.indices(self.shape[0])
            if step != 1:
                raise IndexError("NpyRows reads contiguous row ranges only (step 1)")
            return self.read(lo, max(lo, hi))
        if isinstance(key, (int, np.integer)):
            index = int(key) + (self.shape[0] if key < 0 else 0)
            if not 0 <= index < self.shape[0]:
                raise IndexError(f"row {key} out of range for {self.shape[0]} rows")
            return self.read(index, index + 1)[0]
        return self.take(np.asarray(key))

    def blocks(self, block_rows: int = BLOCK_ROWS) -> Iterator[tuple[int, np.ndarray]]:
        """(first row, rows) of consecutive blocks of ``block_rows`` rows."""
        for lo in range(0, self.shape[0], block_rows):
            yield lo, self.read(lo, lo + block_rows)
