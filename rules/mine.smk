# Static hard-negative mining, for runs whose method has a `miner` role (STAR): the miner run's scores of the
# training positives, the mined hard negatives, and their audit (against the run's reference rankings, e.g.
# BM25). The split is the run's training split (params.train.split).
# A killed re-mining (`snakemake -R mine_hard_negatives`) keeps the previous list (update(): rules/common.smk).

MINING = names_regex(PLAN.mining_runs)


rule positive_scores:
    input:
        unpack(lambda w: PLAN.positive_scores_inputs(w.run)),
    output:
        positives=update(LAYOUT.positive_scores("{run}")),
    wildcard_constraints:
        run=MINING,
    params:
        split=lambda w: PLAN.train_split(w.run),
    message:
        "score the positives of run {wildcards.run} (log: {log})"
    log:
        LAYOUT.log("{run}", "positive_scores"),
    benchmark:
        LAYOUT.benchmark("{run}", "positive_scores")
    threads: 1
    resources:
        **rule_resources("positive_scores", mem_mb=4000, runtime=30),
    conda:
        "../environment.yml"
    script:
        "../scripts/positive_scores.py"


rule mine_hard_negatives:
    input:
        unpack(lambda w: PLAN.mining_inputs(w.run)),
    output:
        hardnegs=update(LAYOUT.hard_negatives("{run}")),
    wildcard_constraints:
        run=MINING,
    params:
        split=lambda w: PLAN.train_split(w.run),
        mining=lambda w: run_params(w.run)["mining"],
        seed=lambda w: PLAN.seed(w.run),
    message:
        "mine hard negatives for run {wildcards.run} (log: {log})"
    log:
        LAYOUT.log("{run}", "mine_hard_negatives"),
    benchmark:
        LAYOUT.benchmark("{run}", "mine_hard_negatives")
    threads: 1
    resources:
        **rule_resources("mine_hard_negatives", mem_mb=6000, runtime=60),
    conda:
        "../environment.yml"
    script:
        "../scripts/mine_hard_negatives.py"


rule audit_hard_negatives:
    input:
        unpack(lambda w: PLAN.audit_inputs(w.run)),
    output:
        markdown=update(LAYOUT.audit("{run}", "md")),
        table=update(LAYOUT.audit("{run}", "parquet")),
        summary=update(LAYOUT.audit("{run}", "json")),
    wildcard_constraints:
        run=MINING,
    params:
        split=lambda w: PLAN.train_split(w.run),
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
