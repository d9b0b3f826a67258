"""Rule mining_card: a mining run's hard negatives + everything they were mined from → its mining card
(hardnegs_card.json): input digests, search, pool and policy parameters, seed, thread counts, library versions."""

import torch

from hardneg.io.logs import log_to
from hardneg.mining.card import build_card, write_card

log_to(snakemake.log[0])
torch.set_num_threads(snakemake.threads)  # as the dense search's job sets it: the card records what that gives
card = snakemake.params.card
split = card["split"]
given = dict(snakemake.input.items())
inputs = {name: path for name, path in given.items() if name not in ("hardnegs", "queries", "qrels")}
inputs["queries"] = snakemake.params.queries_file  # the split's files of the folders
inputs["qrels"] = snakemake.params.qrels_file
write_card(snakemake.output.card,
           build_card(run=card["run"], miner=card["miner"], dataset=card["dataset"], split=split, inputs=inputs,
                      hardnegs=given["hardnegs"], search=card["search"], pool=card["pool"], policy=card["policy"],
                      policy_name=card["policy_name"], seed=card["seed"], results=snakemake.params.results))
