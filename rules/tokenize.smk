# Tokenizers and the tokenized cache: the corpus and the queries tokenized once per (tokenizer, lengths).


rule train_tokenizer:
    input:
        corpus=LAYOUT.corpus("{dataset}"),
        queries=LAYOUT.queries_dir("{dataset}"),
    output:
        tokenizer=update(directory(LAYOUT.tokenizer("{dataset}", "{vocab}"))),
    wildcard_constraints:
        vocab=r"\d+",
    params:
        # the training queries, where the dataset has a training split
        queries_files=lambda w, input: (
            [split_file(input.queries, "train")] if "train" in dataset_splits(PLAN.datasets[w.dataset]) else []
        ),
    message:
        "train the tokenizer of dataset {wildcards.dataset} (vocabulary {wildcards.vocab}) (log: {log})"
    log:
        LAYOUT.dataset_log("{dataset}", "train_tokenizer_{vocab}"),
    benchmark:
        LAYOUT.dataset_benchmark("{dataset}", "train_tokenizer_{vocab}")
    threads: 2
    resources:
        **rule_resources("train_tokenizer", mem_mb=4000, runtime=30),
    conda:
        "../environment.yml"
    script:
        "../scripts/train_tokenizer.py"


rule tokenize:
    input:
        corpus=LAYOUT.corpus("{dataset}"),
        queries=LAYOUT.queries_dir("{dataset}"),
        tokenizer=lambda w: PLAN.builtin_tokenizers(w.dataset, w.cache),
    output:
        cache=update(directory(LAYOUT.tokenized("{dataset}", "{cache}"))),
    params:
        cache=lambda w: PLAN.caches()[(w.dataset, w.cache)],
        # the queries of each split the cache holds, from the queries folder (see split_file_of)
        queries_files=lambda w, input: {
            split: split_file(input.queries, split) for split in PLAN.caches()[(w.dataset, w.cache)]["splits"]
        },
    message:
        "tokenize dataset {wildcards.dataset} for {wildcards.cache} (log: {log})"
    log:
        LAYOUT.dataset_log("{dataset}", "tokenize_{cache}"),
    benchmark:
        LAYOUT.dataset_benchmark("{dataset}", "tokenize_{cache}")
    threads: 2
    resources:
        **rule_resources("tokenize", mem_mb=4000, runtime=60),
    conda:
        "../environment.yml"
    script:
        "../scripts/tokenize.py"
