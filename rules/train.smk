# Training of dense retrievers (warm-up, baselines, STAR): one rule, the method comes from the run's config.

DENSE = names_regex(DENSE_RUNS)


rule train_dense:
    input:
        unpack(adore_inputs),
        cache=run_cache_dir,
        qrels=lambda w: f"{run_dataset_dir(w)}/qrels",
        negatives=train_negatives,
        init=init_model,
    output:
        model=directory(f"{RESULTS}/{{run}}/model"),
        train_log=f"{RESULTS}/{{run}}/train_log.parquet",
    wildcard_constraints:
        run=DENSE,
    params:
        resolved=lambda w: training_slice(w.run),
        tokenizer=lambda w: tokenizer_source(w.run),
        checkpoints=lambda w: f"{RESULTS}/{w.run}/checkpoints",
    log:
        f"{RESULTS}/{{run}}/logs/train.log",
    benchmark:
        f"{RESULTS}/{{run}}/benchmarks/train.tsv"
    threads: 2
    resources:
        mem_mb=8000,
        runtime=240,
    conda:
        "../environment.yml"
    script:
        "../scripts/train_dense.py"
