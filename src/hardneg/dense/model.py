"""The bi-encoder: any Hugging Face encoder (``AutoModel``) for queries and documents, pooled to one vector.

* pooling: ``cls`` (the first token), ``mean`` (over real tokens), ``max``, ``lasttoken`` (the last real
  token), ``weightedmean`` (weights 1, 2, 3... by position) or ``mean_sqrt_len_tokens`` (the sum over the square
  root of the count), each as sentence-transformers' ``Pooling`` computes it; with ``include_prompt`` false the
  prompt's tokens (its [CLS] included) are left out of the pooling, as that module leaves them out;
* the layers a sentence-transformers folder has after its pooling (``Dense`` with its activation, ``LayerNorm``:
  read by :mod:`hardneg.dense.st_folder`, built by :mod:`hardneg.dense.st_modules`), with their pretrained weights;
* an optional head: a linear projection to ``projection_dim`` followed by LayerNorm;
* optional L2 normalisation (``normalize``), so the inner product is the cosine (as sentence-transformers
  models such as all-MiniLM-L6-v2 were trained);
* optional ColBERT input markers (``markers``, :mod:`hardneg.dense.markers`): ``[Q]``/``[D]`` after ``[CLS]``
  and queries padded with ``[MASK]`` to a fixed length; mean pooling then skips ``[CLS]`` and the marker (the
  TCT-ColBERT student);
* query and document encoders shared (default) or separate;
* relevance is the inner product of the two vectors.

Saved layout (``save``): the query encoder is a standard Hugging Face model folder at the root, so
``AutoModel.from_pretrained(folder)`` reloads it, together with the tokenizer; a separate document encoder
lives in ``doc_encoder/`` (with a copy of the tokenizer); ``hardneg.json`` records pooling, head, markers and
the maximum lengths, and the folder's layers and prompts when there are some; ``head.safetensors`` the head's and
the layers' weights. The same folder is also a sentence-transformers
model (:mod:`hardneg.dense.st_layout`): ``SentenceTransformer(folder).encode_query`` / ``encode_document`` give
the vectors hardneg gives.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING

import torch
from torch import nn
from torch.utils.checkpoint import checkpoint

from hardneg.dense import st_folder, st_layout
from hardneg.dense.backbone import ModelSpec, build_backbone, save_encoder, warn_beyond_folder_length
from hardneg.dense.markers import SKIP, Markers, add_markers
from hardneg.dense.st_modules import build_layers, load_layer_weights
from hardneg.io.atomic import atomic_dir

if TYPE_CHECKING:
    from transformers import PreTrainedModel


class Head(nn.Module):
    def __init__(self, dim_in: int, dim_out: int):
        super().__init__()
        self.linear = nn.Linear(dim_in, dim_out)
        self.norm = nn.LayerNorm(dim_out)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(self.linear(x))


def prompt_length(tokenizer, prompt: str) -> int:
    """The tokens of ``prompt`` that sentence-transformers leaves out of the pooling when its ``Pooling`` has
    ``include_prompt`` false: the prompt tokenized alone, less a closing special token ([SEP]); 0 for no
    prompt."""
    if not prompt:
        return 0
    ids = tokenizer(prompt)["input_ids"]
    return len(ids) - (1 if ids and ids[-1] in set(tokenizer.all_special_ids) else 0)


class BiEncoder(nn.Module):
    """Queries and documents to vectors (see the module docstring). ``query_max_length`` / ``doc_max_length``: the
    lengths of the tokenized cache the model reads (texts are cut there before they reach it,
    :mod:`hardneg.dense.tokenized`), None when unknown; saved with the model for the sentence-transformers layout,
    which tokenizes texts itself.

    ``layers``: a sentence-transformers folder's modules after its pooling (dicts of
    :meth:`hardneg.dense.st_folder.Layer.to_json`; their weights drawn at random here). ``prompts``: ``{"query":
    ..., "doc": ...}``, the texts the
    tokenized cache put before every query and document (the model reads them as tokens; they are kept to be
    saved); ``prompt_lengths`` their tokens that ``include_prompt`` false leaves out of the pooling
    (:func:`prompt_length`)."""

    def __init__(
        self,
        query_encoder: PreTrainedModel,
        doc_encoder: PreTrainedModel | None,
        *,
        pooling: str = "cls",
        projection_dim: int | None = None,
        normalize: bool = False,
        markers: Markers | None = None,
        query_max_length: int | None = None,
        doc_max_length: int | None = None,
        layers: list[dict] | None = None,
        include_prompt: bool = True,
        prompts: dict | None = None,
        prompt_lengths: dict | None = None,
    ):
        super().__init__()
        if pooling not in st_folder.POOLING_MODES:
            raise ValueError(f"unknown pooling {pooling!r}")
        for encoder in (query_encoder, doc_encoder):
            # The bi-encoder pools the hidden states itself: a backbone's own pooler (BERT's) is never read, and
            # a checkpoint without one would get a randomly initialised copy saved with the model.
            if encoder is not None and isinstance(getattr(encoder, "pooler", None), nn.Module):
                encoder.pooler = None  # type: ignore[assignment]  # torch types __setattr__ without None, an empty slot
        self.query_encoder = query_encoder
        self.doc_encoder = doc_encoder  # None: shared with the query encoder
        self.pooling = pooling
        self.projection_dim = projection_dim
        self.normalize = normalize
        self.markers = markers
        self.query_max_length = query_max_length
        self.doc_max_length = doc_max_length
        self.layers = [dict(layer) for layer in layers or []]
        self.include_prompt = include_prompt
        self.prompts = {"query": "", "doc": "", **(prompts or {})}
        self.prompt_lengths = {"query": 0, "doc": 0, **(prompt_lengths or {})}
        self.query_layers = build_layers(self.layers)
        self.doc_layers = build_layers(self.layers) if doc_encoder is not None else None
        pooled = self.layers[-1]["out_features"] if self.layers else query_encoder.config.hidden_size
        self.query_head = Head(pooled, projection_dim) if projection_dim else None
        self.doc_head = Head(pooled, projection_dim) if projection_dim and doc_encoder is not None else None

    @property
    def shared(self) -> bool:
        return self.doc_encoder is None

    @property
    def dim(self) -> int:
        return self.projection_dim or (
            self.layers[-1]["out_features"] if self.layers else self.query_encoder.config.hidden_size
        )

    def _pool(self, hidden: torch.Tensor, mask: torch.Tensor, side: str = "query") -> torch.Tensor:
        """One vector per row of ``hidden`` [batch, tokens, dim] (its real tokens ``mask``), as
        sentence-transformers' ``Pooling`` of the same mode computes it on right-padded rows."""
        skip = 0 if self.include_prompt else self.prompt_lengths[side]
        if skip:  # the prompt's positions, [CLS] included, out of every mode (include_prompt false)
            mask = mask.clone()
            mask[:, :skip] = 0
        if self.pooling == "cls":
            return hidden[:, 0] if not skip else hidden[torch.arange(len(hidden)), mask.argmax(1)]
        weights = mask.unsqueeze(-1).to(hidden.dtype)
        if self.pooling == "mean":
            if self.markers is not None:  # TCT-ColBERT: the mean over the tokens after [CLS] and the marker
                weights[:, :SKIP] = 0
            return (hidden * weights).sum(1) / weights.sum(1).clamp(min=1.0)
        if self.pooling == "mean_sqrt_len_tokens":
            return (hidden * weights).sum(1) / weights.sum(1).clamp(min=1e-9).sqrt()
        if self.pooling == "max":
            return hidden.masked_fill(weights == 0, float("-inf")).max(1).values
        if self.pooling == "weightedmean":  # position weights 1, 2, 3... from the first token
            weights = weights * torch.arange(1, hidden.shape[1] + 1, device=hidden.device, dtype=hidden.dtype).view(
                1, -1, 1
            )
            return (hidden * weights).sum(1) / weights.sum(1).clamp(min=1e-9)
        # lasttoken: the last real token (the first position when none is left)
        found, from_end = mask.flip(1).max(1)
        last = hidden.shape[1] - 1 - torch.where(found == 0, hidden.shape[1] - 1, from_end)
        return (hidden * weights)[torch.arange(len(hidden)), last]

    def encode(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, side: str) -> torch.Tensor:
        """Vectors [batch, dim] of queries (``side="query"``) or documents (``side="doc"``)."""
        encoder = self.query_encoder if side == "query" or self.doc_encoder is None else self.doc_encoder
        head = self.query_head if side == "query" or self.doc_head is None else self.doc_head
        if self.markers is not None:
            input_ids, attention_mask = self.markers.apply(
                input_ids, attention_mask, side, encoder.config.max_position_embeddings
            )
        layers = self.query_layers if side == "query" or self.doc_layers is None else self.doc_layers
        hidden = encoder(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        pooled = self._pool(hidden, attention_mask, "query" if side == "query" else "doc")
        if layers is not None:
            pooled = layers(pooled)
        vector = head(pooled) if head is not None else pooled
        return nn.functional.normalize(vector, dim=-1) if self.normalize else vector

    def encode_batch(self, batch, side: str) -> torch.Tensor:
        """Vectors of a token batch: a dict (``input_ids`` + ``attention_mask``, one padded block) or a
        :class:`hardneg.dense.tokenized.Chunked` batch (each chunk encoded on its own, the vectors returned in
        the order of the batch's rows)."""
        if isinstance(batch, dict):
            return self.encode(batch["input_ids"], batch["attention_mask"], side)
        if batch.recompute and torch.is_grad_enabled():
            # Gradient caching (GradCache, Gao et al. 2021): each chunk's forward keeps its inputs and its vectors
            # only; the backward pass re-runs one chunk at a time, with the random state of its first run (the
            # same dropout masks), and sends the loss's gradient of the chunk's vectors through it. The gradient
            # is the step's without caching; the memory is one chunk's activations, not the batch's.
            vectors = [
                checkpoint(
                    self.encode,
                    part["input_ids"],
                    part["attention_mask"],
                    side,
                    use_reentrant=False,
                    preserve_rng_state=True,
                )
                for part in batch.parts
            ]
        else:
            vectors = [self.encode(part["input_ids"], part["attention_mask"], side) for part in batch.parts]
        return torch.cat(vectors)[batch.inverse]

    def encode_queries(self, batch) -> torch.Tensor:
        return self.encode_batch(batch, "query")

    def encode_docs(self, batch) -> torch.Tensor:
        return self.encode_batch(batch, "doc")

    def forward(self, queries=None, docs=None):
        """Encode a query batch and a document batch (each a dict of ``input_ids`` + ``attention_mask``, or
        :class:`hardneg.dense.tokenized.Chunked`) in one call:
        ``(query vectors, doc vectors)``, ``None`` for a batch not given. Queries are encoded first.

        Training calls the model this way, once per step, because ``DistributedDataParallel`` needs exactly
        one ``forward`` per backward to hook its gradient all-reduce; on the plain model it is the same as
        ``encode_queries`` followed by ``encode_docs``.
        """
        q = self.encode_queries(queries) if queries is not None else None
        d = self.encode_docs(docs) if docs is not None else None
        return q, d

    # ------------------------------------------------------------------------------------------ persistence
    def save(self, out_dir: str | os.PathLike, tokenizer=None) -> None:
        """Save atomically (see the module docstring for the layout). With the ``tokenizer``, the folder is also a
        sentence-transformers model (:func:`hardneg.dense.st_layout.write_layout`); the tokenizer saved is
        :func:`hardneg.dense.st_layout.prompt_tokenizer`'s (the same token ids)."""
        from safetensors.torch import save_file  # safetensors (torch): imported only where weights are read or written

        if tokenizer is not None:
            tokenizer = st_layout.prompt_tokenizer(tokenizer, self.markers)
        with atomic_dir(out_dir) as tmp:
            save_encoder(self.query_encoder, tmp)
            if tokenizer is not None:
                tokenizer.save_pretrained(tmp)
            if self.doc_encoder is not None:
                save_encoder(self.doc_encoder, tmp / "doc_encoder")
                if tokenizer is not None:  # sentence-transformers loads each encoder with a tokenizer beside it
                    tokenizer.save_pretrained(tmp / "doc_encoder")
            heads = {}
            for name, head in self._weighted_parts():
                heads.update({f"{name}.{k}": v.detach().cpu().contiguous() for k, v in head.state_dict().items()})
            if heads:
                save_file(heads, str(tmp / "head.safetensors"))
            meta: dict = {
                "pooling": self.pooling,
                "projection_dim": self.projection_dim,
                "shared": self.shared,
                "normalize": self.normalize,
                "dim": self.dim,
                "markers": None if self.markers is None else self.markers.to_json(),
                "query_max_length": self.query_max_length,
                "doc_max_length": self.doc_max_length,
            }
            # a sentence-transformers folder's settings, written only where a model has them
            if self.layers:
                meta["layers"] = self.layers
            if not self.include_prompt:
                meta["include_prompt"] = False
            if any(self.prompts.values()):
                meta["prompts"], meta["prompt_lengths"] = self.prompts, self.prompt_lengths
            (tmp / "hardneg.json").write_text(json.dumps(meta, indent=2) + "\n")
            if tokenizer is not None:
                st_layout.write_layout(tmp, self, tokenizer)

    @classmethod
    def load(cls, model_dir: str | os.PathLike) -> BiEncoder:
        from safetensors.torch import load_file  # safetensors (torch): imported only where weights are read or written
        from transformers import AutoModel  # transformers: imported only where a model or tokenizer is used

        model_dir = Path(model_dir)
        meta = json.loads((model_dir / "hardneg.json").read_text())
        query_encoder = AutoModel.from_pretrained(model_dir)
        doc_encoder = None if meta["shared"] else AutoModel.from_pretrained(model_dir / "doc_encoder")
        model = cls(
            query_encoder,
            doc_encoder,
            pooling=meta["pooling"],
            projection_dim=meta["projection_dim"],
            normalize=meta.get("normalize", False),
            markers=Markers.from_json(meta.get("markers")),
            query_max_length=meta.get("query_max_length"),
            doc_max_length=meta.get("doc_max_length"),
            layers=meta.get("layers"),
            include_prompt=meta.get("include_prompt", True),
            prompts=meta.get("prompts"),
            prompt_lengths=meta.get("prompt_lengths"),
        )
        if (model_dir / "head.safetensors").exists():
            weights = load_file(str(model_dir / "head.safetensors"))
            for name, part in model._weighted_parts():
                part.load_state_dict({k.split(".", 1)[1]: v for k, v in weights.items() if k.split(".", 1)[0] == name})
        return model

    def _weighted_parts(self) -> list[tuple[str, nn.Module]]:
        """The parts after the pooling that have weights, by the name their weights have in ``head.safetensors``."""
        parts = (
            ("query_head", self.query_head),
            ("doc_head", self.doc_head),
            ("query_layers", self.query_layers),
            ("doc_layers", self.doc_layers),
        )
        return [(name, part) for name, part in parts if part is not None]

    @classmethod
    def create(
        cls, spec: ModelSpec, *, vocab_size: int, pad_token_id: int, max_length: int, seed: int, tokenizer=None
    ) -> BiEncoder:
        """A fresh bi-encoder from a spec (seeded, so the same spec and seed give the same weights). With
        ``spec.markers``, ``tokenizer`` is needed and may gain the marker tokens (:func:`add_markers`): save it
        with the model."""
        if spec.markers and tokenizer is None:
            raise ValueError("a model with markers (params.model.markers) is created with its tokenizer")
        query_encoder = build_backbone(spec, vocab_size, pad_token_id, max_length, seed)
        doc_encoder = None if spec.shared else build_backbone(spec, vocab_size, pad_token_id, max_length, seed + 1)
        markers = None
        if spec.markers:
            markers = add_markers(
                tokenizer, query_encoder, spec.query_max_length + 1, seed, augment=spec.query_augmentation
            )
            if doc_encoder is not None:
                add_markers(tokenizer, doc_encoder, spec.query_max_length + 1, seed + 1)
        folder = st_folder.model_folder(spec.name)
        layers = folder.layers() if folder is not None else []
        include_prompt = folder.include_prompt if folder is not None else True
        prompts = {"query": spec.query_prompt, "doc": spec.doc_prompt}
        lengths = None
        if not include_prompt and any(prompts.values()):
            if tokenizer is None:
                raise ValueError("a model leaving its prompts out of the pooling is created with its tokenizer")
            lengths = {side: prompt_length(tokenizer, prompt) for side, prompt in prompts.items()}
        warn_beyond_folder_length(spec, folder)
        torch.manual_seed(seed + 2)
        model = cls(
            query_encoder,
            doc_encoder,
            pooling=spec.pooling,
            projection_dim=spec.projection_dim,
            normalize=spec.normalize,
            markers=markers,
            query_max_length=spec.query_max_length,
            doc_max_length=spec.doc_max_length,
            layers=[layer.to_json() for layer in layers],
            include_prompt=include_prompt,
            prompts=prompts,
            prompt_lengths=lengths,
        )
        if folder is not None and layers:
            load_layer_weights(folder, layers, [model.query_layers, model.doc_layers])
        return model

    @classmethod
    def from_encoder(cls, model_dir: str | os.PathLike, spec: ModelSpec, *, seed: int) -> BiEncoder:
        """A bi-encoder of ``spec`` (pooling, head, normalisation) over the Hugging Face encoder saved at
        ``model_dir`` (shared by queries and documents), with the markers its folder records (``colbert.json``
        or ``hardneg.json``) when ``spec.markers``: how a TCT student starts from its ColBERT teacher's weights."""
        from transformers import AutoModel  # transformers: imported only where a model or tokenizer is used

        model_dir = Path(model_dir)
        meta: dict = next(
            (
                json.loads((model_dir / name).read_text())
                for name in ("colbert.json", "hardneg.json")
                if (model_dir / name).exists()
            ),
            {},
        )
        encoder = AutoModel.from_pretrained(model_dir)
        torch.manual_seed(seed + 2)
        return cls(
            encoder,
            None,
            pooling=spec.pooling,
            projection_dim=spec.projection_dim,
            normalize=spec.normalize,
            markers=Markers.from_json(meta.get("markers")) if spec.markers else None,
            query_max_length=spec.query_max_length,
            doc_max_length=spec.doc_max_length,
            prompts={"query": spec.query_prompt, "doc": spec.doc_prompt},
        )


def describe(model: nn.Module) -> dict:
    if not isinstance(model, BiEncoder):
        return {"model": type(model).__name__, "parameters": sum(p.numel() for p in model.parameters())}
    facts = {
        "parameters": sum(p.numel() for p in model.parameters()),
        "dim": model.dim,
        "shared": model.shared,
        "pooling": model.pooling,
        "projection_dim": model.projection_dim,
        "normalize": model.normalize,
        "markers": model.markers is not None,
    }
    if model.layers:
        facts["layers"] = [layer["kind"] for layer in model.layers]
    if any(model.prompts.values()):
        facts["prompts"] = model.prompts
    return facts


__all__ = ["BiEncoder", "describe"]
