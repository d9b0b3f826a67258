# Corpus encoding, scattered over shards (separate jobs) and gathered into one embedding matrix.


rule encode_corpus_shard:
    input:
        model=f"{RESULTS}/{{run}}/model",
        cache=run_cache_dir,
    output:
        npy=temp(f"{RESULTS}/{{run}}/embeddings/shards/{{shard}}.npy"),
        ids=temp(f"{RESULTS}/{{run}}/embeddings/shards/{{shard}}.ids.parquet"),
    wildcard_constraints:
        run=names_regex(ENCODED_RUNS),
        shard=r"\d+",
    params:
        encode=lambda w: dense_params(w.run)["encode"],
        device=lambda w: dense_params(w.run)["train"]["device"],
    log:
        f"{RESULTS}/{{run}}/logs/encode_corpus_shard_{{shard}}.log",
    benchmark:
        f"{RESULTS}/{{run}}/benchmarks/encode_corpus_shard_{{shard}}.tsv"
    threads: 1
    resources:
        mem_mb=4000,
        runtime=120,
    conda:
        "../environment.yml"
    script:
        "../scripts/encode_corpus_shard.py"


rule gather_embeddings:
    input:
        npy=lambda w: [f"{RESULTS}/{w.run}/embeddings/shards/{i}.npy" for i in range(dense_params(w.run)["encode"]["shards"])],
        ids=lambda w: [f"{RESULTS}/{w.run}/embeddings/shards/{i}.ids.parquet" for i in range(dense_params(w.run)["encode"]["shards"])],
    output:
        npy=f"{RESULTS}/{{run}}/embeddings/corpus.npy",
        ids=f"{RESULTS}/{{run}}/embeddings/corpus.ids.parquet",
    wildcard_constraints:
        run=names_regex(ENCODED_RUNS),
    log:
        f"{RESULTS}/{{run}}/logs/gather_embeddings.log",
    benchmark:
        f"{RESULTS}/{{run}}/benchmarks/gather_embeddings.tsv"
    threads: 1
    resources:
        mem_mb=4000,
        runtime=30,
    conda:
        "../environment.yml"
    script:
        "../scripts/gather_embeddings.py"
