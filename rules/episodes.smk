# Training in episodes (ANCE, hardneg.pipeline.episodes): each episode of an episodic run is a run of its own,
# results/<run>/episodes/<e>/, trained by train_episode and encoded, indexed, searched and mined by the rules every
# dense run uses; the episodic run's model is its last episode's, its training log the episodes' end to end, and
# benchmarks/refresh_costs.md the seconds spent training and refreshing the negatives, per checkpoint.


use rule train_dense as train_episode with:
    output:
        model=update(directory(LAYOUT.model("{run}"))),
        train_log=update(LAYOUT.train_log("{run}")),
        timings=update(LAYOUT.train_timings("{run}")),
        state=update(directory(LAYOUT.trainer_state("{run}"))),
    wildcard_constraints:
        run=names_regex(PLAN.episodes.episode_runs()),
    resources:
        # an episode is a slice of one training: its own time limit (resources.train_episode), not train_dense's
        **rule_resources("train_episode", mem_mb=8000, runtime=240),
        gpu=lambda w: PLAN.train_gpus(w.run),


rule assemble_episodes:
    input:
        # inputs by name, as PLAN.episodes.assemble_inputs gives them for the job: model, timings, train_logs
        unpack(lambda w: PLAN.episodes.assemble_inputs(w.run)),
    output:
        model=update(directory(LAYOUT.model("{run}"))),
        train_log=update(LAYOUT.train_log("{run}")),
        timings=update(LAYOUT.train_timings("{run}")),
        costs=update(LAYOUT.refresh_costs("{run}", "parquet")),
        costs_markdown=update(LAYOUT.refresh_costs("{run}", "md")),
    wildcard_constraints:
        run=names_regex(PLAN.episodes.episodic_runs),
    params:
        benchmarks=lambda w: PLAN.episodes.refresh_benchmarks(w.run),
    message:
        "assemble the episodes of run {wildcards.run} (log: {log})"
    log:
        LAYOUT.log("{run}", "assemble_episodes"),
    benchmark:
        LAYOUT.benchmark("{run}", "assemble_episodes")
    threads: 1
    resources:
        **rule_resources("assemble_episodes", mem_mb=2000, runtime=10),
    conda:
        "../environment.yml"
    script:
        "../scripts/assemble_episodes.py"
