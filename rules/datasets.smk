# Dataset preparation: any supported source → canonical Parquet (corpus, queries and qrels per split).
from hardneg.datasets.hidden import hidden_split

# Datasets that hide a share of a split's positives (hide_positives) also write them: prepare_dataset_hiding.
HIDING = [name for name, cfg in PLAN.datasets.items() if hidden_split(cfg) is not None]


rule prepare_dataset:
    input:
        lambda w: dataset_input_files(PLAN.datasets[w.dataset]),
    output:
        corpus=update(LAYOUT.corpus("{dataset}")),
        queries=update(directory(LAYOUT.queries_dir("{dataset}"))),
        qrels=update(directory(LAYOUT.qrels_dir("{dataset}"))),
        stats=update(LAYOUT.dataset_stats("{dataset}")),
    wildcard_constraints:
        dataset=names_regex([name for name in PLAN.datasets if name not in HIDING]),
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


# The same job, with the hidden positives beside the qrels (results/datasets/<dataset>/hidden/<split>.parquet).
use rule prepare_dataset as prepare_dataset_hiding with:
    output:
        corpus=update(LAYOUT.corpus("{dataset}")),
        queries=update(directory(LAYOUT.queries_dir("{dataset}"))),
        qrels=update(directory(LAYOUT.qrels_dir("{dataset}"))),
        stats=update(LAYOUT.dataset_stats("{dataset}")),
        hidden=update(directory(LAYOUT.hidden_qrels_dir("{dataset}"))),
    wildcard_constraints:
        dataset=names_regex(HIDING),
