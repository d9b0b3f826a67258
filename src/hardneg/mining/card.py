"""The mining card: a JSON manifest of how a hard-negative list was made, so that someone else can tell whether
they hold the same inputs and re-mine the same list (``hardneg verify <run>``, :mod:`hardneg.mining.verify`).

A card (``results/<run>/hardnegs_card.json``, rule ``mining_card``) records:

* ``inputs``: the SHA-256 of every file the list was mined from, by name: the miner's model weights (``model``:
  the files of ``results/<miner>/model/`` but the tokenizer's, name by name) and tokenizer (``tokenizer``), the
  tokenized queries of the split (``tokenized_queries``), the dataset's ``corpus``, ``queries`` and ``qrels``
  files of the split, the miner's ``ranking`` of the split, the ``index`` searched with its row ids (``docids``)
  and the ``corpus_embeddings`` it was built from, the candidate ``pool`` and what it was built from
  (``positives``, ``bm25_ranking``, ``duplicates``, ``ce_candidates``, ``ce_positives``, ``ce_model``,
  ``ce_cache``, where the pool has them);
* ``search``: the index factory and the search parameters of the miner's dense search (``top_k``,
  ``batch_size``, ``search_params``, ``device``, ``precision``) and the run whose documents it searched;
* ``pool``: the pool's name and depth, and its BM25 run, cross-encoder run (and method) and duplicate marking;
* ``policy``: the selection policy (``params``: its keys; ``name``: its name in the config's ``policies``, or
  null) and ``seed``;
* ``threads``: the thread counts a job of the search's size runs with (torch's intra-op threads, Faiss's OpenMP
  threads); ``versions``: those of hardneg, torch, faiss, transformers, numpy and pyarrow;
* ``list``: the hard-negative list's path, rows, queries and SHA-256.

A card is deterministic: the same inputs and parameters give the same bytes (keys sorted, no timestamps, paths
relative as given). Digests are lower-case hexadecimal SHA-256 of the files' bytes; a folder's digest is the
SHA-256 of its listing in ``sha256sum``'s form (``<digest>  <name>`` lines, names relative to the folder with
``/``, in sorted order).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import pyarrow.compute as pc
import pyarrow.parquet as pq

from hardneg.errors import HardnegError
from hardneg.io.atomic import write_text

CARD_VERSION = 1
_BLOCK = 1 << 20  # bytes read at a time while hashing

# The files of a model folder that are its tokenizer (Hugging Face's names); the others are its weights and
# configuration. Recorded apart, so that a card says which of the two changed.
TOKENIZER_FILES = frozenset(
    {
        "tokenizer.json",
        "tokenizer_config.json",
        "special_tokens_map.json",
        "vocab.txt",
        "vocab.json",
        "merges.txt",
        "added_tokens.json",
        "spiece.model",
        "tokenizer.model",
        "sentencepiece.bpe.model",
    }
)
# Files Snakemake leaves in a folder output (its modification record): not part of what the folder holds.
_IGNORED = frozenset({".snakemake_timestamp"})

# name → what a card records of it: ``(label, select)``, ``select`` choosing the files of a folder input
# (:func:`folder_digest`). Names not listed are files (or, when they are folders, all of their files).
_FOLDER_INPUTS = {"model": (("model", "weights"), ("tokenizer", "tokenizer"))}

PACKAGES = {
    "hardneg": ("hardneg",),
    "torch": ("torch",),
    "faiss": ("faiss-cpu", "faiss-gpu", "faiss"),
    "transformers": ("transformers",),
    "numpy": ("numpy",),
    "pyarrow": ("pyarrow",),
}


# ------------------------------------------------------------------------------------------------- digests
def file_sha256(path: str | os.PathLike) -> str:
    """The SHA-256 of a file's bytes, as 64 lower-case hexadecimal digits.

    :raises FileNotFoundError: ``path`` does not exist.
    """
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(_BLOCK):
            digest.update(block)
    return digest.hexdigest()


def _selected(name: str, select: str) -> bool:
    """Whether the file ``name`` (relative to its folder, ``/``-separated) is one ``select`` chooses: ``all``,
    ``tokenizer`` (:data:`TOKENIZER_FILES` at the folder's top), ``weights`` (the others) or ``prefix:<p>``
    (names starting with ``<p>``, or with any of ``<p>|<q>|...``)."""
    if select == "all":
        return True
    if select == "tokenizer":
        return name in TOKENIZER_FILES
    if select == "weights":
        return name not in TOKENIZER_FILES
    if select.startswith("prefix:"):
        return name.startswith(tuple(select[len("prefix:") :].split("|")))
    raise ValueError(f"unknown file selection {select!r}: all, tokenizer, weights or prefix:<start>|<start>...")


def folder_digest(path: str | os.PathLike, select: str = "all") -> dict:
    """The digests of the files of a folder (and its sub-folders) that ``select`` chooses.

    :param path: the folder.
    :param select: which files: ``all``, ``tokenizer``, ``weights`` or ``prefix:<p>`` (see :data:`TOKENIZER_FILES`).
    :returns: ``{"files": {name: sha256}, "sha256": the folder's digest}``, names relative to ``path`` with ``/``;
        Snakemake's ``.snakemake_timestamp`` is left out.
    :raises FileNotFoundError: ``path`` is not a folder.
    :raises HardnegError: ``select`` chooses no file of the folder (naming the folder).
    """
    root = Path(path)
    if not root.is_dir():
        raise FileNotFoundError(f"{root}: no such folder")
    files = {}
    for file in sorted(p for p in root.rglob("*") if p.is_file() and p.name not in _IGNORED):
        name = file.relative_to(root).as_posix()
        if _selected(name, select):
            files[name] = file_sha256(file)
    if not files:
        raise HardnegError(f"{root}: no file to record ({select} files of the folder)")
    return {"files": dict(sorted(files.items())), "sha256": listing_sha256(files)}


def listing_sha256(files: Mapping[str, str]) -> str:
    """The digest of a set of files from their digests: the SHA-256 of ``<digest>  <name>`` lines (as
    ``sha256sum`` prints them) in sorted name order."""
    listing = "".join(f"{files[name]}  {name}\n" for name in sorted(files))
    return hashlib.sha256(listing.encode("utf-8")).hexdigest()


def digest_entry(path: str | os.PathLike, select: str | None = None) -> dict:
    """What a card records of one input: ``{"path", "sha256"}`` for a file; for a folder also ``files`` (each
    file's digest) and ``select`` (which files, see :func:`folder_digest`).

    :param path: the input, as the card names it (kept as given, e.g. relative to the working folder).
    :param select: for a folder, which of its files (default ``all``).
    :raises FileNotFoundError: ``path`` does not exist.
    """
    if os.path.isdir(path):
        select = select or "all"
        return {"path": str(path), "select": select, **folder_digest(path, select)}
    return {"path": str(path), "sha256": file_sha256(path)}


def current_digest(entry: Mapping, path: str | os.PathLike | None = None) -> dict | None:
    """The digest of a card's input as it is now on disk, recorded the same way (:func:`digest_entry`); None
    where it no longer exists.

    :param entry: the card's record of the input.
    :param path: where to look for it now (default: the path the card records).
    """
    path = entry["path"] if path is None else path
    try:
        return digest_entry(path, entry.get("select"))
    except (FileNotFoundError, NotADirectoryError, HardnegError):
        return None


# ---------------------------------------------------------------------------------------------- the list
def list_record(path: str | os.PathLike) -> dict:
    """The card's record of a hard-negative list (a HARDNEGS Parquet file, or any Parquet file): ``path`` (as
    given), ``rows``, ``queries`` (distinct ``qid`` values, when it has that column) and ``sha256`` of the file.

    :raises FileNotFoundError: the file does not exist.
    """
    parquet = pq.ParquetFile(path)
    record = {"path": str(path), "rows": parquet.metadata.num_rows, "sha256": file_sha256(path)}
    if "qid" in parquet.schema_arrow.names:
        qids = parquet.read(columns=["qid"])["qid"]
        record["queries"] = len(pc.unique(qids)) if len(qids) else 0
    return record


# --------------------------------------------------------------------------------------- the environment
def package_versions() -> dict[str, str | None]:
    """The versions of hardneg, torch, faiss, transformers, numpy and pyarrow installed (None: not installed)."""
    versions: dict[str, str | None] = {}
    for name, distributions in PACKAGES.items():
        versions[name] = None
        for distribution in distributions:
            try:
                versions[name] = metadata.version(distribution)
                break
            except metadata.PackageNotFoundError:
                continue
    return versions


def thread_counts() -> dict[str, int]:
    """The thread counts of this process: ``torch_intra_op`` (``torch.get_num_threads()``) and ``faiss_omp``
    (``faiss.omp_get_max_threads()``, the OpenMP threads Faiss searches with)."""
    import faiss  # imported only where a card is built or a list re-mined
    import torch

    return {"torch_intra_op": int(torch.get_num_threads()), "faiss_omp": int(faiss.omp_get_max_threads())}


# ------------------------------------------------------------------------------------------------- cards
def build_card(
    *,
    run: str,
    miner: str,
    dataset: str,
    split: str,
    inputs: Mapping[str, str | os.PathLike],
    hardnegs: str | os.PathLike,
    search: Mapping,
    pool: Mapping,
    policy: Mapping,
    policy_name: str | None,
    seed: int,
    results: str = "results",
    threads: Mapping | None = None,
    versions: Mapping | None = None,
) -> dict:
    """The mining card of a hard-negative list (see the module docstring).

    :param run: the mining run (its list is ``hardnegs``).
    :param miner: the dense run whose ranking was mined.
    :param dataset: the dataset's name.
    :param split: the split whose queries have negatives (the training split).
    :param inputs: name → path of every input (files, or folders: ``model``, whose weights and tokenizer are
        recorded apart; a folder input is recorded file by file). ``cache``, the miner's tokenized cache, records
        only what encoding the split's queries reads (``cache.json``, ``queries_<split>.*``) as
        ``tokenized_queries``. Paths are kept as given.
    :param hardnegs: the HARDNEGS Parquet file of the list.
    :param search: the miner's dense search: ``factory`` (the index factory), ``search_params``, ``top_k``,
        ``batch_size``, ``device``, ``precision``, ``doc_run`` (whose documents the index holds).
    :param pool: the pool: ``name``, ``depth``, ``bm25``, ``cross_encoder``, ``cross_encoder_method``,
        ``duplicates``.
    :param policy: the policy's keys (:class:`hardneg.mining.policies.Policy`).
    :param policy_name: its name in the config's ``policies``, or None.
    :param seed: the selection's seed.
    :param results: the results folder the paths start with (``hardneg verify`` maps them to another).
    :param threads: the thread counts to record; None: this process's (:func:`thread_counts`).
    :param versions: the package versions to record; None: those installed (:func:`package_versions`).
    :returns: the card, a JSON-ready dict.
    :raises FileNotFoundError: an input or the list is missing.
    """
    recorded = {}
    for name, path in inputs.items():
        if name in _FOLDER_INPUTS:
            for label, select in _FOLDER_INPUTS[name]:
                recorded[label] = digest_entry(path, select)
        elif name == "cache":  # re-mining reads only the split's queries (and the pad id) from the cache
            recorded["tokenized_queries"] = digest_entry(path, f"prefix:cache.json|queries_{split}.")
        else:
            recorded[name] = digest_entry(path)
    return {
        "card_version": CARD_VERSION,
        "run": run,
        "miner": miner,
        "dataset": dataset,
        "split": split,
        "results": str(results),
        "inputs": dict(sorted(recorded.items())),
        "search": dict(search),
        "pool": dict(pool),
        "policy": {"name": policy_name, "params": dict(policy)},
        "seed": int(seed),
        "threads": dict(thread_counts() if threads is None else threads),
        "versions": dict(package_versions() if versions is None else versions),
        "list": list_record(hardnegs),
    }


def card_text(card: Mapping) -> str:
    """A card as its file holds it: JSON, keys sorted, two-space indents, a final newline."""
    return json.dumps(card, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def write_card(path: str | os.PathLike, card: Mapping) -> None:
    """Write a card (:func:`card_text`) atomically."""
    write_text(path, card_text(card))


def read_card(path: str | os.PathLike) -> dict:
    """A card written by :func:`write_card`.

    :raises HardnegError: the file is missing, is not JSON, or is not a mining card (the error names the file).
    """
    path = Path(path)
    try:
        card = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise HardnegError(f"{path}: no mining card there (build it with snakemake {path})") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise HardnegError(f"{path}: not a mining card, the file is not JSON ({error})") from None
    if not (isinstance(card, dict) and isinstance(card.get("inputs"), dict) and "card_version" in card):
        raise HardnegError(f"{path}: not a mining card (it lacks card_version or inputs)")
    if card["card_version"] != CARD_VERSION:
        raise HardnegError(
            f"{path}: mining card version {card['card_version']!r}, this hardneg reads version {CARD_VERSION}"
        )
    return card


# --------------------------------------------------------------------------------------------- checking
@dataclass(frozen=True)
class Change:
    """An input whose digest differs from its card's record: ``name`` (the card's), ``path`` (where it was
    looked for), ``recorded`` and ``current`` digests (``current`` None: the input is missing) and, for a folder,
    ``files``: the names of its files that changed, appeared or disappeared."""

    name: str
    path: str
    recorded: str
    current: str | None
    files: tuple[str, ...] = ()

    def __str__(self) -> str:
        if self.name == "list":
            now = "is missing" if self.current is None else f"changed (sha256 {self.current[:12]}…)"
            return (
                f"the hard-negative list {self.path} {now} since its card was written (it had sha256 "
                f"{self.recorded[:12]}…)"
            )
        if self.current is None:
            return f"{self.name} {self.path} is missing (it had sha256 {self.recorded[:12]}… when the list was mined)"
        which = f"; files: {', '.join(self.files)}" if self.files else ""
        return (
            f"{self.name} {self.path} changed since the list was mined (sha256 {self.recorded[:12]}… → "
            f"{self.current[:12]}…{which})"
        )


def _changed_files(recorded: Mapping, current: Mapping) -> tuple[str, ...]:
    names = sorted(set(recorded) | set(current))
    return tuple(name for name in names if recorded.get(name) != current.get(name))


def check_inputs(card: Mapping, paths: Mapping[str, str | os.PathLike] | None = None) -> list[Change]:
    """The inputs of a card whose files now differ from what it records, in the card's (sorted) order.

    :param card: a mining card (:func:`build_card`, :func:`read_card`).
    :param paths: name → where to look for that input now; default (and for names not given): the card's path.
    :returns: one :class:`Change` per changed or missing input; empty when every digest matches.
    """
    paths = paths or {}
    changes = []
    for name, entry in card["inputs"].items():
        where = paths.get(name, entry["path"])
        now = current_digest(entry, where)
        if now is None:
            changes.append(Change(name, str(where), entry["sha256"], None))
        elif now["sha256"] != entry["sha256"]:
            files = _changed_files(entry.get("files", {}), now.get("files", {}))
            changes.append(Change(name, str(where), entry["sha256"], now["sha256"], files))
    return changes


def check_list(card: Mapping, path: str | os.PathLike | None = None) -> Change | None:
    """Whether the hard-negative list itself still is the file the card describes.

    :param card: a mining card.
    :param path: where the list is now (default: the card's path).
    :returns: a :class:`Change` named ``list`` when the file is missing or its digest differs, else None.
    """
    recorded = card["list"]
    where = recorded["path"] if path is None else path
    try:
        now = file_sha256(where)
    except FileNotFoundError:
        now = None
    if now == recorded["sha256"]:
        return None
    return Change("list", str(where), recorded["sha256"], now)
