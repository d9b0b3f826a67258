# Tokenizers and the tokenized cache: the corpus and the queries tokenized once per (tokenizer, lengths).


rule train_tokenizer:
    input:
        corpus=LAYOUT.corpus("{dataset}"),
        queries=LAYOUT.queries_dir("{dataset}"),
    output:
        tokenizer=update(directory(LAYOUT.tokenizer("{dataset}", "{vocab}"))),
    wildcard_constraints:
        vocab=r"\d+",
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
