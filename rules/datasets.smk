# Dataset preparation: any supported source → canonical Parquet (corpus, queries and qrels per split).


rule prepare_dataset:
    input:
        lambda w: dataset_input_files(DATASETS[w.dataset]),
    output:
        corpus=f"{RESULTS}/datasets/{{dataset}}/corpus.parquet",
        queries=directory(f"{RESULTS}/datasets/{{dataset}}/queries"),
        qrels=directory(f"{RESULTS}/datasets/{{dataset}}/qrels"),
        stats=f"{RESULTS}/datasets/{{dataset}}/stats.json",
    params:
        dataset=lambda w: dataset_config(config, w.dataset),
    log:
        f"{RESULTS}/datasets/{{dataset}}/logs/prepare_dataset.log",
    benchmark:
        f"{RESULTS}/datasets/{{dataset}}/benchmarks/prepare_dataset.tsv"
    threads: 1
    resources:
        mem_mb=8000,
        runtime=60,
    conda:
        "../environment.yml"
    script:
        "../scripts/prepare_dataset.py"
