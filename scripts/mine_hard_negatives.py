"""Rule mine_hard_negatives: the mining run's ranking of the training split + qrels + positive scores →
hardnegs.parquet (static hard negatives of a STAR run)."""

import os

from hardneg.io.logs import log_to
from hardneg.mining.negatives import mine_stage

log_to(snakemake.log[0])
mining = snakemake.params.mining
mine_stage(snakemake.input.run, os.path.join(snakemake.input.qrels, f"{snakemake.params.split}.parquet"),
           snakemake.output.hardnegs, positives_path=snakemake.input.positives, depth=mining["depth"],
           rank_range=mining["rank_range"], keep=mining["keep"], sampling=mining["sampling"],
           seed=snakemake.params.seed, margin=mining["margin"], relative_margin=mining["relative_margin"])
