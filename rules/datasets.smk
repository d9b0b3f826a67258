# Dataset preparation: any supported source → canonical Parquet (corpus, queries and qrels per split).


rule prepare_dataset:
    input:
        lambda w: dataset_input_files(PLAN.datasets[w.dataset]),
    output:
        corpus=update(LAYOUT.corpus("{dataset}")),
        queries=update(directory(LAYOUT.queries_dir("{dataset}"))),
        qrels=update(directory(LAYOUT.qrels_dir("{dataset}"))),
        stats=update(LAYOUT.dataset_stats("{dataset}")),
    params:
        dataset=lambda w: PLAN.dataset_config(w.dataset),
    message:
        "prepare dataset {wildcards.dataset} (log: {log})"
    log:
        LAYOUT.dataset_log("{dataset}", "prepare_dataset"),
    benchmark:
        LAYOUT.dataset_benchmark("{dataset}", "prepare_dataset")
    threads: 1
    resources:
        **rule_resources("prepare_dataset", mem_mb=8000, runtime=60),
    conda:
        "../environment.yml"
    script:
        "../scripts/prepare_dataset.py"
