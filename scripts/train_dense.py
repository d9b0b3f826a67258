"""Rules train_dense and train_episode: tokenized data + the inputs of the run's roles (+ an initial model, and for
an episode the previous episode's trainer state) → trained model, training log and the step timings (and an
episode's trainer state). The method's training step is built from the method registry (hardneg.methods)."""

import torch

from hardneg.io.logs import log_to
from hardneg.pipeline.train import train_run

log_to(snakemake.log[0])
torch.set_num_threads(snakemake.threads)
resolved = snakemake.params.resolved
train_run(resolved, cache_dir=snakemake.input.cache,
          qrels_path=snakemake.params.qrels_file,
          model_dir=snakemake.output.model, log_path=snakemake.output.train_log,
          checkpoint_dir=snakemake.params.checkpoints, tokenizer_source=snakemake.params.tokenizer,
          inputs={name: path for name, path in snakemake.input.items() if name not in ("cache", "qrels")},
          method_modules=snakemake.params.method_modules, timings_path=snakemake.output.timings,
          tensorboard_dir=snakemake.params.tensorboard, state_dir=snakemake.output.get("state"))
