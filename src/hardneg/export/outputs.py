"""The atomic writers of an export's files, and how an earlier export folder is recognised.

Every export is written beside its target under a temporary name and renamed into place once whole
(:mod:`hardneg.io.atomic`), so a failed or interrupted export leaves the previous one, or nothing. Where an export
may be written at all is :func:`hardneg.results.output_paths.check_output`'s call: a folder output replaces the
folder whole, so an existing folder is replaced only with ``--force``, and only when it is empty or an export of
the same kind (recognised by its files, :func:`is_saved_dataset`).
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable, Iterable
from pathlib import Path

import pyarrow as pa

from hardneg.io.atomic import atomic_dir, atomic_path


def is_saved_dataset(path: Path) -> bool:
    """Whether ``path`` is a Hugging Face dataset written by ``Dataset.save_to_disk``."""
    return (path / "state.json").is_file() and (path / "dataset_info.json").is_file()


def write_jsonl(path: str | os.PathLike, blocks: Iterable[list[dict]]) -> int:
    """Write each object of each block as one JSON line (UTF-8), atomically; return the number of lines."""
    lines = 0
    with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8") as handle:
        for block in blocks:
            handle.writelines(json.dumps(row, ensure_ascii=False) + "\n" for row in block)
            lines += len(block)
    return lines


def write_hf_dataset(
    path: str | os.PathLike,
    schema: pa.Schema,
    blocks: Iterable[pa.Table],
    finish: Callable[[Path, int], None] | None = None,
) -> int:
    """Write the rows of ``blocks`` (tables of ``schema``) as a Hugging Face dataset folder that
    ``datasets.load_from_disk`` opens (``Dataset.save_to_disk``), atomically; return the number of rows.

    The blocks are streamed into an Arrow file inside the temporary folder, which ``datasets`` memory-maps and
    saves in its own shards, so no more than one block is held; the stream file is removed before the folder
    takes ``path``'s place. ``finish(folder, rows)``, when given, is called on the complete temporary folder just
    before it does (to add a file that describes the others, such as the export's card)."""
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
        if finish is not None:
            finish(tmp, rows)
    return rows
