# Corpus encoding, scattered over shards (separate jobs) and gathered into one embedding matrix.


rule encode_corpus_shard:
    input:
        model=LAYOUT.model("{run}"),
        cache=run_cache_dir,
    output:
        npy=temp(LAYOUT.embedding_shard("{run}", "{shard}")),
        ids=temp(LAYOUT.embedding_shard_ids("{run}", "{shard}")),
    wildcard_constraints:
        run=names_regex(PLAN.encoded_runs),
        shard=r"\d+",
    params:
        encode=lambda w: run_params(w.run)["encode"],
        device=lambda w: run_params(w.run)["train"]["device"],
    message:
        "encode corpus shard {wildcards.shard} with the model of run {wildcards.run} (log: {log})"
    log:
        LAYOUT.log("{run}", "encode_corpus_shard_{shard}"),
    benchmark:
        LAYOUT.benchmark("{run}", "encode_corpus_shard_{shard}")
    threads: 1
    resources:
        **rule_resources("encode_corpus_shard", mem_mb=4000, runtime=120),
        gpu=lambda w: PLAN.inference_gpus(w.run),  # one device per shard: one GPU where the run trains on GPUs
    conda:
        "../environment.yml"
    script:
        "../scripts/encode_corpus_shard.py"


rule gather_embeddings:
    input:
        # inputs by name, as PLAN.embedding_shards gives them for the job: ids, npy
        unpack(lambda w: PLAN.embedding_shards(w.run)),
    output:
        npy=update(LAYOUT.corpus_embeddings("{run}")),
        ids=update(LAYOUT.corpus_ids("{run}")),
    wildcard_constraints:
        run=names_regex(PLAN.encoded_runs),
    message:
        "gather the corpus embeddings of run {wildcards.run} (log: {log})"
    log:
        LAYOUT.log("{run}", "gather_embeddings"),
    benchmark:
        LAYOUT.benchmark("{run}", "gather_embeddings")
    threads: 1
    resources:
        **rule_resources("gather_embeddings", mem_mb=4000, runtime=30),
    conda:
        "../environment.yml"
    script:
        "../scripts/gather_embeddings.py"
