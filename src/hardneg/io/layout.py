"""The results layout: where every artifact lives, in one place.

Every function returns a path under ``root`` (default ``results``) as a string. Called with wildcard patterns
(``run="{run}"``) they give the output patterns of the workflow rules; called with names they give the files
the plan (:mod:`hardneg.pipeline.plan`), the command line and the stage runner read.

Run, dataset, split and index names become file and folder names, so each must be one plain path component:
the configuration schema holds them to :data:`NAME_PATTERN`, and every path built here is checked once more to
stay inside ``root`` (an :class:`~hardneg.errors.OutputPathError` otherwise), so no name can make a job write
elsewhere.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Iterable
from pathlib import Path

from hardneg.errors import OutputPathError, ResultsLayoutError
from hardneg.schema.names import NAME_PATTERN, NAME_RULE  # noqa: F401  (NAME_PATTERN: the names it lays out)

RESULTS = "results"

# The entries the layout puts in the results folder besides the runs' folders (results/<run>), each with what it
# holds; each experiment reserves its own folder besides (hardneg.experiments.RESERVED_NAMES has them all). No run
# may take one of these names (hardneg.pipeline.config refuses it). Dataset names are safe: they live in
# results/datasets/, whose one other entry (_downloads) no name can take.
RESERVED_NAMES = {
    "datasets": "the prepared datasets",
    "tables": "the cross-run tables",
    "figures": "the figures and the data they draw",
    "summary.md": "the summary of the runs",
    "summary.parquet": "the summary of the runs",
    "summary_tests.parquet": "the t-tests behind the summary's markers",
    "summary.html": "the summary's page of the report",
    "summary.html.log": "the log of the summary's page of the report",
    "summary.html.tsv": "the benchmark of the summary's page of the report",
    "report.html": "the report (snakemake --report results/report.html)",
    "report.zip": "the report as an archive (snakemake --report results/report.zip)",
}

RANKINGS = "rankings"  # the folder of a run's rankings: results/<run>/rankings/<split>.{parquet,trec}
# The name that folder had in results written before (results/<run>/rankings/): hardneg reads no ranking from it
# (old_ranking_folders, refuse_old_rankings).
OLD_RANKINGS = "runs"

# The folder of what a run ranked with another index over its documents (the PQ experiment): rankings, query
# embeddings, evaluation and the logs of their jobs, as in the run's own folder: results/<run>/by_index/<slug>/.
BY_INDEX = "by_index"
# The rules searching and evaluating a run (rules/index.smk, rules/evaluate.smk) serve its own index and the others
# with one wildcard, {by_index}: empty for the run's own (its folder), /by_index/<slug> for another (that folder).
BY_INDEX_WILDCARD = "{by_index}"
BY_INDEX_PATTERN = rf"(/{BY_INDEX}/[^/]+)?"  # its values


def by_index(slug: str | None) -> str:
    """The {by_index} wildcard's value for a ranking with index ``slug``: empty for the run's own index (None),
    ``/by_index/<slug>`` for another index over the run's documents."""
    return "" if slug is None else f"/{BY_INDEX}/{slug}"


def index_slug(value: str) -> str | None:
    """The index slug a {by_index} wildcard's value names (the inverse of :func:`by_index`): None when empty."""
    return value.removeprefix(f"/{BY_INDEX}/") if value else None


EPISODES = "episodes"  # the folder of a run's episodes: results/<run>/episodes/<e> (hardneg.pipeline.episodes)
_EPISODE = re.compile(r"(?P<run>[^/]+)/episodes/(?P<index>0|[1-9][0-9]*)")


def episode_run(run: str, index: int) -> str:
    """The name of episode ``index`` of episodic run ``run``."""
    return f"{run}/{EPISODES}/{int(index)}"


def parse_episode_run(name: str) -> tuple[str, int] | None:
    """(episodic run, episode index) of an episode run's name; None for any other name."""
    match = _EPISODE.fullmatch(str(name))
    return (match["run"], int(match["index"])) if match else None


def reserved_entry(name: str, reserved: Iterable[str] = RESERVED_NAMES) -> str | None:
    """The entry of ``reserved`` (by default the layout's own, :data:`RESERVED_NAMES`; all of them:
    :data:`hardneg.experiments.RESERVED_NAMES`) that a run named ``name`` would collide with, or None. Compared
    without regard to case, as the file systems of macOS and Windows compare names."""
    return next((entry for entry in reserved if entry.casefold() == str(name).casefold()), None)


