# Static hard-negative mining for STAR runs: the mining run's (inputs.negatives) scores of the training positives,
# the mined hard negatives, and their audit (against the BM25 run inputs.bm25 when set).
# The mining run M = inputs.negatives; the split is the run's training split (params.train.split).

STAR = names_regex(runs_with_method("star"))


rule positive_scores:
    input:
        unpack(
            lambda w: {
                "query_emb": f"{RESULTS}/{run_input(w.run, 'negatives')}/embeddings/queries_{dense_params(w.run)['train']['split']}.npy",
                "query_ids": f"{RESULTS}/{run_input(w.run, 'negatives')}/embeddings/queries_{dense_params(w.run)['train']['split']}.ids.parquet",
                "doc_emb": f"{RESULTS}/{run_input(w.run, 'negatives')}/embeddings/corpus.npy",
                "doc_ids": f"{RESULTS}/{run_input(w.run, 'negatives')}/embeddings/corpus.ids.parquet",
            }
        ),
        qrels=lambda w: f"{run_dataset_dir(w)}/qrels",
    output:
        positives=f"{RESULTS}/{{run}}/positive_scores.parquet",
    wildcard_constraints:
        run=STAR,
    params:
        split=lambda w: dense_params(w.run)["train"]["split"],
    log:
        f"{RESULTS}/{{run}}/logs/positive_scores.log",
    benchmark:
        f"{RESULTS}/{{run}}/benchmarks/positive_scores.tsv"
    threads: 1
    resources:
        mem_mb=4000,
        runtime=30,
    conda:
        "../environment.yml"
    script:
        "../scripts/positive_scores.py"


rule mine_hard_negatives:
    input:
        run=lambda w: f"{RESULTS}/{run_input(w.run, 'negatives')}/runs/{dense_params(w.run)['train']['split']}.parquet",
        qrels=lambda w: f"{run_dataset_dir(w)}/qrels",
        positives=f"{RESULTS}/{{run}}/positive_scores.parquet",
    output:
        hardnegs=f"{RESULTS}/{{run}}/hardnegs.parquet",
    wildcard_constraints:
        run=STAR,
    params:
        split=lambda w: dense_params(w.run)["train"]["split"],
        mining=lambda w: dense_params(w.run)["mining"],
        seed=lambda w: RUNS[w.run].get("seed", config["seed"]),
    log:
        f"{RESULTS}/{{run}}/logs/mine_hard_negatives.log",
    benchmark:
        f"{RESULTS}/{{run}}/benchmarks/mine_hard_negatives.tsv"
    threads: 1
    resources:
        mem_mb=6000,
        runtime=60,
    conda:
        "../environment.yml"
    script:
        "../scripts/mine_hard_negatives.py"


rule audit_hard_negatives:
    input:
        hardnegs=f"{RESULTS}/{{run}}/hardnegs.parquet",
        run=lambda w: f"{RESULTS}/{run_input(w.run, 'negatives')}/runs/{dense_params(w.run)['train']['split']}.parquet",
        qrels=lambda w: f"{run_dataset_dir(w)}/qrels",
        positives=f"{RESULTS}/{{run}}/positive_scores.parquet",
        bm25=lambda w: (
            [f"{RESULTS}/{run_input(w.run, 'bm25')}/runs/{dense_params(w.run)['train']['split']}.parquet"]
            if run_input(w.run, "bm25")
            else []
        ),
    output:
        markdown=f"{RESULTS}/{{run}}/hardnegs_audit.md",
        table=f"{RESULTS}/{{run}}/hardnegs_audit.parquet",
        summary=f"{RESULTS}/{{run}}/hardnegs_audit.json",
    wildcard_constraints:
        run=STAR,
    params:
        split=lambda w: dense_params(w.run)["train"]["split"],
        depth=lambda w: dense_params(w.run)["mining"]["depth"],
    log:
        f"{RESULTS}/{{run}}/logs/audit_hard_negatives.log",
    benchmark:
        f"{RESULTS}/{{run}}/benchmarks/audit_hard_negatives.tsv"
    threads: 1
    resources:
        mem_mb=6000,
        runtime=30,
    conda:
        "../environment.yml"
    script:
        "../scripts/audit_hard_negatives.py"
