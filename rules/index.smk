# Faiss indexes over a run's corpus embeddings, and dense retrieval of a split.


rule build_faiss_index:
    input:
        embeddings=LAYOUT.corpus_embeddings("{run}"),
    output:
        index=update(LAYOUT.index("{run}", "{index}")),
    wildcard_constraints:
        run=names_regex(PLAN.encoded_runs),
    params:
        factory=lambda w: PLAN.index_factories(w.run)[w.index],
        train_size=lambda w: run_params(w.run)["index"]["train_size"],
        seed=lambda w: PLAN.seed(w.run),
    message:
        "build index {wildcards.index} of run {wildcards.run} (log: {log})"
    log:
        LAYOUT.log("{run}", "build_faiss_index_{index}"),
    benchmark:
        LAYOUT.benchmark("{run}", "build_faiss_index_{index}")
    threads: 2
    resources:
        **rule_resources("build_faiss_index", mem_mb=8000, runtime=120),
    conda:
        "../environment.yml"
    script:
        "../scripts/build_faiss_index.py"


# A run's search of a split with its own index, or (the PQ experiment) with another index over its documents: the
# wildcard by_index is empty, or /by_index/<slug>, whose folder holds that ranking, its query embeddings (the run's
# own, encoded again) and the job's log.
rule dense_search:
    input:
        # inputs by name, as PLAN.search_inputs gives them for the job: cache, docids, index, model
        unpack(lambda w: PLAN.search_inputs(w.run, index_slug(w.by_index))),
    output:
        ranking=update(LAYOUT.ranking("{run}", "{split}", BY_INDEX_WILDCARD)),
        trec=update(LAYOUT.ranking_trec("{run}", "{split}", BY_INDEX_WILDCARD)),
        query_npy=update(LAYOUT.query_embeddings("{run}", "{split}", BY_INDEX_WILDCARD)),
        query_ids=update(LAYOUT.query_ids("{run}", "{split}", BY_INDEX_WILDCARD)),
    wildcard_constraints:
        run=names_regex(PLAN.dense_runs),
    params:
        search=lambda w: run_params(w.run)["search"],
        search_params=lambda w: run_params(w.run)["index"]["search_params"],
        device=lambda w: run_params(w.run)["train"]["device"],
        precision=lambda w: run_params(w.run)["encode"]["precision"],
    message:
        "dense search of split {wildcards.split}, run {wildcards.run}{wildcards.by_index} (log: {log})"
    log:
        LAYOUT.log("{run}", "dense_search_{split}", BY_INDEX_WILDCARD),
    benchmark:
        LAYOUT.benchmark("{run}", "dense_search_{split}", BY_INDEX_WILDCARD)
    threads: 2
    resources:
        **rule_resources("dense_search", mem_mb=6000, runtime=60),
        gpu=lambda w: PLAN.inference_gpus(w.run),
    conda:
        "../environment.yml"
    script:
        "../scripts/dense_search.py"
