"""The results layout: where every artifact lives, in one place.

Every function returns a path under ``root`` (default ``results``) as a string. Called with wildcard patterns
(``run="{run}"``) they give the output patterns of the workflow rules; called with names they give the files
the plan (:mod:`hardneg.plan`), the command line and the stage runner read.
"""

from __future__ import annotations

RESULTS = "results"


class Layout:
    def __init__(self, root: str = RESULTS):
        self.root = str(root).rstrip("/") or "."

    # ------------------------------------------------------------------------------------------- datasets
    def dataset_dir(self, dataset: str) -> str:
        return f"{self.root}/datasets/{dataset}"

    def corpus(self, dataset: str) -> str:
        return f"{self.dataset_dir(dataset)}/corpus.parquet"

    def queries_dir(self, dataset: str) -> str:
        return f"{self.dataset_dir(dataset)}/queries"

    def queries(self, dataset: str, split: str) -> str:
        return f"{self.queries_dir(dataset)}/{split}.parquet"

    def qrels_dir(self, dataset: str) -> str:
        return f"{self.dataset_dir(dataset)}/qrels"

    def qrels(self, dataset: str, split: str) -> str:
        return f"{self.qrels_dir(dataset)}/{split}.parquet"

    def dataset_stats(self, dataset: str) -> str:
        return f"{self.dataset_dir(dataset)}/stats.json"

    def tokenizer(self, dataset: str, vocab) -> str:
        return f"{self.dataset_dir(dataset)}/tokenizers/wordpiece-{vocab}"

    def tokenized(self, dataset: str, key: str) -> str:
        return f"{self.dataset_dir(dataset)}/tokenized/{key}"

    def dataset_log(self, dataset: str, name: str) -> str:
        return f"{self.dataset_dir(dataset)}/logs/{name}.log"

    def dataset_benchmark(self, dataset: str, name: str) -> str:
        return f"{self.dataset_dir(dataset)}/benchmarks/{name}.tsv"

    # ----------------------------------------------------------------------------------------------- runs
    def run_dir(self, run: str) -> str:
        return f"{self.root}/{run}"

    def config(self, run: str) -> str:
        return f"{self.run_dir(run)}/config.yaml"

    def log(self, run: str, name: str) -> str:
        return f"{self.run_dir(run)}/logs/{name}.log"

    def benchmark(self, run: str, name: str) -> str:
        return f"{self.run_dir(run)}/benchmarks/{name}.tsv"

    def bm25_index(self, run: str) -> str:
        return f"{self.run_dir(run)}/bm25_index"

    def model(self, run: str) -> str:
        return f"{self.run_dir(run)}/model"

    def train_log(self, run: str) -> str:
        return f"{self.run_dir(run)}/train_log.parquet"

    def checkpoints(self, run: str) -> str:
        return f"{self.run_dir(run)}/checkpoints"

    def _by_index(self, run: str, index: str | None) -> str:
        return self.run_dir(run) if index is None else f"{self.run_dir(run)}/by_index/{index}"

    def ranking(self, run: str, split: str, index: str | None = None) -> str:
        """A run's ranking of a split (``index``: ranked with another index over the same documents)."""
        return f"{self._by_index(run, index)}/runs/{split}.parquet"

    def ranking_trec(self, run: str, split: str, index: str | None = None) -> str:
        return f"{self._by_index(run, index)}/runs/{split}.trec"

    def query_embeddings(self, run: str, split: str, index: str | None = None) -> str:
        return f"{self._by_index(run, index)}/embeddings/queries_{split}.npy"

    def query_ids(self, run: str, split: str, index: str | None = None) -> str:
        return f"{self._by_index(run, index)}/embeddings/queries_{split}.ids.parquet"

    def corpus_embeddings(self, run: str) -> str:
        return f"{self.run_dir(run)}/embeddings/corpus.npy"

    def corpus_ids(self, run: str) -> str:
        return f"{self.run_dir(run)}/embeddings/corpus.ids.parquet"

    def embedding_shard(self, run: str, shard) -> str:
        return f"{self.run_dir(run)}/embeddings/shards/{shard}.npy"

    def embedding_shard_ids(self, run: str, shard) -> str:
        return f"{self.run_dir(run)}/embeddings/shards/{shard}.ids.parquet"

    def index(self, run: str, slug: str) -> str:
        return f"{self.run_dir(run)}/index/{slug}.faiss"

    def hard_negatives(self, run: str) -> str:
        return f"{self.run_dir(run)}/hardnegs.parquet"

    def positive_scores(self, run: str) -> str:
        return f"{self.run_dir(run)}/positive_scores.parquet"

    def audit(self, run: str, suffix: str) -> str:
        """The hard-negative audit: ``md`` (report), ``parquet`` (per query) or ``json`` (summary)."""
        return f"{self.run_dir(run)}/hardnegs_audit.{suffix}"

    def metrics(self, run: str, index: str | None = None) -> str:
        return f"{self._by_index(run, index)}/metrics.json"

    def per_query(self, run: str, index: str | None = None) -> str:
        return f"{self._by_index(run, index)}/per_query.parquet"

    # -------------------------------------------------------------------------------------- experiments
    def experiment(self, name: str, file: str) -> str:
        return f"{self.root}/{name}/{file}"
