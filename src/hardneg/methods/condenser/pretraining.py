"""Condenser (Gao and Callan, EMNLP 2021) and coCondenser (Gao and Callan, ACL 2022): the model and the loss that
pre-train a BERT-like encoder so that its [CLS] vector condenses the text, before it is fine-tuned as a dense
retriever.

* The backbone's layers are split into *early* (the first ``early_layers``) and *late* (the rest). A *head* of
  ``head_layers`` new transformer layers reads the late [CLS] vector followed by the early layers' token states
  (positions 1..n, the short circuit), and predicts the masked tokens: the late layers' token states are out
  of its reach, so whatever the head needs from the late layers has to pass through [CLS].
* Loss: masked language modelling (MLM) on the backbone's last layer plus MLM on the head's outputs, one MLM
  prediction head shared by both (BERT's, its decoder tied to the word embeddings; taken from the checkpoint
  when it has one): L = L_mlm(late) + L_mlm(head).
* coCondenser (``contrastive``): each document gives two random spans (contiguous token windows, each
  ``[CLS] ... [SEP]``), masked for MLM as above, and the late [CLS] vectors of the 2B spans of a batch add an
  in-batch contrastive loss: each span's positive is its partner, every other span of the batch a negative
  (raw inner products divided by ``temperature``, 1 in coCondenser): L = L_mlm(late) + L_mlm(head) +
  ``contrastive_weight`` x L_span.

Only the backbone outlives pre-training. ``save`` writes it as a bi-encoder folder
(:class:`hardneg.dense.model.BiEncoder`, pooling and normalisation of the run's ``params.model``, no projection),
so ``BiEncoder.load`` reads it and ``AutoModel.from_pretrained`` loads it as a plain Hugging Face encoder (another
run's ``params.model.name``). The backbone's pooler is kept in that folder although nothing reads it: its class
builds one, and a folder without it would load with a randomly drawn pooler and a warning.

The training step that feeds the model its batches (documents or spans, MLM masking) is
:mod:`hardneg.methods.condenser.step`.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from hardneg.dense.backbone import BUILTIN, build_backbone
from hardneg.dense.distributed import SINGLE, Replicas
from hardneg.dense.model import BiEncoder
from hardneg.methods.condenser.params import CondenserSection

if TYPE_CHECKING:
    from transformers import PreTrainedModel

log = logging.getLogger(__name__)

IGNORE = -100  # the label of a position without an MLM target (torch's cross-entropy default ignore_index)
_MLM_PREFIX = "cls.predictions."  # BertForMaskedLM / BertForPreTraining checkpoints


# ------------------------------------------------------------------------------------------------- the model
def _layer_output(output) -> torch.Tensor:
    """A transformer layer's hidden states: transformers 5 returns the tensor, earlier versions a tuple."""
    return output[0] if isinstance(output, tuple) else output


def _init_fresh(module: nn.Module, std: float) -> None:
    """BERT's initialisation of new weights: linear weights ~ N(0, std) with zero biases, LayerNorm 1 and 0
    (``nn.Linear``'s own default is a uniform draw of another scale)."""
    for sub in module.modules():
        if isinstance(sub, nn.Linear):
            nn.init.normal_(sub.weight, mean=0.0, std=std)
            if sub.bias is not None:
                nn.init.zeros_(sub.bias)
        elif isinstance(sub, nn.LayerNorm):
            nn.init.ones_(sub.weight)
            nn.init.zeros_(sub.bias)


