# Evaluation of any run's ranking of the evaluation split (and evaluation.extra_splits), and the record of each
# run's resolved config.


rule run_config:
    output:
        update(LAYOUT.config("{run}")),
    params:
        resolved=lambda w: PLAN.resolved(w.run),
        loaded_model=lambda w: PLAN.loaded_model(w.run),
    message:
        "write the resolved config of run {wildcards.run} (log: {log})"
    log:
        LAYOUT.log("{run}", "run_config"),
    benchmark:
        LAYOUT.benchmark("{run}", "run_config")
    threads: 1
    resources:
        **rule_resources("run_config", mem_mb=500, runtime=5),
    conda:
        "../environment.yml"
    script:
        "../scripts/run_config.py"


rule evaluate:
    input:
        # inputs by name, as PLAN.evaluate_inputs gives them for the job: config, doc_ids, doc_npy, lineage, qrels,
        #   query_ids, query_npy, rankings, reports
        unpack(lambda w: PLAN.evaluate_inputs(w.run)),
    output:
        metrics=update(LAYOUT.metrics("{run}")),
        per_query=update(LAYOUT.per_query("{run}")),
    params:
        split=EVAL_SPLIT,
        measures=config["evaluation"]["measures"],
    message:
        "evaluate run {wildcards.run} (log: {log})"
    log:
        LAYOUT.log("{run}", "evaluate"),
    benchmark:
        LAYOUT.benchmark("{run}", "evaluate")
    threads: 1
    resources:
        **rule_resources("evaluate", mem_mb=4000, runtime=30),
    conda:
        "../environment.yml"
    script:
        "../scripts/evaluate.py"


rule evaluate_with_index:
    input:
        rankings=LAYOUT.ranking("{run}", EVAL_SPLIT, "{index}"),
        qrels=qrels_dir,
        config=LAYOUT.config("{run}"),
    output:
        metrics=update(LAYOUT.metrics("{run}", "{index}")),
        per_query=update(LAYOUT.per_query("{run}", "{index}")),
    params:
        split=EVAL_SPLIT,
        measures=config["evaluation"]["measures"],
    message:
        "evaluate run {wildcards.run} with index {wildcards.index} (log: {log})"
    log:
        LAYOUT.log("{run}", "evaluate_{index}"),
    benchmark:
        LAYOUT.benchmark("{run}", "evaluate_{index}")
    threads: 1
    resources:
        **rule_resources("evaluate_with_index", mem_mb=4000, runtime=30),
    conda:
        "../environment.yml"
    script:
        "../scripts/evaluate.py"
