# The false-negative experiment (the config's `false_negatives` section): each selection policy applied to the miner's
# candidate pool of a dataset that hides a share of its training positives, the hidden positives it selects as
# negatives (leakage) against the hardness it keeps, and with `train` the runs trained on each policy's negatives.
# The pool is the miner's ordinary pool (rules/mine.smk); its runs, inputs, writers and report pages are
# hardneg.experiments.false_negatives, whose declaration (EXPERIMENT) the Snakefile includes this file for.
# `snakemake --cores all false_negatives`.
from hardneg.experiments import false_negatives as FALSE_NEGATIVES


# Each policy's negatives from the pool, where no generated run of the policy selects them (without `train`).
rule false_negatives_select:
    input:
        pool=lambda w: FALSE_NEGATIVES.pool_path(PLAN),
    output:
        hardnegs=update(FALSE_NEGATIVES.output(PLAN, "selections/{policy}.parquet")),
        selection=update(FALSE_NEGATIVES.output(PLAN, "selections/{policy}.json")),
    wildcard_constraints:
        policy=names_regex(FALSE_NEGATIVES.selected_policies(PLAN)),
    params:
        policy=lambda w: FALSE_NEGATIVES.policy_params(PLAN, w.policy),
        name=lambda w: w.policy,
        seed=config["seed"],
        max_queries_without=None,  # the experiment measures every policy, one that selects little included
        where=lambda w: f"policies.{w.policy}",
    message:
        "select the negatives of policy {wildcards.policy} for the false-negative experiment (log: {log})"
    log:
        FALSE_NEGATIVES.output(PLAN, "logs/select_{policy}.log"),
    benchmark:
        FALSE_NEGATIVES.output(PLAN, "benchmarks/select_{policy}.tsv")
    threads: 1
    resources:
        **rule_resources("false_negatives_select", mem_mb=4000, runtime=30),
    conda:
        "../environment.yml"
    script:
        "../scripts/select_hard_negatives.py"


rule leakage_table:
    input:
        # inputs by name, as FALSE_NEGATIVES.leakage_inputs gives them for the job: hidden, pool, selections
        unpack(lambda w: FALSE_NEGATIVES.leakage_inputs(PLAN)),
    output:
        table=update(FALSE_NEGATIVES.output(PLAN, "leakage.parquet")),
        markdown=update(FALSE_NEGATIVES.output(PLAN, "leakage.md")),
    params:
        settings=lambda w: FALSE_NEGATIVES.leakage_params(PLAN),
        hidden_file=split_file_of("hidden", lambda w: FALSE_NEGATIVES.leakage_params(PLAN)["split"]),
    message:
        "the false-negative experiment: leakage and hardness of each policy (log: {log})"
    log:
        FALSE_NEGATIVES.output(PLAN, "logs/leakage_table.log"),
    benchmark:
        FALSE_NEGATIVES.output(PLAN, "benchmarks/leakage_table.tsv")
    threads: 1
    resources:
        **rule_resources("leakage_table", mem_mb=4000, runtime=10),
    conda:
        "../environment.yml"
    script:
        "../scripts/leakage_table.py"


rule leakage_figure:
    input:
        table=FALSE_NEGATIVES.output(PLAN, "leakage.parquet"),
    output:
        png=update(report(FALSE_NEGATIVES.output(PLAN, "leakage.png"),
                          caption="../workflow/report/false_negatives_figure.rst", category="Experiments")),
    message:
        "the false-negative experiment: leakage against hardness kept (log: {log})"
    log:
        FALSE_NEGATIVES.output(PLAN, "logs/leakage_figure.log"),
    benchmark:
        FALSE_NEGATIVES.output(PLAN, "benchmarks/leakage_figure.tsv")
    threads: 1
    resources:
        **rule_resources("leakage_figure", mem_mb=1000, runtime=5),
    conda:
        "../environment.yml"
    script:
        "../scripts/leakage_figure.py"


# With `train`: the runs trained on each policy's negatives, against the reference policy's run.
rule false_negatives_effectiveness:
    input:
        # inputs by name, as FALSE_NEGATIVES.effectiveness_inputs gives them for the job: per_query
        unpack(lambda w: FALSE_NEGATIVES.effectiveness_inputs(PLAN)),
    output:
        table=update(FALSE_NEGATIVES.output(PLAN, "effectiveness.parquet")),
        markdown=update(FALSE_NEGATIVES.output(PLAN, "effectiveness.md")),
    params:
        policies=lambda w: FALSE_NEGATIVES.policies(PLAN),
        runs=lambda w: [FALSE_NEGATIVES.runs(PLAN)[policy] for policy in FALSE_NEGATIVES.policies(PLAN)],
        measures=lambda w: config[FALSE_NEGATIVES.SECTION]["measures"],
        correction=lambda w: config[FALSE_NEGATIVES.SECTION]["correction"],
        split=EVAL_SPLIT,
    message:
        "the false-negative experiment: the runs trained on each policy's negatives (log: {log})"
    log:
        FALSE_NEGATIVES.output(PLAN, "logs/effectiveness.log"),
    benchmark:
        FALSE_NEGATIVES.output(PLAN, "benchmarks/effectiveness.tsv")
    threads: 1
    resources:
        **rule_resources("false_negatives_effectiveness", mem_mb=2000, runtime=10),
    conda:
        "../environment.yml"
    script:
        "../scripts/false_negatives_effectiveness.py"


# `snakemake --cores all false_negatives`: the experiment's tables, figure and report pages.
rule false_negatives:
    input:
        lambda w: FALSE_NEGATIVES.targets(PLAN),
