"""The modules a sentence-transformers folder has after its pooling, as torch modules: ``Dense`` (a linear layer
and its activation) and ``LayerNorm``, named as sentence-transformers names their weights, built from the layers
:mod:`hardneg.dense.st_folder` reads (JSON only) and given the folder's pretrained weights. The bi-encoder
(:mod:`hardneg.dense.model`) applies them to the pooled vector."""

from __future__ import annotations

import importlib

import torch
from torch import nn

from hardneg.dense import st_folder
from hardneg.errors import ConfigError


def _activation(path: str) -> nn.Module:
    """A ``torch.nn`` module of no arguments named by its class path (a sentence-transformers ``Dense``
    module's ``activation_function``, e.g. ``torch.nn.modules.activation.Tanh``)."""
    module, _, name = path.rpartition(".")
    kind = getattr(importlib.import_module(module), name, None) if path.startswith("torch.nn.") else None
    if not (isinstance(kind, type) and issubclass(kind, nn.Module)):
        raise ValueError(f"{path!r} is not a torch.nn module class")
    return kind()


class DenseLayer(nn.Module):
    """sentence-transformers' ``Dense`` module: a linear layer, then its activation (its weights are named as
    that module names them, ``linear.weight`` and ``linear.bias``)."""

    def __init__(self, in_features: int, out_features: int, bias: bool, activation: str):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features, bias=bias)
        self.activation = _activation(activation)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.activation(self.linear(x))


class NormLayer(nn.Module):
    """sentence-transformers' ``LayerNorm`` module (its weights named ``norm.weight`` and ``norm.bias``)."""

    def __init__(self, dimension: int):
        super().__init__()
        self.norm = nn.LayerNorm(dimension)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(x)


def build_layers(layers: list[dict]) -> nn.Sequential | None:
    """The modules after the pooling of a sentence-transformers folder (each a dict of
    :meth:`hardneg.dense.st_folder.Layer.to_json`), weights drawn at random; None when there are none."""
    if not layers:
        return None
    return nn.Sequential(
        *(
            DenseLayer(layer["in_features"], layer["out_features"], layer["bias"], layer["activation"])
            if layer["kind"] == "dense"
            else NormLayer(layer["out_features"])
            for layer in layers
        )
    )


def load_layer_weights(
    folder: st_folder.SentenceTransformerFolder, layers: list[st_folder.Layer], modules: list[nn.Sequential | None]
) -> None:
    """Give each of ``modules`` (a :func:`build_layers` of ``layers``) the weights ``folder`` holds for them
    (each layer's ``model.safetensors``, else ``pytorch_model.bin``)."""
    from safetensors.torch import load_file  # safetensors (torch): imported only where weights are read or written

    for index, layer in enumerate(layers):
        weights = None
        for name in ("model.safetensors", "pytorch_model.bin"):
            path = st_folder.folder_file(folder, f"{layer.path}/{name}")
            if path is not None:
                weights = (
                    load_file(path)
                    if name.endswith(".safetensors")
                    else torch.load(path, map_location="cpu", weights_only=True)
                )
                break
        if weights is None:
            raise ConfigError(
                "params.model.name",
                f"{folder.location}: module {layer.path!r} has no weights (model.safetensors or pytorch_model.bin)",
            )
        for sequence in modules:
            if sequence is not None:
                sequence[index].load_state_dict(weights)
