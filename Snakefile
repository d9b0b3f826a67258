# hardneg: dense retrievers trained with hard negatives, one rule file per stage.
from snakemake.utils import min_version

from hardneg.pipeline.config import read_config_files, validate_config
from hardneg.pipeline.config_checks import check_dataset_files
from hardneg.pipeline.resources import check_rules_declared

min_version("9.0")

# The config: config/config.yaml, or the files given with --configfile INSTEAD of it (a user's config stands
# alone; Snakemake's `configfile:` directive would merge the two). --config KEY=VALUE adjusts either. Every file is
# read by hardneg's strict reader, the one `hardneg check-config` uses: Snakemake reads --configfile files first
# with its own, which keeps the last of a key written twice and has no limits.
config.clear()
config.update(read_config_files(workflow.overwrite_configfiles or ["config/config.yaml"],
                                workflow.config_settings.config))

validate_config(config)  # against the schema inside the hardneg package
check_dataset_files(config)  # a dataset's files exist (or are downloaded): a redefined dataset is prepared again

# `snakemake --report results/report.html`: the front page of the report (captions: workflow/report/)
report: "workflow/report/workflow.rst"


include: "rules/common.smk"


wildcard_constraints:
    run=names_regex(PLAN.runs),
    dataset=names_regex(PLAN.datasets),
    split=r"[A-Za-z0-9_.-]+",
    by_index=BY_INDEX_PATTERN,  # empty (a run's own index) or /by_index/<slug> (rules/index.smk, rules/evaluate.smk)


include: "rules/download.smk"
include: "rules/datasets.smk"
include: "rules/bm25.smk"
include: "rules/tokenize.smk"
include: "rules/train.smk"
include: "rules/episodes.smk"
include: "rules/rerank.smk"
include: "rules/encode.smk"
include: "rules/index.smk"
include: "rules/mine.smk"
include: "rules/card.smk"
include: "rules/evaluate.smk"
include: "rules/fusion.smk"
include: "rules/summary.smk"
include: "rules/compare.smk"
include: "rules/figures.smk"
include: "rules/report.smk"

# The experiments (hardneg.experiments: the PQ matrix, the false negatives, ...), each declared once with the rule
# file of its own tables.
for experiment in EXPERIMENTS.values():
    include: f"rules/{experiment.rule_file}"

# The rules that read the config's `resources` are those validate_config holds its names to.
check_rules_declared(RESOURCE_RULES)


onstart:
    # SIGTERM/SIGINT to Snakemake stops the running jobs promptly (training saves a checkpoint first)
    if workflow.local_exec and not workflow.subprocess_exec:
        from hardneg.io.stop import forward_to_jobs

        forward_to_jobs()
    sweep_temporaries(workflow)  # before the first job: what jobs killed outright in earlier runs left
    refuse_unwritable(workflow)  # a read-only run folder: one line now, not a traceback from Snakemake later


onerror:
    sweep_temporaries(workflow)  # after the last job: what the failed or killed jobs of this run left


rule all:
    default_target: True
    input:
        PLAN.report.targets(),
