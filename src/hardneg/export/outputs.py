"""Where an export may be written, and the atomic writers of its files.

Every export is written beside its target under a temporary name and renamed into place once whole
(:mod:`hardneg.io.atomic`), so a failed or interrupted export leaves the previous one, or nothing. A folder output
replaces the folder whole, so an existing folder is replaced only when it is empty or an export of the same kind
(recognised by its files): a mistyped ``--output`` cannot remove anything else.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Callable, Iterable

import pyarrow as pa

from hardneg.errors import HardnegError
from hardneg.io.atomic import atomic_dir, atomic_path


def is_saved_dataset(path: Path) -> bool:
    """Whether ``path`` is a Hugging Face dataset written by ``Dataset.save_to_disk``."""
    return (path / "state.json").is_file() and (path / "dataset_info.json").is_file()


def check_output(path: str | os.PathLike, *, folder: bool, what: str,
                 previous: Callable[[Path], bool] | None = None) -> Path:
    """``path`` as a Path when an export of ``what`` (a file, or a ``folder``) may be written there: it does not
    exist, it is a file where a file is written, or a folder that is empty or ``previous`` recognises as an
    earlier export. A HardnegError naming ``--output`` otherwise."""
    path = Path(path)
    if not path.exists():
        return path
    if not folder:
        if path.is_dir():
            raise HardnegError(f"--output {path} is a folder; the {what} is written as one file: give a file path")
        return path
    if not path.is_dir():
        raise HardnegError(f"--output {path} is a file; the {what} is written as a folder: give a folder path")
    if any(path.iterdir()) and not (previous and previous(path)):
        raise HardnegError(f"--output {path} is a folder that holds something other than a {what}; the export "
                           "replaces its folder whole: give a new or empty folder, or remove this one")
    return path


def write_jsonl(path: str | os.PathLike, blocks: Iterable[list[dict]]) -> int:
    """Write each object of each block as one JSON line (UTF-8), atomically; return the number of lines."""
    lines = 0
    with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8") as handle:
        for block in blocks:
            handle.writelines(json.dumps(row, ensure_ascii=False) + "\n" for row in block)
            lines += len(block)
    return lines


def write_hf_dataset(path: str | os.PathLike, schema: pa.Schema, blocks: Iterable[pa.Table]) -> int:
    """Write the rows of ``blocks`` (tables of ``schema``) as a Hugging Face dataset folder that
    ``datasets.load_from_disk`` opens (``Dataset.save_to_disk``), atomically; return the number of rows.

    The blocks are streamed into an Arrow file inside the temporary folder, which ``datasets`` memory-maps and
    saves in its own shards, so no more than one block is held; the stream file is removed before the folder
    takes ``path``'s place."""
    import datasets  # datasets: imported only by this export

    rows = 0
    with atomic_dir(path) as tmp:
        scratch = tmp / "rows.tmp"
        scratch.mkdir()
        stream = scratch / "rows.arrow"
        with pa.OSFile(str(stream), "wb") as sink, pa.ipc.new_stream(sink, schema) as writer:
            for block in blocks:
                writer.write_table(block.cast(schema))
                rows += block.num_rows
        dataset = datasets.Dataset.from_file(str(stream))
        dataset.save_to_disk(str(tmp))
        del dataset
        shutil.rmtree(scratch)
    return rows
