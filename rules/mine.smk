# Static hard-negative mining, for runs whose method has a `miner` role (STAR): mine once, select by policy. The
# miner's scores of the training positives and its candidate pool (its ranking of the training split to
# params.mining.depth, positives removed, with BM25's ranks, a cross-encoder's probabilities and duplicates of a
# positive) live under the miner, shared by every run asking for the same pool; each run's policy selects its
# hard negatives from the pool, and the audit reports them (against the run's reference rankings, e.g. BM25).
# A killed re-selection (`snakemake -R select_hard_negatives`) keeps the previous list (update(): rules/common.smk).

MINING = names_regex(PLAN.mining.mining_runs)
IMPORTED = names_regex(PLAN.mining.imported_runs)
LISTED = names_regex(PLAN.mining.listed_runs)  # a list of their own, mined or imported: audited
MINERS = names_regex(PLAN.mining.mining_splits)
POOLS = names_regex(sorted({name for _, name in PLAN.mining.pools}))
SCORED_POOLS = names_regex(sorted({name for _, name in PLAN.mining.scored_pools}))
TEACHER_POOLS = names_regex(sorted({name for _, name, _ in PLAN.mining.teacher_pools}))
TEACHERS = names_regex(sorted({teacher for _, _, teacher in PLAN.mining.teacher_pools}))


rule near_duplicates:
    input:
        corpus=LAYOUT.corpus("{dataset}"),
    output:
        duplicates=update(LAYOUT.duplicates("{dataset}")),
    wildcard_constraints:
        dataset=names_regex(PLAN.mining.deduplicated_datasets),
    params:
        duplicates=PLAN.mining.duplicates_params,
        seed=1,  # MinHash's permutations: fixed, so the pairs found depend on the corpus and the options only
    message:
        "find the duplicate documents of dataset {wildcards.dataset} (log: {log})"
    log:
        LAYOUT.dataset_log("{dataset}", "near_duplicates"),
    benchmark:
        LAYOUT.dataset_benchmark("{dataset}", "near_duplicates")
    threads: 1
    resources:
        **rule_resources("near_duplicates", mem_mb=8000, runtime=120),
    conda:
        "../environment.yml"
    script:
        "../scripts/near_duplicates.py"


rule positive_scores:
    input:
        # inputs by name, as PLAN.mining.positive_scores_inputs gives them for the job: doc_emb, doc_ids, qrels,
        #   query_emb, query_ids
        unpack(lambda w: PLAN.mining.positive_scores_inputs(w.run, w.split)),
    output:
        positives=update(LAYOUT.pool_positive_scores("{run}", "{split}")),
    wildcard_constraints:
        run=MINERS,
        split=r"[A-Za-z0-9][A-Za-z0-9_.-]*",
    params:
        qrels_file=split_file_of("qrels", lambda w: w.split),
    message:
        "score the positives of split {wildcards.split} with run {wildcards.run} (log: {log})"
    log:
        LAYOUT.log("{run}", "positive_scores_{split}"),
    benchmark:
        LAYOUT.benchmark("{run}", "positive_scores_{split}")
    threads: 1
    resources:
        **rule_resources("positive_scores", mem_mb=4000, runtime=30),
    conda:
        "../environment.yml"
    script:
        "../scripts/positive_scores.py"


rule candidate_pool:
    input:
        # inputs by name, as PLAN.mining.pool_inputs gives them for the job: bm25_ranking, ce_candidates, ce_positives,
        #   duplicates, positives, qrels, ranking
        unpack(lambda w: PLAN.mining.pool_inputs(w.run, w.pool)),
    output:
        pool=update(LAYOUT.pool("{run}", "{pool}")),
    wildcard_constraints:
        run=MINERS,
        pool=POOLS,
    params:
        split=lambda w: PLAN.mining.pools[(w.run, w.pool)].split,
        qrels_file=split_file_of("qrels", lambda w: PLAN.mining.pools[(w.run, w.pool)].split),
        depth=lambda w: PLAN.mining.pools[(w.run, w.pool)].depth,
    message:
        "build candidate pool {wildcards.pool} of run {wildcards.run} (log: {log})"
    log:
        LAYOUT.log("{run}", "candidate_pool_{pool}"),
    benchmark:
        LAYOUT.benchmark("{run}", "candidate_pool_{pool}")
    threads: 1
    resources:
        **rule_resources("candidate_pool", mem_mb=6000, runtime=60),
    conda:
        "../environment.yml"
    script:
        "../scripts/candidate_pool.py"


