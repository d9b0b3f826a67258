# Fusion runs (hybrid, rrf): the rankings of other runs combined split by split; a hybrid run's weight alpha is
# tuned first on sampled queries of a split that is never evaluated (params.tune.split).


rule tune_fusion:
    input:
        # inputs by name, as PLAN.fusion.tuning_inputs gives them for the job: qrels, rankings
        unpack(lambda w: PLAN.fusion.tuning_inputs(w.run)),
    output:
        json=update(LAYOUT.fusion_tuning("{run}", "json")),
        parquet=update(LAYOUT.fusion_tuning("{run}", "parquet")),
    wildcard_constraints:
        run=names_regex(PLAN.fusion.tuned_runs),
    params:
        method=lambda w: PLAN.runs[w.run]["method"],
        fusion=lambda w: run_params(w.run),
        seed=lambda w: PLAN.seed(w.run),
        split=lambda w: PLAN.fusion.tuning_split(w.run),
        qrels_file=split_file_of("qrels", lambda w: PLAN.fusion.tuning_split(w.run)),
        trained_on=lambda w: PLAN.fusion.trained_splits(w.run),
        method_modules=lambda w: PLAN.method_modules(w.run),
    message:
        "tune the fusion weight of run {wildcards.run} (log: {log})"
    log:
        LAYOUT.log("{run}", "tune_fusion"),
    benchmark:
        LAYOUT.benchmark("{run}", "tune_fusion")
    threads: 1
    resources:
        **rule_resources("tune_fusion", mem_mb=4000, runtime=60),
    conda:
        "../environment.yml"
    script:
        "../scripts/tune_fusion.py"


rule fuse:
    input:
        # inputs by name, as PLAN.fusion.fusion_inputs gives them for the job: rankings, tuning
        unpack(lambda w: PLAN.fusion.fusion_inputs(w.run, w.split)),
    output:
        ranking=update(LAYOUT.ranking("{run}", "{split}")),
        trec=update(LAYOUT.ranking_trec("{run}", "{split}")),
    wildcard_constraints:
        run=names_regex(PLAN.fusion.fusion_runs),
    params:
        method=lambda w: PLAN.runs[w.run]["method"],
        fusion=lambda w: run_params(w.run),
        method_modules=lambda w: PLAN.method_modules(w.run),
    message:
        "fuse split {wildcards.split} of run {wildcards.run} (log: {log})"
    log:
        LAYOUT.log("{run}", "fuse_{split}"),
    benchmark:
        LAYOUT.benchmark("{run}", "fuse_{split}")
    threads: 1
    resources:
        **rule_resources("fuse", mem_mb=6000, runtime=60),
    conda:
        "../environment.yml"
    script:
        "../scripts/fuse.py"
