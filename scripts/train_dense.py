"""Rule train_dense: tokenized data + negatives (+ an initial model) → trained bi-encoder and training log."""

import os

import torch

from hardneg.dense.train import train_run
from hardneg.logs import log_to

log_to(snakemake.log[0])
torch.set_num_threads(snakemake.threads)
resolved = snakemake.params.resolved
train_run(resolved, cache_dir=snakemake.input.cache,
          qrels_path=os.path.join(snakemake.input.qrels, f"{resolved['params']['train']['split']}.parquet"),
          model_dir=snakemake.output.model, log_path=snakemake.output.train_log,
          checkpoint_dir=snakemake.params.checkpoints, tokenizer_source=snakemake.params.tokenizer,
          negatives_path=snakemake.input.negatives[0] if snakemake.input.negatives else None,
          init_model=snakemake.input.init[0] if snakemake.input.init else None,
          device=resolved["params"]["train"]["device"],
          doc_embeddings=snakemake.input.get("doc_embeddings"), train_index=snakemake.input.get("train_index"))
