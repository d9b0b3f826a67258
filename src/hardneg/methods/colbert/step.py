"""ColBERT's training step: the contrastive step with late-interaction scores."""

from __future__ import annotations

import torch

from hardneg.dense.distributed import SINGLE, Replicas
from hardneg.dense.maxsim import maxsim
from hardneg.dense.steps import Batch, ContrastiveMethod


class ColbertMethod(ContrastiveMethod):
    """ColBERT's training step (the TCT-ColBERT teacher): the contrastive step with late-interaction scores
    (:func:`hardneg.dense.maxsim.maxsim` over token vectors) in place of inner products of single vectors.

    With ``in_batch`` false, as in ColBERT's own training on triples, each query is scored against its own
    positive and negatives only (see :class:`ContrastiveMethod`). With several processes the token
    vectors are padded to the cache's document width plus the marker before they are gathered (every rank
    must send one shape)."""

    def scores(self, model, batch: Batch, device, replicas: Replicas = SINGLE) -> torch.Tensor:
        (qv, _), (dv, dm) = self.encode(model, batch, device, replicas)
        if replicas.distributed:
            width = self.doc_texts.ids.shape[1] + 1
            dv = torch.nn.functional.pad(dv, (0, 0, 0, width - dv.shape[1]))
            dm = torch.nn.functional.pad(dm.to(dv.dtype), (0, width - dm.shape[1]))
            qv = replicas.gather(qv, len(batch.query_rows))
            dv, dm = replicas.gather(dv, len(batch.doc_rows)), replicas.gather(dm, len(batch.doc_rows))
        with torch.autocast(torch.device(device).type, enabled=False):
            return maxsim(qv.float(), dv.float(), dm.bool())