def span_contrastive_loss(vectors: torch.Tensor, temperature: float = 1.0) -> torch.Tensor:
    """coCondenser's span-pair loss of ``vectors`` [2B, H]: rows ``i`` and ``i + B`` are the two spans of one
    document. Each row is scored against every other row (inner products / ``temperature``, itself left out), and
    the loss is the cross-entropy of its partner, averaged over the 2B rows. Computed in float32 at least."""
    count = vectors.shape[0]
    if count % 2:
        raise ValueError(f"span vectors come in pairs, got {count} rows")
    with torch.autocast(vectors.device.type, enabled=False):
        exact = vectors.to(torch.promote_types(vectors.dtype, torch.float32))
        scores = exact @ exact.T / temperature
        itself = torch.eye(count, dtype=torch.bool, device=vectors.device)
        scores = scores.masked_fill(itself, float("-inf"))
        partner = (torch.arange(count, device=vectors.device) + count // 2) % count
        return nn.functional.cross_entropy(scores, partner)


def _global_sum(value: torch.Tensor, replicas: Replicas) -> torch.Tensor:
    """The sum of a scalar over the training processes; only this process's term carries its gradient."""
    return replicas.gather(value.reshape(1), replicas.world).sum()


class Condenser(nn.Module):
    """A Condenser over ``encoder``, a Hugging Face BERT-like model (``embeddings`` then ``encoder.layer``).

    ``params`` gives the layer split, the head and the contrastive option (its MLM probability and spans are the
    step's); ``pooling``, ``normalize``, the maximum lengths and the ``prompts`` (``{"query": ..., "doc": ...}``,
    those the tokenized cache put before its texts) are those of the bi-encoder :meth:`save` writes.
    New weights (head, MLM head, pooler) are drawn from torch's global generator: seed it first, or use
    :meth:`create`."""

    def __init__(
        self,
        encoder: PreTrainedModel,
        params: CondenserSection,
        *,
        pooling: str = "cls",
        normalize: bool = False,
        query_max_length: int | None = None,
        doc_max_length: int | None = None,
        prompts: dict | None = None,
    ):
        super().__init__()
        # transformers: imported only where a model or tokenizer is used
        from transformers.models.bert.modeling_bert import BertOnlyMLMHead

        layers = getattr(getattr(encoder, "encoder", None), "layer", None)
        if not hasattr(encoder, "embeddings") or not isinstance(layers, nn.ModuleList):
            raise ValueError(
                f"Condenser needs a BERT-like encoder (embeddings, then encoder.layer), not a {type(encoder).__name__}"
            )
        total = len(layers)
        early = max(1, total // 2) if params.early_layers is None else params.early_layers
        if total < 2:
            raise ValueError(
                f"Condenser splits the backbone's layers into early and late ones: it needs 2 layers at "
                f"least, the backbone has {total}"
            )
        if not 1 <= early <= total - 1:
            raise ValueError(
                f"early_layers must be within 1..{total - 1} (the backbone has {total} layers), got {early}"
            )
        config = encoder.config
        # named as the trainer looks for it (gradient checkpointing); typed Any: its BERT parts (embeddings,
        # encoder.layer), checked above, are no attributes of PreTrainedModel
        self.encoder: Any = encoder
        self.params = params
        self.early_layers = early
        self.pooling, self.normalize = pooling, normalize
        self.query_max_length, self.doc_max_length = query_max_length, doc_max_length
        self.prompts = prompts  # those of the tokenized cache, kept for the saved bi-encoder
        std = getattr(config, "initializer_range", 0.02)
        # The head: new layers of the backbone's own kind and config, so they read its attention mask as is.
        self.head = nn.ModuleList([type(layers[0])(config) for _ in range(params.head_layers)])
        _init_fresh(self.head, std)
        self.mlm = BertOnlyMLMHead(config)
        predictions = self.mlm.predictions
        _init_fresh(predictions.transform, std)
        nn.init.zeros_(predictions.bias)
        # BERT's tying: the decoder is the word embeddings, with its own output bias
        predictions.decoder.weight = encoder.get_input_embeddings().weight
        predictions.decoder.bias = predictions.bias
        if getattr(encoder, "pooler", False) is None:
            # A pooler-less backbone (the built-in BERT): AutoModel would build one for the saved folder and draw
            # it at random, so one is drawn here, seeded, and saved with the backbone (never read).
            pooler_class = getattr(
                sys.modules[type(encoder).__module__], type(encoder).__name__.removesuffix("Model") + "Pooler", None
            )
            if pooler_class is not None:
                pooler = pooler_class(config)
                encoder.pooler = pooler
                _init_fresh(pooler, std)

    @property
    def num_layers(self) -> int:
        return len(self.encoder.encoder.layer)

    def _attention_mask(self, attention_mask: torch.Tensor, hidden: torch.Tensor):
        """The attention mask in the form the backbone's layers take (their attention implementation's)."""
        try:
            # transformers: imported only where a model or tokenizer is used
            from transformers.masking_utils import create_bidirectional_mask
        except ImportError:  # transformers 4: the additive [B, 1, 1, T] mask
            return self.encoder.get_extended_attention_mask(attention_mask, attention_mask.shape)
        return create_bidirectional_mask(
            config=self.encoder.config, inputs_embeds=hidden, attention_mask=attention_mask
        )

    def encode(self, input_ids: torch.Tensor, attention_mask: torch.Tensor):
        """``(early, late, mask)``: the hidden states [B, T, H] after the early layers and after the last layer
        (what the backbone alone returns), and the layers' attention mask."""
        hidden = self.encoder.embeddings(input_ids=input_ids)
        mask = self._attention_mask(attention_mask, hidden)
        early = None
        for index, layer in enumerate(self.encoder.encoder.layer):
            hidden = _layer_output(layer(hidden, mask))  # positional: what gradient checkpointing passes on
            if index + 1 == self.early_layers:
                early = hidden
        return early, hidden, mask

    def head_states(self, early: torch.Tensor, late: torch.Tensor, mask) -> torch.Tensor:
        """The head's outputs [B, T, H] over the late [CLS] followed by the early states of positions 1..T-1."""
        hidden = torch.cat([late[:, :1], early[:, 1:]], dim=1)
        for layer in self.head:
            hidden = _layer_output(layer(hidden, mask))
        return hidden

    def mlm_loss(self, hidden: torch.Tensor, labels: torch.Tensor, replicas: Replicas = SINGLE) -> torch.Tensor:
        """Mean cross-entropy of the MLM targets (``labels`` [B, T], :data:`IGNORE` where none) predicted from
        ``hidden`` [B, T, H], over the masked tokens of every process. Only masked positions are decoded: the
        vocabulary-wide logits of the others would be thrown away."""
        picked = labels != IGNORE
        logits = self.mlm(hidden[picked])
        total = nn.functional.cross_entropy(logits.float(), labels[picked], reduction="sum")
        count = picked.sum().to(total.dtype)
        return _global_sum(total, replicas) / _global_sum(count, replicas).detach().clamp(min=1.0)

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        labels: torch.Tensor,
        *,
        documents: int | None = None,
        replicas: Replicas = SINGLE,
    ):
        """The loss of one training step and its parts: ``(loss, {"mlm_late", "mlm_head"[, "contrastive"]})``
        (the parts detached).

        ``input_ids``, ``attention_mask``, ``labels``: [rows, T]. With ``contrastive``, the rows are this
        process's share of the documents' first spans followed by the same documents' second spans, and
        ``documents`` is the number of documents of the whole batch (default: this share's). With several
        processes (``replicas``) the losses are those of the whole batch, gradients flowing through this
        process's rows only (see :mod:`hardneg.dense.distributed`). Training calls this once per step: DDP
        needs exactly one forward per backward."""
        early, late, mask = self.encode(input_ids, attention_mask)
        mlm_late = self.mlm_loss(late, labels, replicas)
        mlm_head = self.mlm_loss(self.head_states(early, late, mask), labels, replicas)
        loss = mlm_late + mlm_head
        stats = {"mlm_late": mlm_late.detach(), "mlm_head": mlm_head.detach()}
        if self.params.contrastive:
            half = late.shape[0] // 2
            documents = half if documents is None else documents
            cls = late[:, 0]
            vectors = torch.cat([replicas.gather(cls[:half], documents), replicas.gather(cls[half:], documents)])
            contrastive = span_contrastive_loss(vectors, self.params.temperature)
            loss = loss + self.params.contrastive_weight * contrastive
            stats["contrastive"] = contrastive.detach()
        return loss, stats

    # ------------------------------------------------------------------------------------------ persistence
    def save(self, out_dir: str | os.PathLike, tokenizer=None) -> None:
        """Save the backbone alone, atomically, as a bi-encoder folder (see the module docstring); the head and
        the MLM head are dropped."""
        pooler = getattr(self.encoder, "pooler", None)
        model = BiEncoder(
            self.encoder,
            None,
            pooling=self.pooling,
            projection_dim=None,
            normalize=self.normalize,
            query_max_length=self.query_max_length,
            doc_max_length=self.doc_max_length,
            prompts=self.prompts,
        )
        if pooler is not None:  # BiEncoder drops it; the folder keeps it (module docstring), and so does self
            self.encoder.pooler = pooler
        model.save(out_dir, tokenizer)

    @classmethod
    def create(
        cls, spec, tokenizer, *, params: CondenserSection, seed: int, init_model: str | os.PathLike | None = None
    ) -> Condenser:
        """A Condenser to pre-train, seeded (the same arguments give the same weights).

        The backbone is :func:`hardneg.dense.backbone.build_backbone` of ``spec`` (a :class:`ModelSpec`: the built-in
        BERT or ``spec.name``), or with ``init_model`` the encoder of that folder (another run's model). The MLM
        prediction head is the checkpoint's when its folder holds BertForMaskedLM weights (``cls.predictions.*``),
        else drawn afresh. ``pooling`` and ``normalize`` of the saved bi-encoder are the spec's."""
        from transformers import AutoModel  # transformers: imported only where a model or tokenizer is used

        if init_model is not None:
            torch.manual_seed(seed)  # weights the folder lacks are drawn at random by Hugging Face
            encoder = AutoModel.from_pretrained(init_model)
        else:
            encoder = build_backbone(spec, len(tokenizer), tokenizer.pad_token_id, spec.doc_max_length, seed)
        rows = encoder.get_input_embeddings().num_embeddings
        if len(tokenizer) > rows:
            raise ValueError(f"the tokenizer has {len(tokenizer)} tokens, the model's embeddings {rows}")
        torch.manual_seed(seed + 1)
        model = cls(
            encoder,
            params,
            pooling=spec.pooling,
            normalize=spec.normalize,
            query_max_length=spec.query_max_length,
            doc_max_length=spec.doc_max_length,
            prompts={"query": spec.query_prompt, "doc": spec.doc_prompt},
        )
        source = init_model if init_model is not None else (None if spec.name == BUILTIN else spec.name)
        weights = _mlm_weights(source) if source is not None else None
        if weights is not None and model._load_mlm(weights):
            log.info("MLM prediction head from the checkpoint %s", source)
        else:
            log.info("MLM prediction head drawn afresh (seed %d)", seed + 1)
        return model

    def _load_mlm(self, weights: dict[str, torch.Tensor]) -> bool:
        """Load the checkpoint's MLM head (names relative to ``cls.predictions.``) unless it lacks a weight or one
        has another shape (another vocabulary); the tied decoder weight is the word embeddings already."""
        own = {
            name: value for name, value in self.mlm.predictions.state_dict().items() if not name.startswith("decoder.")
        }
        # old TensorFlow-converted checkpoints name LayerNorm's weights gamma and beta
        renamed = {
            name.replace("LayerNorm.gamma", "LayerNorm.weight").replace("LayerNorm.beta", "LayerNorm.bias"): value
            for name, value in weights.items()
        }
        if any(name not in renamed or renamed[name].shape != value.shape for name, value in own.items()):
            return False
        self.mlm.predictions.load_state_dict({name: renamed[name] for name in own}, strict=False)
        return True


def _mlm_weights(source: str | os.PathLike) -> dict[str, torch.Tensor] | None:
    """The ``cls.predictions.*`` tensors (prefix removed) of the safetensors checkpoint of a local folder or of a
    hub name already in the local cache, or None when it has none. Nothing is downloaded and no pickle read."""
    from safetensors import safe_open  # safetensors (torch): imported only where weights are read or written

    folder = Path(source)
    if folder.is_dir():

        def find(name):
            return folder / name if (folder / name).is_file() else None
    else:
        from huggingface_hub import try_to_load_from_cache  # huggingface_hub: imported only to look up a hub model

        def find(name):
            found = try_to_load_from_cache(str(source), name)
            return Path(found) if isinstance(found, str) else None

    index = find("model.safetensors.index.json")
    if index is not None:  # a sharded checkpoint
        weight_map = json.loads(index.read_text())["weight_map"]
        files = sorted({f for k, f in weight_map.items() if k.startswith(_MLM_PREFIX)})
        paths = [index.parent / f for f in files]
    else:
        single = find("model.safetensors")
        paths = [single] if single is not None else []
    weights = {}
    for path in paths:
        with safe_open(str(path), "pt") as tensors:
            for key in tensors.keys():  # noqa: SIM118 (safetensors' handle is not iterable)
                if key.startswith(_MLM_PREFIX):
                    weights[key[len(_MLM_PREFIX) :]] = tensors.get_tensor(key)
    return weights or None


def new_condenser(
    spec, tokenizer, params: CondenserSection, seed: int, init_model: str | os.PathLike | None = None
) -> Condenser:
    """:meth:`Condenser.create` (the method module's ``new_model``)."""
    return Condenser.create(spec, tokenizer, params=params, seed=seed, init_model=init_model)


def describe(model: Condenser) -> dict:
    return {
        "model": "condenser",
        "parameters": sum(p.numel() for p in model.parameters()),
        "layers": model.num_layers,
        "early_layers": model.early_layers,
        "head_layers": len(model.head),
        "contrastive": model.params.contrastive,
    }


__all__ = [
    "Condenser",
    "IGNORE",
    "describe",
    "new_condenser",
    "span_contrastive_loss",
]