# A pool with a cross-encoder (params.mining's run names a `cross_encoder` input): its probabilities of the pool's
# candidates and of the split's judged positives, read by the pool's ce_score columns and the ce_* policy filters.
rule score_pool:
    input:
        # inputs by name, as PLAN.mining.pool_scoring_inputs gives them for the job: cache, corpus, model, qrels,
        #   queries, ranking
        unpack(lambda w: PLAN.mining.pool_scoring_inputs(w.run, w.pool)),
    output:
        candidates=update(LAYOUT.pool_scores("{run}", "{pool}", "candidates")),
        positives=update(LAYOUT.pool_scores("{run}", "{pool}", "positives")),
    wildcard_constraints:
        run=MINERS,
        pool=SCORED_POOLS,
    params:
        split=lambda w: PLAN.mining.pools[(w.run, w.pool)].split,
        queries_file=split_file_of("queries", lambda w: PLAN.mining.pools[(w.run, w.pool)].split),
        qrels_file=split_file_of("qrels", lambda w: PLAN.mining.pools[(w.run, w.pool)].split),
        depth=lambda w: PLAN.mining.pools[(w.run, w.pool)].depth,
        method=lambda w: PLAN.runs[PLAN.mining.pools[(w.run, w.pool)].cross_encoder]["method"],
        method_modules=lambda w: PLAN.method_modules(PLAN.mining.pools[(w.run, w.pool)].cross_encoder),
        batch_size=lambda w: run_params(PLAN.mining.pools[(w.run, w.pool)].cross_encoder)["rerank"]["batch_size"],
        device=lambda w: run_params(PLAN.mining.pools[(w.run, w.pool)].cross_encoder)["train"]["device"],
    message:
        "score candidate pool {wildcards.pool} of run {wildcards.run} with its cross-encoder (log: {log})"
    log:
        LAYOUT.log("{run}", "score_pool_{pool}"),
    benchmark:
        LAYOUT.benchmark("{run}", "score_pool_{pool}")
    threads: 2
    resources:
        **rule_resources("score_pool", mem_mb=6000, runtime=120),
        gpu=lambda w: PLAN.inference_gpus(PLAN.mining.pools[(w.run, w.pool)].cross_encoder),
    conda:
        "../environment.yml"
    script:
        "../scripts/score_pool.py"


# A pool a teacher run scores (a distilling run names it as its `teacher` input: the ColBERT teacher, say): the
# teacher's scores of the pool's candidates and of the split's judged positives, as it re-ranks them; the runs that
# distil from it read them.
rule teacher_pool_scores:
    input:
        # inputs by name, as PLAN.mining.teacher_scoring_inputs gives them for the job: cache, corpus, model, qrels,
        #   queries, ranking
        unpack(lambda w: PLAN.mining.teacher_scoring_inputs(w.run, w.pool, w.teacher)),
    output:
        candidates=update(LAYOUT.teacher_scores("{run}", "{pool}", "{teacher}", "candidates")),
        positives=update(LAYOUT.teacher_scores("{run}", "{pool}", "{teacher}", "positives")),
    wildcard_constraints:
        run=MINERS,
        pool=TEACHER_POOLS,
        teacher=TEACHERS,
    params:
        split=lambda w: PLAN.mining.teacher_pools[(w.run, w.pool, w.teacher)].split,
        queries_file=split_file_of("queries", lambda w: PLAN.mining.teacher_pools[(w.run, w.pool, w.teacher)].split),
        qrels_file=split_file_of("qrels", lambda w: PLAN.mining.teacher_pools[(w.run, w.pool, w.teacher)].split),
        depth=lambda w: PLAN.mining.teacher_pools[(w.run, w.pool, w.teacher)].depth,
        method=lambda w: PLAN.runs[w.teacher]["method"],
        method_modules=lambda w: PLAN.method_modules(w.teacher),
        batch_size=lambda w: run_params(w.teacher)["rerank"]["batch_size"],
        device=lambda w: run_params(w.teacher)["train"]["device"],
    message:
        "score candidate pool {wildcards.pool} of run {wildcards.run} with teacher {wildcards.teacher} (log: {log})"
    log:
        LAYOUT.log("{run}", "teacher_pool_scores_{pool}_{teacher}"),
    benchmark:
        LAYOUT.benchmark("{run}", "teacher_pool_scores_{pool}_{teacher}")
    threads: 2
    resources:
        **rule_resources("teacher_pool_scores", mem_mb=6000, runtime=120),
        gpu=lambda w: PLAN.inference_gpus(w.teacher),
    conda:
        "../environment.yml"
    script:
        "../scripts/teacher_pool_scores.py"


