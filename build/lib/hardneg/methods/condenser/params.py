"""``params.condenser`` as the pre-training reads it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CondenserSection:
    """``params.condenser``: the split of the backbone, the head and the losses."""

    early_layers: int | None
    head_layers: int
    mlm_probability: float
    contrastive: bool
    contrastive_weight: float
    temperature: float
    span_min: float
    span_max: float

    def __post_init__(self):
        # a relation between two keys, which the schema cannot say (``check`` names the config key)
        if self.span_min > self.span_max:
            raise ValueError(f"span_min ({self.span_min}) is larger than span_max ({self.span_max})")
