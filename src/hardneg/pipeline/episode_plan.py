"""The run plan's episodes: how an episodic run (ANCE) unfolds into episode runs, what its model is assembled from,
and which jobs' benchmark records make up its refresh costs (:mod:`hardneg.pipeline.episodes`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hardneg.evaluation.timing import REFRESH_PARTS  # noqa: F401  (the parts of refresh_benchmarks' records)
from hardneg.io.layout import episode_run, parse_episode_run
from hardneg.methods.registry import source_episode
from hardneg.pipeline import episodes as _episodes

if TYPE_CHECKING:
    from hardneg.pipeline.plan import Plan


class EpisodePlan:
    """The part of :class:`hardneg.pipeline.plan.Plan` that concerns runs in episodes."""

    def __init__(self, plan: Plan):
        self.plan = plan  # the whole plan: the runs, the layout and the other parts

    # ---------------------------------------------------------------------------------------- episodes
    def schedule(self, run: str):
        """The :class:`hardneg.methods.Episodes` of an episodic run (None for any other run, episodes included)."""
        return _episodes.of(self.plan.method(run), self.plan.params(run)) if run in self.plan.user_runs else None

    @property
    def episodic_runs(self) -> list[str]:
        """Runs that train in episodes (ANCE): their model is their last episode's."""
        return [run for run in self.plan.user_runs if self.schedule(run) is not None]

    def episode_runs(self, run: str | None = None) -> list[str]:
        """The episode runs of episodic run ``run`` in order (of every episodic run when None)."""
        if run is None:
            return [name for parent in self.episodic_runs for name in self.episode_runs(parent)]
        return [episode_run(run, index) for index in range(self.schedule(run).count)]

    def episode_of(self, run: str) -> tuple[str, int] | None:
        """(episodic run, index) of an episode run; None for any other run."""
        return parse_episode_run(run) if run in self.plan.runs else None

    def assemble_inputs(self, run: str) -> dict:
        """What an episodic run's model, training log and refresh costs are assembled from: the last episode's
        ``model`` (behind it, every episode and refresh) and every episode's ``train_log`` and ``timings``."""
        episodes, layout = self.episode_runs(run), self.plan.layout
        return {
            "model": layout.model(episodes[-1]),
            "train_logs": [layout.train_log(e) for e in episodes],
            "timings": [layout.train_timings(e) for e in episodes],
        }

    def _mining_benchmarks(self, episodes: list[str]) -> list[str]:
        """The benchmark records of mining for ``episodes`` (all mined by one checkpoint): the miner's positive
        scores and candidate pool, then each episode's selection."""
        if not episodes:
            return []
        layout, pool = self.plan.layout, self.plan.mining.pool(episodes[0])
        return [
            layout.benchmark(pool.miner, f"positive_scores_{pool.split}"),
            layout.benchmark(pool.miner, f"candidate_pool_{pool.name}"),
            *(layout.benchmark(name, "select_hard_negatives") for name in episodes),
        ]

    def refresh_benchmarks(self, run: str) -> list[dict]:
        """The benchmark records (Snakemake writes them beside the artifacts; no rule can ask for one as an input)
        of an episodic run's jobs, by checkpoint: first the warm-up's (``checkpoint`` None: mining the episodes its
        model mines for), then each episode's: ``train`` (its training job) and the refresh its checkpoint feeds,
        ``encode`` (the shards and their gathering), ``index``, ``search`` (the training split) and ``mine``
        (the positive scores and candidate pool of the checkpoint, the selection of each episode trained on its
        negatives). A checkpoint no episode trains on has no refresh jobs."""
        plan, layout, names = self.schedule(run), self.plan.layout, self.episode_runs(run)
        # checkpoint → episodes on its negatives
        fed: dict[int | None, list[str]] = {None: [], **{index: [] for index in range(plan.count)}}
        for index, name in enumerate(names):
            fed[source_episode(index, plan.lag)].append(name)
        out = []
        for checkpoint in [None, *range(plan.count)]:
            bench = {
                "checkpoint": checkpoint,
                "train": [],
                "encode": [],
                "index": [],
                "search": [],
                "mine": self._mining_benchmarks(fed[checkpoint]),
            }
            if checkpoint is not None:
                name = names[checkpoint]
                bench["train"] = [layout.benchmark(name, "train")]
                if fed[checkpoint]:
                    shards = range(self.plan.params(name)["encode"]["shards"])
                    bench["encode"] = [layout.benchmark(name, f"encode_corpus_shard_{shard}") for shard in shards]
                    bench["encode"].append(layout.benchmark(name, "gather_embeddings"))
                    bench["index"] = [
                        layout.benchmark(name, f"build_faiss_index_{slug}") for slug in self.plan.index_factories(name)
                    ]
                    bench["search"] = [layout.benchmark(name, f"dense_search_{self.plan.train_split(name)}")]
            out.append(bench)
        return out