# Where a run's folder holds rankings: its own, those ranked with another index, its episodes' (and theirs)
_RANKING_PARENTS = (".", f"{BY_INDEX}/*", f"{EPISODES}/*", f"{EPISODES}/*/{BY_INDEX}/*")


def old_ranking_folders(root: str | os.PathLike = RESULTS) -> list[str]:
    """The folders of rankings under ``root`` written in the layout before :data:`RANKINGS`: a run's (an
    episode's, or another index's) ``runs/`` holding Parquet or TREC files, with no ``rankings/`` beside it. Only
    the run folders are looked at (not ``datasets/`` or the layout's other entries; an experiment's folder holds no
    ``runs/``), so this costs a few directory listings."""
    base = Path(root)
    if not base.is_dir():
        return []
    found = []
    for folder in sorted(base.iterdir()):
        if not folder.is_dir() or reserved_entry(folder.name) is not None:
            continue
        for pattern in _RANKING_PARENTS:
            for parent in sorted(folder.glob(pattern)) if pattern != "." else [folder]:
                old = parent / OLD_RANKINGS
                if (
                    old.is_dir()
                    and not (parent / RANKINGS).exists()
                    and any(path.suffix in (".parquet", ".trec") for path in old.iterdir())
                ):
                    found.append(str(old))
    return sorted(found)


def moved_ranking(path: str | os.PathLike) -> Path:
    """Where a file recorded at ``path`` is now when ``path`` lies in a rankings folder of the old layout
    (``<run>/rankings/<split>.parquet``, as a mining card written before records it) that was renamed to
    ``rankings/``; ``path`` itself otherwise."""
    path = Path(path)
    if path.parent.name == OLD_RANKINGS and not path.exists():
        renamed = path.parent.with_name(RANKINGS) / path.name
        if renamed.exists():
            return renamed
    return path


def refuse_old_rankings(root: str | os.PathLike = RESULTS) -> None:
    """Raise :class:`~hardneg.errors.ResultsLayoutError` when ``root`` holds rankings in the old layout
    (:func:`old_ranking_folders`): hardneg would not find them, and rebuilding them would also rebuild everything
    made from them (pools, lists, the runs trained on them). The message names the folders and the two ways on:
    rename them and let ``snakemake --touch`` record the new paths (the rules that read a ranking would otherwise
    run again, their inputs' paths having changed), or delete them and rebuild."""
    old = old_ranking_folders(root)
    if not old:
        return
    shown = ", ".join(old[:5]) + (f" and {len(old) - 5} more" if len(old) > 5 else "")
    first = old[0]
    raise ResultsLayoutError(
        f"{root}: rankings where an earlier version put them: a run's rankings are now in <run>/{RANKINGS}/, "
        f"not <run>/{OLD_RANKINGS}/ ({shown}). Rename each such folder (mv {first} "
        f"{first[: -len(OLD_RANKINGS)]}{RANKINGS}) and, if the results were up to date, run snakemake once with "
        f"--touch to record the new paths without computing anything; or delete the folders to rebuild the "
        f"rankings and everything made from them"
    )


def check_name(kind: str, name, root: str = RESULTS) -> str:
    """Return ``name`` when it is a single path component; raise :class:`OutputPathError` otherwise.

    Wildcard patterns such as ``{run}`` pass: the workflow's wildcard constraints keep their values plain.
    """
    text = str(name)
    if text in ("", ".", "..") or any(char in text for char in ("/", "\\", "\0")):
        raise OutputPathError(
            f"{kind} name {text!r} cannot be used in a path under {root!r}: a name must be one file name ({NAME_RULE})"
        )
    return text


def check_inside(path: str | os.PathLike, root: str | os.PathLike, what: str = "output path") -> str:
    """Return ``path`` when it lies strictly inside folder ``root``; raise :class:`OutputPathError` otherwise.

    The comparison is on normalised absolute paths, without following links: a results folder (or a part of
    it) that is a symbolic link to another disk is fine, a '..' or an absolute component is not.
    """
    full, base = os.path.abspath(path), os.path.abspath(root)
    if full == base or os.path.commonpath([full, base]) != base:
        raise OutputPathError(
            f"{what} {str(path)!r} is outside the folder {str(root)!r}; a run, dataset, split "
            f"or index name must be one file name ({NAME_RULE})"
        )
    return str(path)


