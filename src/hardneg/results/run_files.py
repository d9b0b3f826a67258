"""A finished run's files, found from its name under a results folder: what the exports and the audit read.

A run's folder ``results/<run>/`` holds its resolved configuration (``config.yaml``), which names its dataset and
its parameters; everything else follows from :class:`hardneg.io.layout.Layout`. Each accessor checks that the file
it returns exists and raises a :class:`~hardneg.errors.HardnegError` naming the missing file (and how to build it)
otherwise, so an export fails before it writes anything.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import yaml

from hardneg import methods
from hardneg.errors import HardnegError
from hardneg.index import slug
from hardneg.io.layout import RESERVED_NAMES, Layout, reserved_entry
from hardneg.schema.files import read_resolved


def check_run_name(run: str, results: str | os.PathLike, reserved: Mapping[str, str] = RESERVED_NAMES) -> None:
    """Raise a :class:`HardnegError` naming what ``results/<run>`` holds when ``run`` names an entry of the results
    folder that is not a run's folder: one of ``reserved``, by default the layout's own entries (datasets, tables,
    ...; the command line passes the experiments' folders too, :data:`hardneg.experiments.RESERVED_NAMES`)."""
    entry = reserved_entry(run, reserved)
    if entry is not None:
        raise HardnegError(f"{run!r} is not a run: {Path(results) / entry} holds {reserved[entry]}")


@dataclass(frozen=True)
class RunFiles:
    """The files of a finished run, found from its name under a results folder.

    Open one with ``RunFiles.open``, which checks that the run's folder and resolved configuration exist. Each
    accessor of a file checks that the file exists and raises a ``HardnegError`` naming it (and how to build it)
    otherwise. Paths are ``pathlib.Path`` objects; read the Parquet ones with ``hardneg.io.artifacts.read_table``:

        from hardneg.io import artifacts
        from hardneg.results.run_files import RunFiles

        files = RunFiles.open("my-star-run")
        negatives = artifacts.read_table(artifacts.HARDNEGS, files.hard_negatives())
        qrels = artifacts.read_table(artifacts.QRELS, files.qrels(files.train_split))

    :param run: the run's name (its folder ``<results>/<run>``).
    :param results: the results folder.
    """

    run: str
    results: str

    @classmethod
    def open(cls, run: str, results: str | os.PathLike = "results") -> RunFiles:
        """The files of run ``run``, once its folder and its resolved configuration are known to exist.

        :param run: the run's name.
        :param results: the results folder.
        :returns: the run's files.
        :raises HardnegError: ``run`` names an entry of the layout's that is not a run's folder
            (:func:`check_run_name`), the run has no folder under ``results`` (the error lists the runs that have
            one), or its ``config.yaml`` is missing.
        """
        files = cls(run, str(results))
        run_dir = Path(files.layout.run_dir(run))
        check_run_name(run, results)
        if not run_dir.is_dir():
            known = sorted(path.parent.name for path in Path(results).glob("*/config.yaml"))
            hint = f" (runs with results: {', '.join(known)})" if known else ""
            raise HardnegError(f"run {run!r} has no results folder: {run_dir} does not exist{hint}")
        if not Path(files.layout.config(run)).exists():
            raise HardnegError(
                f"run {run}: {files.layout.config(run)} is missing, so its dataset and parameters "
                f"are unknown; build it with snakemake {files.layout.config(run)}"
            )
        return files

    @cached_property
    def layout(self) -> Layout:
        """The results layout (``hardneg.io.layout.Layout``): every path under ``results``, by name."""
        return Layout(self.results)

    @cached_property
    def config(self) -> dict:
        """The run's resolved configuration (``<results>/<run>/config.yaml``), read once.

        :raises HardnegError: the file is not YAML, or lacks the ``method`` or the ``dataset.name`` a resolved
            configuration always names; the error names the file.
        """
        path = self.layout.config(self.run)
        try:
            config = read_resolved(path)
        except yaml.YAMLError as error:
            mark = getattr(error, "problem_mark", None)
            where = f"{path}, line {mark.line + 1}" if mark is not None else path
            raise HardnegError(
                f"run {self.run}: {where} is not valid YAML ({getattr(error, 'problem', error)}); "
                f"build it again with snakemake {path}"
            ) from None
        dataset = config.get("dataset") if isinstance(config, dict) else None
        if not (
            isinstance(config, dict)
            and isinstance(config.get("method"), str)
            and isinstance(dataset, dict)
            and isinstance(dataset.get("name"), str)
        ):
            raise HardnegError(
                f"run {self.run}: {path} is not a resolved run configuration (it must name the "
                f"run's method and dataset.name); build it again with snakemake {path}"
            )
        return config

    @property
    def method(self) -> str:
        """The run's method, e.g. ``star``."""
        return self.config["method"]

    @property
    def dataset(self) -> str:
        """The name of the run's dataset (its folder ``<results>/datasets/<dataset>``)."""
        return self.config["dataset"]["name"]

    @property
    def params(self) -> dict:
        """The run's resolved params (empty for a method without any)."""
        return self.config.get("params") or {}

    def _dense_params(self, section: str) -> dict:
        """A section of a dense run's params (``model``, ``train``, ``index``); an error for other runs."""
        if section not in self.params:
            raise HardnegError(
                f"run {self.run} is a {self.method} run: it has no trained model, index or hard "
                f"negatives to export (its params have no {section!r} section)"
            )
        return self.params[section]

    @property
    def train_split(self) -> str:
        """The split the run trains on (``params.train.split``), whose queries its hard negatives were mined for.

        :raises HardnegError: the run trains no model (its params have no ``train`` section).
        """
        return self._dense_params("train")["split"]

    @property
    def query_max_length(self) -> int:
        """The most tokens of a query the run's model reads (``params.model.query_max_length``; longer queries
        are cut).

        :raises HardnegError: the run has no dense model (its params have no ``model`` section).
        """
        return int(self._dense_params("model")["query_max_length"])

    def tokenizer_source(self) -> str:
        """The tokenizer the run's tokenized cache was built with: the built-in WordPiece folder of its dataset,
        or its model's own (a folder or a hub name).

        :returns: the tokenizer's folder or Hugging Face hub name.
        :raises HardnegError: the run has no dense model (its params have no ``model`` section).
        """
        model = self._dense_params("model")
        if model["name"] == "builtin":
            return self.layout.tokenizer(self.dataset, model["vocab_size"])
        return model["name"]

    # ------------------------------------------------------------------------------------ the run's files
    def hard_negatives(self) -> Path:
        """The run's HARDNEGS Parquet file (``hardnegs.parquet``): the hard negatives it mined.

        :returns: the file's path.
        :raises HardnegError: the file is missing; the error says whether the run's method mines at all.
        """
        path = Path(self.layout.hard_negatives(self.run))
        if path.exists():
            return path
        declared = methods.methods().get(self.method)  # None for a method of a module this process has not loaded
        if declared is not None and not declared.role_providing("miner"):
            mined = self._lists_mined_by_this_run()
            if mined:  # a miner: its ranking gave other runs their lists
                raise HardnegError(
                    f"run {self.run} (method {self.method}) selects no hard-negative list of its own: "
                    f"it is the miner of {', '.join(mined)}, whose lists it gave (e.g. hardneg audit "
                    f"{mined[0]})"
                )
            miners = [name for name, m in methods.methods().items() if m.role_providing("miner")]
            raise HardnegError(
                f"run {self.run} (method {self.method}) mines no hard negatives; runs of method "
                f"{' or '.join(miners)} do"
            )
        raise HardnegError(
            f"run {self.run} has no hard-negative list: {path} is missing; build it with snakemake {path}"
        )

    def _lists_mined_by_this_run(self) -> list[str]:
        """The runs of the results folder with a hard-negative list that name this run among their inputs."""

        def names(value) -> set:
            if isinstance(value, dict):
                return {value["name"]} if isinstance(value.get("name"), str) else set()
            return set().union(*map(names, value)) if isinstance(value, list) else set()

        mined = []
        for listed in sorted(Path(self.results).glob("*/hardnegs.parquet")):
            try:
                inputs = (read_resolved(listed.parent / "config.yaml") or {}).get("inputs") or {}
            except (OSError, yaml.YAMLError):
                continue
            if any(self.run in names(value) for value in inputs.values()):
                mined.append(listed.parent.name)
        return mined

    def positive_scores(self) -> Path | None:
        """The miner's scores of the run's training positives (``<miner>/pools/positives_<split>.parquet``), which
        the margins of its policy compare negatives with (for a run trained on an imported list, the list's own
        positives and scores, ``hardnegs_positives.parquet``); None for a run that mines nothing or whose miner
        is not known to this process's methods.

        :returns: the file's path (it may not exist yet), or None.
        """
        declared = methods.methods().get(self.method)
        for role in declared.roles_providing("miner") if declared is not None else ():
            other = (self.config.get("inputs") or {}).get(role)
            if isinstance(other, dict) and "imported" in other:
                return Path(self.layout.imported_positives(self.run))
            if isinstance(other, dict):
                return Path(self.layout.pool_positive_scores(other["name"], self.train_split))
        return None

    def model_dir(self) -> Path:
        """The run's trained model folder (``model/``: a Hugging Face folder with ``hardneg.json``), which
        ``hardneg.dense.model.BiEncoder.load`` reads.

        :returns: the folder's path.
        :raises HardnegError: the run has no dense model, or ``model/hardneg.json`` is missing.
        """
        path = Path(self.layout.model(self.run))
        if not (path / "hardneg.json").exists():
            self._dense_params("model")
            raise HardnegError(
                f"run {self.run} has no trained model: {path / 'hardneg.json'} is missing; build "
                f"it with snakemake {self.layout.metrics(self.run)}"
            )
        return path

    def doc_run(self) -> str:
        """The name of the run whose corpus embeddings and indexes this run searches: its ``doc_index`` input (a
        run that keeps another run's documents fixed, as ADORE does), else itself.

        :returns: the run's name.
        """
        declared = methods.methods().get(self.method)
        for role in declared.roles_providing("doc_index") if declared is not None else ():
            other = (self.config.get("inputs") or {}).get(role)
            if isinstance(other, dict):
                return other["name"]
        return self.run

    def index_slug(self) -> str:
        """The slug of the index the run searches its queries with: its ``params.index.factory`` as a file name
        (``hardneg.index.slug``), e.g. ``IVF1024_PQ8`` for ``IVF1024,PQ8``.

        :returns: the slug.
        :raises HardnegError: the run has no dense index (its params have no ``index`` section).
        """
        return slug(self._dense_params("index")["factory"])

    def index(self, slug: str | None = None) -> Path:
        """The Faiss index file ``<results>/<doc run>/index/<slug>.faiss`` over the documents the run searches
        (read it with ``hardneg.index.faiss_index.load_index``).

        :param slug: the index's slug; None: ``index_slug()``, the index the run's queries are searched with.
        :returns: the file's path.
        :raises HardnegError: the index file is missing; the error lists the indexes built.
        """
        slug = slug or self.index_slug()
        path = Path(self.layout.index(self.doc_run(), slug))
        if path.exists():
            return path
        built = sorted(p.stem for p in path.parent.glob("*.faiss"))
        hint = f"; the indexes built are: {', '.join(built)}" if built else ""
        raise HardnegError(f"run {self.run} has no index {slug!r}: {path} is missing{hint}")

    def corpus_ids(self) -> Path:
        """The ROW_IDS Parquet file (``embeddings/corpus.ids.parquet`` of the doc run): the document id of each
        row of the run's corpus embeddings, hence of each row of its indexes.

        :returns: the file's path.
        :raises HardnegError: the file is missing.
        """
        path = Path(self.layout.corpus_ids(self.doc_run()))
        if not path.exists():
            raise HardnegError(
                f"run {self.run}: {path} (the document id of each index row) is missing; build it with snakemake {path}"
            )
        return path

    # ------------------------------------------------------------------------------- the dataset's files
    def _dataset_file(self, path: str) -> Path:
        if not Path(path).exists():
            raise HardnegError(f"dataset {self.dataset!r} of run {self.run} is not prepared: {path} is missing")
        return Path(path)

    def corpus(self) -> Path:
        """The CORPUS Parquet file of the run's dataset.

        :returns: the file's path.
        :raises HardnegError: the dataset is not prepared.
        """
        return self._dataset_file(self.layout.corpus(self.dataset))

    def queries(self, split: str) -> Path:
        """The QUERIES Parquet file of one split of the run's dataset.

        :param split: the split, e.g. ``test`` or ``files.train_split``.
        :returns: the file's path.
        :raises HardnegError: the file is missing.
        """
        return self._dataset_file(self.layout.queries(self.dataset, split))

    def qrels(self, split: str) -> Path:
        """The QRELS Parquet file of one split of the run's dataset.

        :param split: the split, e.g. ``test`` or ``files.train_split``.
        :returns: the file's path.
        :raises HardnegError: the file is missing.
        """
        return self._dataset_file(self.layout.qrels(self.dataset, split))
