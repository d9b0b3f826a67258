# Evaluation of any run's ranking on the evaluation split, and the record of each run's resolved config.


rule run_config:
    output:
        f"{RESULTS}/{{run}}/config.yaml",
    params:
        resolved=lambda w: resolve_run(config, w.run),
    log:
        f"{RESULTS}/{{run}}/logs/run_config.log",
    benchmark:
        f"{RESULTS}/{{run}}/benchmarks/run_config.tsv"
    threads: 1
    resources:
        mem_mb=500,
        runtime=5,
    conda:
        "../environment.yml"
    script:
        "../scripts/run_config.py"


rule evaluate:
    input:
        unpack(run_embeddings),
        runs=run_files,
        qrels=lambda w: f"{run_dataset_dir(w)}/qrels",
        config=f"{RESULTS}/{{run}}/config.yaml",
        reports=run_reports,
    output:
        metrics=f"{RESULTS}/{{run}}/metrics.json",
        per_query=f"{RESULTS}/{{run}}/per_query.parquet",
    params:
        split=EVAL_SPLIT,
        measures=config["evaluation"]["measures"],
    log:
        f"{RESULTS}/{{run}}/logs/evaluate.log",
    benchmark:
        f"{RESULTS}/{{run}}/benchmarks/evaluate.tsv"
    threads: 1
    resources:
        mem_mb=4000,
        runtime=30,
    conda:
        "../environment.yml"
    script:
        "../scripts/evaluate.py"


rule evaluate_with_index:
    input:
        runs=f"{RESULTS}/{{run}}/by_index/{{index}}/runs/{EVAL_SPLIT}.parquet",
        qrels=lambda w: f"{run_dataset_dir(w)}/qrels",
        config=f"{RESULTS}/{{run}}/config.yaml",
    output:
        metrics=f"{RESULTS}/{{run}}/by_index/{{index}}/metrics.json",
        per_query=f"{RESULTS}/{{run}}/by_index/{{index}}/per_query.parquet",
    params:
        split=EVAL_SPLIT,
        measures=config["evaluation"]["measures"],
    log:
        f"{RESULTS}/{{run}}/logs/evaluate_{{index}}.log",
    benchmark:
        f"{RESULTS}/{{run}}/benchmarks/evaluate_{{index}}.tsv"
    threads: 1
    resources:
        mem_mb=4000,
        runtime=30,
    conda:
        "../environment.yml"
    script:
        "../scripts/evaluate.py"
