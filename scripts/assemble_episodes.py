"""Rule assemble_episodes: an episodic run's episodes → its model (the last episode's), its training log and step
timings (the episodes' end to end), and its refresh costs (seconds per checkpoint, from the jobs' benchmark
records)."""

from hardneg.evaluation.timing import write_refresh_costs
from hardneg.io.logs import log_to
from hardneg.pipeline.episodes import assemble

log_to(snakemake.log[0])
assemble(snakemake.input.model, list(snakemake.input.train_logs), list(snakemake.input.timings),
         model_dir=snakemake.output.model, log_path=snakemake.output.train_log,
         timings_path=snakemake.output.timings)
write_refresh_costs(snakemake.wildcards.run, snakemake.params.benchmarks, snakemake.output.costs_markdown,
                    snakemake.output.costs)
