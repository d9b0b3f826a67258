# Tokenizers and the tokenized cache: the corpus and the queries tokenized once per (tokenizer, lengths).


rule train_tokenizer:
    input:
        corpus=f"{RESULTS}/datasets/{{dataset}}/corpus.parquet",
        queries=f"{RESULTS}/datasets/{{dataset}}/queries",
    output:
        tokenizer=directory(f"{RESULTS}/datasets/{{dataset}}/tokenizers/wordpiece-{{vocab}}"),
    wildcard_constraints:
        vocab=r"\d+",
    log:
        f"{RESULTS}/datasets/{{dataset}}/logs/train_tokenizer_{{vocab}}.log",
    benchmark:
        f"{RESULTS}/datasets/{{dataset}}/benchmarks/train_tokenizer_{{vocab}}.tsv"
    threads: 2
    resources:
        mem_mb=4000,
        runtime=30,
    conda:
        "../environment.yml"
    script:
        "../scripts/train_tokenizer.py"


rule tokenize:
    input:
        corpus=f"{RESULTS}/datasets/{{dataset}}/corpus.parquet",
        queries=f"{RESULTS}/datasets/{{dataset}}/queries",
        tokenizer=builtin_tokenizer,
    output:
        cache=directory(f"{RESULTS}/datasets/{{dataset}}/tokenized/{{cache}}"),
    params:
        cache=lambda w: CACHES[(w.dataset, w.cache)],
    log:
        f"{RESULTS}/datasets/{{dataset}}/logs/tokenize_{{cache}}.log",
    benchmark:
        f"{RESULTS}/datasets/{{dataset}}/benchmarks/tokenize_{{cache}}.tsv"
    threads: 2
    resources:
        mem_mb=4000,
        runtime=60,
    conda:
        "../environment.yml"
    script:
        "../scripts/tokenize.py"
