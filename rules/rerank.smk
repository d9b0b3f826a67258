# Re-ranking runs (the ColBERT teacher): a trained model re-ranks the top-k of another run's ranking of a split.


rule rerank:
    input:
        # inputs by name, as PLAN.rerank_inputs gives them for the job: cache, candidates, corpus, model, queries
        unpack(lambda w: PLAN.rerank_inputs(w.run, w.split)),
    output:
        ranking=update(LAYOUT.ranking("{run}", "{split}")),
        trec=update(LAYOUT.ranking_trec("{run}", "{split}")),
    wildcard_constraints:
        run=names_regex(PLAN.rerank_runs),
    params:
        method=lambda w: PLAN.runs[w.run]["method"],
        method_modules=lambda w: PLAN.method_modules(w.run),
        rerank=lambda w: run_params(w.run)["rerank"],
        device=lambda w: run_params(w.run)["train"]["device"],
        queries_file=split_file_of("queries", lambda w: w.split),  # a pair scorer's (PLAN.pair_texts)
    message:
        "re-rank split {wildcards.split} with run {wildcards.run} (log: {log})"
    log:
        LAYOUT.log("{run}", "rerank_{split}"),
    benchmark:
        LAYOUT.benchmark("{run}", "rerank_{split}")
    threads: 2
    resources:
        **rule_resources("rerank", mem_mb=6000, runtime=120),
        gpu=lambda w: PLAN.inference_gpus(w.run),
    conda:
        "../environment.yml"
    script:
        "../scripts/rerank.py"
