"""The rows of an imported file, whatever holds them: a JSON Lines file (one JSON object a line), a Parquet file,
or a Hugging Face ``datasets`` folder written by ``Dataset.save_to_disk`` (what ``hardneg export hardnegs`` writes
for sentence-transformers and hf-dataset). Each row comes with where it is, for the errors: ``<file>, line <n>``
(JSON Lines, counting every line of the file) or ``<path>, row <n>`` (Parquet and ``datasets`` rows, from 1).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

from hardneg.errors import DataError, HardnegError

_BATCH = 4096  # rows read at a time from a Parquet file or a datasets folder


def container(path: str | os.PathLike) -> str:
    """What holds the rows of ``path``: ``datasets`` (a ``save_to_disk`` folder), ``parquet`` (a file named
    ``*.parquet``) or ``jsonl`` (any other file).

    :raises HardnegError: ``path`` does not exist, or is a folder that is not a saved dataset.
    """
    path = Path(path)
    if path.is_dir():
        if (path / "dataset_dict.json").is_file():
            splits = json.loads((path / "dataset_dict.json").read_text(encoding="utf-8")).get("splits", [])
            raise HardnegError(
                f"{path}: a DatasetDict folder (splits {', '.join(map(str, splits))}); give the "
                f"folder of one split, e.g. {path / (splits[0] if splits else 'train')}"
            )
        if not (path / "state.json").is_file():
            raise HardnegError(
                f"{path}: a folder but not a saved Hugging Face dataset (no state.json, as "
                "Dataset.save_to_disk writes); give a JSON Lines or Parquet file, or such a folder"
            )
        return "datasets"
    if not path.exists():
        raise HardnegError(f"{path}: no such file or folder to import")
    return "parquet" if path.suffix == ".parquet" else "jsonl"


def _jsonl_rows(path: Path) -> Iterator[tuple[str, dict]]:
    with open(path, encoding="utf-8") as handle:
        try:
            for number, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                except json.JSONDecodeError as error:
                    raise DataError(
                        path, number, f"not a JSON object ({error.msg}); a JSON Lines file holds one object a line"
                    ) from None
                if not isinstance(row, dict):
                    raise DataError(path, number, f"a JSON {type(row).__name__}, not an object")
                yield f"{path}, line {number}", row
        except UnicodeDecodeError as error:
            raise DataError(
                path,
                None,
                f"not UTF-8 text ({error.reason} at byte {error.start}): a JSON Lines file "
                "was expected (a Parquet file must be named *.parquet)",
            ) from None


def _table_rows(path: Path, batches) -> Iterator[tuple[str, dict]]:
    number = 0
    for batch in batches:
        for row in batch.to_pylist():
            number += 1
            yield f"{path}, row {number}", row


def read_rows(path: str | os.PathLike) -> Iterator[tuple[str, dict]]:
    """Every row of ``path`` as a dict of its columns, in order, each after where it is (see the module
    docstring).

    :raises HardnegError: ``path`` is missing or not one of the three; :class:`~hardneg.errors.DataError` for a
        line that is not a JSON object or a file that is not Parquet, naming the file (and line).
    """
    path = Path(path)
    kind = container(path)
    if kind == "jsonl":
        yield from _jsonl_rows(path)
        return
    import pyarrow as pa  # pyarrow and datasets: imported only for the containers that need them

    if kind == "parquet":
        # pyarrow: only for a Parquet file
        import pyarrow.parquet as pq

        try:
            parquet = pq.ParquetFile(path)
        except pa.ArrowException as error:
            raise DataError(path, None, f"not a readable Parquet file ({error})") from None
        yield from _table_rows(path, parquet.iter_batches(batch_size=_BATCH))
        return
    # Hugging Face datasets (a second to import): only for a saved dataset
    import datasets

    dataset = datasets.load_from_disk(str(path))
    yield from _table_rows(path, dataset.with_format("arrow").iter(batch_size=_BATCH))
