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


# A run's own evaluation, and (the PQ experiment) that of its ranking with another index over its documents: the
# wildcard by_index is empty, or /by_index/<slug>, whose folder holds the metrics and the job's log.
rule evaluate:
    input:
        # inputs by name, as PLAN.evaluate_inputs gives them for the job: config, doc_ids, doc_npy, lineage, qrels,
        #   query_ids, query_npy, rankings, reports
        unpack(lambda w: PLAN.evaluate_inputs(w.run, index_slug(w.by_index))),
    output:
        metrics=update(LAYOUT.metrics("{run}", BY_INDEX_WILDCARD)),
        per_query=update(LAYOUT.per_query("{run}", BY_INDEX_WILDCARD)),
    params:
        split=EVAL_SPLIT,
        measures=config["evaluation"]["measures"],
    message:
        "evaluate run {wildcards.run}{wildcards.by_index} (log: {log})"
    log:
        LAYOUT.log("{run}", "evaluate", BY_INDEX_WILDCARD),
    benchmark:
        LAYOUT.benchmark("{run}", "evaluate", BY_INDEX_WILDCARD)
    threads: 1
    resources:
        **rule_resources("evaluate", mem_mb=4000, runtime=30),
    conda:
        "../environment.yml"
    script:
        "../scripts/evaluate.py"
