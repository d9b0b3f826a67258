# hardneg: dense retrievers trained with hard negatives, one rule file per stage.
from snakemake.utils import min_version

from hardneg.config import validate_config

min_version("9.0")


configfile: "config/config.yaml"


validate_config(config, f"{workflow.basedir}/workflow/schemas/config.schema.yaml")


include: "rules/common.smk"


wildcard_constraints:
    run=names_regex(PLAN.runs),
    dataset=names_regex(PLAN.datasets),
    split=r"[A-Za-z0-9_.-]+",


include: "rules/datasets.smk"
include: "rules/bm25.smk"
include: "rules/tokenize.smk"
include: "rules/train.smk"
include: "rules/encode.smk"
include: "rules/index.smk"
include: "rules/mine.smk"
include: "rules/pq_matrix.smk"
include: "rules/evaluate.smk"


rule all:
    default_target: True
    input:
        PLAN.targets(),
