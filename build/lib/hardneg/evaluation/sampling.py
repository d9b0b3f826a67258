"""Seeded samples of ids: the queries a fusion weight is tuned on, the queries a hard-negative viewer shows."""

from __future__ import annotations

import numpy as np


def sample_ids(ids: list[str], count: int, seed: int) -> list[str]:
    """``count`` of ``ids`` drawn without replacement from a generator seeded with ``seed`` (all of them when there
    are no more), in their order in ``ids``."""
    if count >= len(ids):
        return list(ids)
    picked = np.sort(np.random.default_rng(seed).choice(len(ids), size=count, replace=False))
    return [ids[i] for i in picked]