rule select_hard_negatives:
    input:
        # inputs by name, as PLAN.mining.selection_inputs gives them for the job: pool
        unpack(lambda w: PLAN.mining.selection_inputs(w.run)),
    output:
        hardnegs=update(LAYOUT.hard_negatives("{run}")),
        selection=update(LAYOUT.selection("{run}")),
    wildcard_constraints:
        run=MINING,
    params:
        policy=lambda w: PLAN.mining.policy_params(w.run),
        name=lambda w: run_params(w.run)["mining"]["policy"],
        seed=lambda w: PLAN.seed(w.run),
        max_queries_without=lambda w: run_params(w.run)["mining"]["max_queries_without"],
        where=lambda w: f"runs.{w.run}.params.mining",  # the key errors name
    message:
        "select the hard negatives of run {wildcards.run} from its pool (log: {log})"
    log:
        LAYOUT.log("{run}", "select_hard_negatives"),
    benchmark:
        LAYOUT.benchmark("{run}", "select_hard_negatives")
    threads: 1
    resources:
        **rule_resources("select_hard_negatives", mem_mb=4000, runtime=30),
    conda:
        "../environment.yml"
    script:
        "../scripts/select_hard_negatives.py"


# A run that trains on a list mined elsewhere (inputs.negatives: {imported: <folder>}, `hardneg import`'s output)
# takes a copy of it and of its card into its folder, checked against the card: the audit, `hardneg verify <run>`
# and training read it there as they read a mined list.
rule import_hard_negatives:
    input:
        # inputs by name, as PLAN.mining.import_inputs gives them for the job: card, hardnegs, positives
        unpack(lambda w: PLAN.mining.import_inputs(w.run)),
    output:
        hardnegs=update(LAYOUT.hard_negatives("{run}")),
        positives=update(LAYOUT.imported_positives("{run}")),
        card=update(LAYOUT.hardnegs_card("{run}")),
    wildcard_constraints:
        run=IMPORTED,
    params:
        dataset=lambda w: PLAN.dataset(w.run),
        split=lambda w: PLAN.train_split(w.run),
        results=lambda w, output: results_folder(output.card),  # the run's card records its files under it
    message:
        "copy the imported hard negatives of run {wildcards.run} (log: {log})"
    log:
        LAYOUT.log("{run}", "import_hard_negatives"),
    benchmark:
        LAYOUT.benchmark("{run}", "import_hard_negatives")
    threads: 1
    resources:
        **rule_resources("import_hard_negatives", mem_mb=2000, runtime=10),
    conda:
        "../environment.yml"
    script:
        "../scripts/import_hard_negatives.py"


rule audit_hard_negatives:
    input:
        # inputs by name, as PLAN.mining.audit_inputs gives them for the job: corpus, hardnegs, pool, positives, qrels,
        #   ranking, reference, selection
        unpack(lambda w: PLAN.mining.audit_inputs(w.run)),
    output:
        markdown=update(LAYOUT.audit("{run}", "md")),
        table=update(LAYOUT.audit("{run}", "parquet")),
        summary=update(LAYOUT.audit("{run}", "json")),
    wildcard_constraints:
        run=LISTED,
    params:
        split=lambda w: PLAN.train_split(w.run),
        qrels_file=split_file_of("qrels", lambda w: PLAN.train_split(w.run)),
        depth=lambda w: run_params(w.run)["mining"]["depth"],
    message:
        "audit the hard negatives of run {wildcards.run} (log: {log})"
    log:
        LAYOUT.log("{run}", "audit_hard_negatives"),
    benchmark:
        LAYOUT.benchmark("{run}", "audit_hard_negatives")
    threads: 1
    resources:
        **rule_resources("audit_hard_negatives", mem_mb=6000, runtime=30),
    conda:
        "../environment.yml"
    script:
        "../scripts/audit_hard_negatives.py"
