"""Zero-shot: a pretrained (or freshly built) encoder evaluated as it is, with no training."""

from hardneg.methods.registry import DENSE, Method

METHOD = Method(
    name="zeroshot", kind=DENSE, summary="an encoder evaluated without training", training_sections=("model",)
)