def split_file(folder: str, split: str) -> str:
    """The file of ``split`` in one of a dataset's folders of splits (its queries, qrels or hidden positives):
    ``<folder>/<split>.parquet``. A rule is given the folder, prepare_dataset's output (Snakemake depends on a
    folder, not on a file inside it), and its job this file of it."""
    return f"{folder}/{check_name('split', split)}.parquet"


def _inside_root(method):
    """Check that the path ``method`` builds stays inside the layout's root."""

    @functools.wraps(method)
    def checked(self, *args, **kwargs):
        return check_inside(method(self, *args, **kwargs), self.root)

    return checked


class Layout:
    def __init__(self, root: str = RESULTS):
        self.root = str(root).rstrip("/") or "."

    def _name(self, kind: str, name) -> str:
        return check_name(kind, name, self.root)

    # ------------------------------------------------------------------------------------------- datasets
    @_inside_root
    def dataset_dir(self, dataset: str) -> str:
        return f"{self.root}/datasets/{self._name('dataset', dataset)}"

    @_inside_root
    def corpus(self, dataset: str) -> str:
        return f"{self.dataset_dir(dataset)}/corpus.parquet"

    @_inside_root
    def queries_dir(self, dataset: str) -> str:
        return f"{self.dataset_dir(dataset)}/queries"

    @_inside_root
    def queries(self, dataset: str, split: str) -> str:
        return split_file(self.queries_dir(dataset), self._name("split", split))

    @_inside_root
    def qrels_dir(self, dataset: str) -> str:
        return f"{self.dataset_dir(dataset)}/qrels"

    @_inside_root
    def qrels(self, dataset: str, split: str) -> str:
        return split_file(self.qrels_dir(dataset), self._name("split", split))

    @_inside_root
    def hidden_qrels_dir(self, dataset: str) -> str:
        """The positives a dataset hides from its qrels (its ``hide_positives``): one QRELS file per split."""
        return f"{self.dataset_dir(dataset)}/hidden"

    @_inside_root
    def hidden_qrels(self, dataset: str, split: str) -> str:
        """The positives hidden from the qrels of ``split`` (QRELS; :mod:`hardneg.datasets.hidden`)."""
        return split_file(self.hidden_qrels_dir(dataset), self._name("split", split))

    @_inside_root
    def duplicates(self, dataset: str) -> str:
        """The exact and near-duplicate document pairs of a dataset's corpus (DUPLICATES)."""
        return f"{self.dataset_dir(dataset)}/duplicates.parquet"

    @_inside_root
    def dataset_stats(self, dataset: str) -> str:
        return f"{self.dataset_dir(dataset)}/stats.json"

    @_inside_root
    def tokenizer(self, dataset: str, vocab) -> str:
        return f"{self.dataset_dir(dataset)}/tokenizers/wordpiece-{self._name('vocabulary size', vocab)}"

    @_inside_root
    def tokenized(self, dataset: str, key: str) -> str:
        return f"{self.dataset_dir(dataset)}/tokenized/{self._name('tokenized cache', key)}"

    @_inside_root
    def dataset_log(self, dataset: str, name: str) -> str:
        return f"{self.dataset_dir(dataset)}/logs/{self._name('log', name)}.log"

    @_inside_root
    def dataset_benchmark(self, dataset: str, name: str) -> str:
        return f"{self.dataset_dir(dataset)}/benchmarks/{self._name('benchmark', name)}.tsv"

    # ----------------------------------------------------------------------------------------------- runs
    @_inside_root
    def run_dir(self, run: str) -> str:
        """``results/<run>``; an episode run's (``<run>/episodes/<e>``, :mod:`hardneg.pipeline.episodes`) is
        ``results/<run>/episodes/<e>``."""
        episode = parse_episode_run(run)
        if episode is not None:
            return f"{self.root}/{self._name('run', episode[0])}/{EPISODES}/{episode[1]}"
        return f"{self.root}/{self._name('run', run)}"

    @_inside_root
    def config(self, run: str) -> str:
        return f"{self.run_dir(run)}/config.yaml"

    @_inside_root
    def log(self, run: str, name: str, index: str | None = None) -> str:
        """The log of a run's job ``name`` (``index``: a job of the run ranked with another index)."""
        return f"{self._by_index(run, index)}/logs/{self._name('log', name)}.log"

    @_inside_root
    def benchmark(self, run: str, name: str, index: str | None = None) -> str:
        return f"{self._by_index(run, index)}/benchmarks/{self._name('benchmark', name)}.tsv"

    @_inside_root
    def bm25_index(self, run: str) -> str:
        return f"{self.run_dir(run)}/bm25_index"

    @_inside_root
    def model(self, run: str) -> str:
        return f"{self.run_dir(run)}/model"

    @_inside_root
    def train_log(self, run: str) -> str:
        return f"{self.run_dir(run)}/train_log.parquet"

    @_inside_root
    def train_timings(self, run: str) -> str:
        """Wall-clock seconds of each part of each training step: beside the jobs' time and memory records."""
        return f"{self.run_dir(run)}/benchmarks/train_steps.parquet"

    @_inside_root
    def checkpoints(self, run: str) -> str:
        return f"{self.run_dir(run)}/checkpoints"

    @_inside_root
    def trainer_state(self, run: str) -> str:
        """An episode's trainer state at its last step (a checkpoint: optimiser, scheduler, data order, random
        states), which the next episode continues."""
        return f"{self.run_dir(run)}/trainer_state"

    @_inside_root
    def refresh_costs(self, run: str, suffix: str) -> str:
        """An episodic run's seconds per episode spent training and refreshing its negatives (``md`` or
        ``parquet``): wall clock, beside the jobs' time and memory records."""
        return f"{self.run_dir(run)}/benchmarks/refresh_costs.{self._name('refresh costs', suffix)}"

    def _by_index(self, run: str, index: str | None) -> str:
        """The folder of what ``run`` ranked with index ``index``: its own folder (None), ``by_index/<index>/``
        beneath it, or for :data:`BY_INDEX_WILDCARD` the rules' pattern of both."""
        if index == BY_INDEX_WILDCARD:
            return f"{self.run_dir(run)}{index}"
        return self.run_dir(run) + by_index(None if index is None else self._name("index", index))

    @_inside_root
    def ranking(self, run: str, split: str, index: str | None = None) -> str:
        """A run's ranking of a split (``index``: ranked with another index over the same documents)."""
        return f"{self._by_index(run, index)}/{RANKINGS}/{self._name('split', split)}.parquet"

    @_inside_root
    def ranking_trec(self, run: str, split: str, index: str | None = None) -> str:
        return f"{self._by_index(run, index)}/{RANKINGS}/{self._name('split', split)}.trec"

    @_inside_root
    def query_embeddings(self, run: str, split: str, index: str | None = None) -> str:
        return f"{self._by_index(run, index)}/embeddings/queries_{self._name('split', split)}.npy"

    @_inside_root
    def query_ids(self, run: str, split: str, index: str | None = None) -> str:
        return f"{self._by_index(run, index)}/embeddings/queries_{self._name('split', split)}.ids.parquet"

    @_inside_root
    def corpus_embeddings(self, run: str) -> str:
        return f"{self.run_dir(run)}/embeddings/corpus.npy"

    @_inside_root
    def corpus_ids(self, run: str) -> str:
        return f"{self.run_dir(run)}/embeddings/corpus.ids.parquet"

    @_inside_root
    def embedding_shard(self, run: str, shard) -> str:
        return f"{self.run_dir(run)}/embeddings/shards/{self._name('shard', shard)}.npy"

    @_inside_root
    def embedding_shard_ids(self, run: str, shard) -> str:
        return f"{self.run_dir(run)}/embeddings/shards/{self._name('shard', shard)}.ids.parquet"

    @_inside_root
    def index(self, run: str, slug: str) -> str:
        return f"{self.run_dir(run)}/index/{self._name('index', slug)}.faiss"

    @_inside_root
    def hard_negatives(self, run: str) -> str:
        return f"{self.run_dir(run)}/hardnegs.parquet"

    @_inside_root
    def selection(self, run: str) -> str:
        """How a run's hard negatives were selected from its pool: the policy, what each filter removed (JSON)."""
        return f"{self.run_dir(run)}/hardnegs_selection.json"

    @_inside_root
    def hardnegs_card(self, run: str) -> str:
        """The mining card of a run's hard negatives: how the list was made, with the digest of every input
        (JSON; :mod:`hardneg.mining.card`)."""
        return f"{self.run_dir(run)}/hardnegs_card.json"

    @_inside_root
    def imported_positives(self, run: str) -> str:
        """The positives of the imported list a run trains on, with their grades and teacher scores (POSITIVE_SCORES;
        :mod:`hardneg.imports`), copied beside the run's ``hardnegs.parquet``."""
        return f"{self.run_dir(run)}/hardnegs_positives.parquet"

    @_inside_root
    def pool(self, miner: str, name: str) -> str:
        """A candidate pool of ``miner``'s ranking (:class:`hardneg.pipeline.mining_plan.Pool`)."""
        return f"{self.run_dir(miner)}/pools/{self._name('pool', name)}.parquet"

    @_inside_root
    def pool_positive_scores(self, miner: str, split: str) -> str:
        """``miner``'s scores of the judged positives of ``split``, which its pools of that split read."""
        return f"{self.run_dir(miner)}/pools/positives_{self._name('split', split)}.parquet"

    @_inside_root
    def pool_scores(self, miner: str, name: str, pairs: str) -> str:
        """A cross-encoder's probabilities of a pool's ``candidates`` or of its queries' ``positives``."""
        return f"{self.run_dir(miner)}/pools/{self._name('pool', name)}.ce_{self._name('pairs', pairs)}.parquet"

    @_inside_root
    def teacher_scores(self, miner: str, name: str, teacher: str, pairs: str) -> str:
        """A teacher run's scores (as it ranks) of a pool's ``candidates`` or of its queries' ``positives``."""
        return (
            f"{self.run_dir(miner)}/pools/{self._name('pool', name)}.teacher-{self._name('run', teacher)}_"
            f"{self._name('pairs', pairs)}.parquet"
        )

    @_inside_root
    def audit(self, run: str, suffix: str) -> str:
        """The hard-negative audit: ``md`` (report), ``parquet`` (per query) or ``json`` (summary)."""
        return f"{self.run_dir(run)}/hardnegs_audit.{self._name('audit', suffix)}"

    @_inside_root
    def metrics(self, run: str, index: str | None = None) -> str:
        return f"{self._by_index(run, index)}/metrics.json"

    @_inside_root
    def per_query(self, run: str, index: str | None = None) -> str:
        return f"{self._by_index(run, index)}/per_query.parquet"

    @_inside_root
    def fusion_tuning(self, run: str, suffix: str) -> str:
        """The tuning of a fusion run's weight: ``json`` (the record and the chosen α) or ``parquet`` (the grid)."""
        return f"{self.run_dir(run)}/fusion_tuning.{self._name('fusion tuning', suffix)}"

    # -------------------------------------------------------------------------------------- experiments
    @_inside_root
    def experiment(self, name: str, file: str) -> str:
        return f"{self.root}/{self._name('experiment', name)}/{file}"

    # ---------------------------------------------------------------------------- summary and tables
    @_inside_root
    def summary(self, suffix: str) -> str:
        """The summary of the runs: ``md`` (the table with its significance markers) or ``parquet`` (one row
        per run)."""
        return f"{self.root}/summary.{self._name('summary', suffix)}"

    @_inside_root
    def summary_tests(self) -> str:
        """Every paired t-test behind the summary's markers (one row per run, baseline and measure)."""
        return f"{self.root}/summary_tests.parquet"

    @_inside_root
    def table(self, name: str, suffix: str) -> str:
        """A cross-run table: ``results/tables/<name>.<suffix>`` (``md`` or ``parquet``)."""
        return f"{self.root}/tables/{self._name('table', name)}.{self._name('table', suffix)}"

    @_inside_root
    def table_log(self, name: str) -> str:
        """The log of the job writing the summary (``name`` ``summary``) or table ``name``."""
        return f"{self.root}/tables/logs/{self._name('log', name)}.log"

    @_inside_root
    def table_benchmark(self, name: str) -> str:
        return f"{self.root}/tables/benchmarks/{self._name('benchmark', name)}.tsv"

    # ------------------------------------------------------------------------------------------ figures
    @_inside_root
    def run_graph(self) -> str:
        """The graph of the report's runs (which run feeds which), one self-contained HTML page."""
        return f"{self.root}/run_graph.html"

    @_inside_root
    def figure(self, name: str, suffix: str) -> str:
        """A figure: ``png`` (the image) or ``parquet`` (the data it draws)."""
        return f"{self.root}/figures/{self._name('figure', name)}.{self._name('figure', suffix)}"

    # ----------------------------------------------------------------------------------- report and logs
    @_inside_root
    def viewer(self, run: str) -> str:
        """The hard-negative viewer of a mining run: one self-contained HTML page of sampled queries."""
        return f"{self.run_dir(run)}/hardnegs_viewer.html"

    @_inside_root
    def tensorboard(self, run: str) -> str:
        """The TensorBoard log folder of a training run, written while it trains (a log, not an artifact)."""
        return f"{self.run_dir(run)}/tensorboard"
