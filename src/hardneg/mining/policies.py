"""Selection policies: which candidates of a pool (:mod:`hardneg.mining.pool`) become a query's hard negatives.

A :class:`Policy` is a set of filters, each off by default, checked as a config's ``mining`` section or a
``policies`` entry gives it (:data:`POLICY_SCHEMA`); :func:`hardneg.mining.selection.select` applies them to a
CANDIDATES table, in this order, and counts what each removed (the audit reports it per policy):

``depth``
    rank <= depth (a policy mining a shallower top-k than the pool's).
``rank_range``
    low <= rank <= high (1-based, inclusive), e.g. skipping the top ranks, where most false negatives are.
``duplicates``
    with ``exclude_duplicates``, drop documents that duplicate one of the query's judged positives.
``margin``
    NV-Retriever's TopK-MarginPos (Moreira et al. 2024): keep score <= best positive score − margin, in the
    miner's score units.
``relative_margin``
    NV-Retriever's TopK-PercPos: keep score <= best positive score − |best positive score| × relative_margin;
    their recommended setting keeps negatives below 95% of the positive's score, relative_margin 0.05. The
    margin is a share of the score's magnitude, so a larger one filters more whatever the score's sign (as
    sentence-transformers' ``mine_hard_negatives`` computes it; best × (1 − margin) would filter less for a
    negative best score).
``max_score``, ``min_score``
    keep score <= max_score, then score >= min_score: bounds on the candidate's own score, in the miner's score
    units (sentence-transformers' ``mine_hard_negatives`` has both, applied in this order after its margins).
``ce_threshold``
    RocketQA's denoising (Qu et al. 2021): drop candidates a cross-encoder gives a probability of relevance >=
    the threshold.
``ce_margin``
    drop candidates whose cross-encoder probability exceeds the query's best positive's minus the margin.
``keep``
    at most this many per query: the best-ranked (``sampling="top"``) or a seeded uniform sample (``"random"``).

Nulls pass: a row without a best positive score passes the margins, one without a cross-encoder score (or best
positive cross-encoder score) the cross-encoder filters. :func:`hardneg.mining.negatives.mine_hard_negatives` is a
policy with only ``rank_range``, ``margin``, ``relative_margin``, ``max_score``, ``min_score``, ``keep`` and
``sampling``.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from dataclasses import dataclass, fields

import numpy as np

log = logging.getLogger(__name__)

SAMPLING = ("top", "random")  # which `keep` candidates: the best-ranked, or a seeded uniform sample
FILTERS = (
    "depth",
    "rank_range",
    "duplicates",
    "margin",
    "relative_margin",
    "max_score",
    "min_score",
    "ce_threshold",
    "ce_margin",
    "keep",
)


def is_integer(value) -> bool:
    """An int or a NumPy integer, not a bool: what a count, a rank or a seed may be."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def _is_number(value) -> bool:
    return (is_integer(value) or isinstance(value, (float, np.floating))) and math.isfinite(value)


class PolicyValueError(ValueError):
    """A policy key with a value :class:`Policy` refuses; ``key`` names it (the config check names
    ``<section>.<key>``)."""

    def __init__(self, key: str, message: str):
        self.key = key
        super().__init__(message)


@dataclass(frozen=True)
class Policy:
    """A selection policy: the filters :func:`hardneg.mining.selection.select` applies to a candidate pool. Every
    field's default turns its filter off. Checked on construction; ``rank_range`` may be given as a two-element
    list (as YAML gives it) and is kept as a tuple.

    :param depth: keep rank <= depth (at least 1); None: every rank of the pool.
    :param rank_range: (low, high): keep low <= rank <= high, 1-based, ``1 <= low <= high``; None: every rank.
    :param exclude_duplicates: drop candidates whose ``duplicate_of`` is set (they duplicate a judged positive).
        On a pool built without duplicates (the columns all null) nothing is a duplicate and nothing is dropped.
    :param margin: keep score <= best_positive_score − margin, in the miner's score units (non-negative); None:
        no such filter.
    :param relative_margin: keep score <= best_positive_score − |best_positive_score| × relative_margin, in
        [0, 1]: a share of the best positive score's magnitude, so a larger margin filters at least as much
        whatever the score's sign; None: no such filter.
    :param max_score: keep score <= max_score, in the miner's score units (any finite number); None: no such filter.
    :param min_score: keep score >= min_score, in the miner's score units (any finite number, at most
        ``max_score``); None: no such filter.
    :param ce_threshold: drop candidates with ce_score >= ce_threshold, a probability in (0, 1] (0 would drop
        every candidate); None: no such filter.
    :param ce_margin: drop candidates with ce_score > best_positive_ce_score − ce_margin, in [0, 1) (1 would drop
        every candidate scored above 0); None: no such filter.
    :param keep: the most candidates kept per query (at least 1); None: all.
    :param sampling: which ``keep`` candidates: ``"top"`` (the best-ranked) or ``"random"`` (uniform without
        replacement, seeded from the seed and the qid).
    """

    depth: int | None = None
    rank_range: tuple[int, int] | None = None
    exclude_duplicates: bool = False
    margin: float | None = None
    relative_margin: float | None = None
    max_score: float | None = None
    min_score: float | None = None
    ce_threshold: float | None = None
    ce_margin: float | None = None
    keep: int | None = None
    sampling: str = "top"

    def __post_init__(self):
        if self.depth is not None and not (is_integer(self.depth) and self.depth >= 1):
            raise PolicyValueError("depth", f"depth must be an integer of at least 1 (or None), got {self.depth!r}")
        if self.rank_range is not None:
            ranks = self.rank_range
            if not (
                isinstance(ranks, (tuple, list))
                and len(ranks) == 2
                and all(map(is_integer, ranks))
                and 1 <= ranks[0] <= ranks[1]
            ):
                raise PolicyValueError(
                    "rank_range", f"rank_range must be (low, high), integers with 1 <= low <= high, got {ranks!r}"
                )
            object.__setattr__(self, "rank_range", (int(ranks[0]), int(ranks[1])))
        if not isinstance(self.exclude_duplicates, (bool, np.bool_)):
            raise PolicyValueError(
                "exclude_duplicates", f"exclude_duplicates must be true or false, got {self.exclude_duplicates!r}"
            )
        for name, high in (("margin", math.inf), ("relative_margin", 1.0), ("ce_threshold", 1.0), ("ce_margin", 1.0)):
            value = getattr(self, name)
            if value is not None and not (_is_number(value) and 0 <= value <= high):
                bounds = "non-negative" if high == math.inf else f"in [0, {high:g}]"
                raise PolicyValueError(name, f"{name} must be a number {bounds} (or None), got {value!r}")
        for name in ("max_score", "min_score"):
            value = getattr(self, name)
            if value is not None and not _is_number(value):
                raise PolicyValueError(name, f"{name} must be a finite number (or None), got {value!r}")
        if self.min_score is not None and self.max_score is not None and self.min_score > self.max_score:
            raise PolicyValueError(
                "min_score",
                f"min_score {self.min_score:g} is above max_score "
                f"{self.max_score:g}: no score lies between them; give a "
                f"min_score at most max_score",
            )
        if self.ce_threshold == 0:
            raise PolicyValueError(
                "ce_threshold",
                "ce_threshold 0 drops every candidate (a cross-encoder's "
                "probability is at least 0): give a probability in (0, 1], e.g. "
                "0.9, or leave ce_threshold out",
            )
        if self.ce_margin == 1:
            raise PolicyValueError(
                "ce_margin",
                "ce_margin 1 drops every candidate the cross-encoder scores above 0 "
                "(no probability exceeds the best positive's by 1): give a margin in "
                "[0, 1), or leave ce_margin out",
            )
        if self.keep is not None and not (is_integer(self.keep) and self.keep >= 1):
            raise PolicyValueError(
                "keep", f"keep must be an integer of at least 1 (or None for all), got {self.keep!r}"
            )
        if self.sampling not in SAMPLING:
            raise PolicyValueError("sampling", f"sampling must be one of {', '.join(SAMPLING)}, got {self.sampling!r}")

    @classmethod
    def from_params(cls, params: Mapping) -> Policy:
        """The policy of a config mapping with the keys of :data:`POLICY_SCHEMA` (a missing key takes its
        default).

        :param params: the mapping, e.g. a policy section of a config; ``rank_range`` may be a list.
        :returns: the Policy.
        :raises ValueError: an unknown key, or a value out of its range (a :class:`PolicyValueError` naming the
            key; see :class:`Policy`).
        """
        known = [f.name for f in fields(cls)]
        unknown = sorted(set(params) - set(known))
        if unknown:
            raise ValueError(f"unknown policy key(s) {', '.join(unknown)}; the keys are {', '.join(known)}")
        return cls(**params)


POLICY_SCHEMA: dict = {
    "type": "object",
    "additionalProperties": False,
    "default": {},
    "description": "a selection policy: which candidates of the pool (results/<run>/candidates.parquet) become a "
    "query's hard negatives; filters apply in the order of the keys, each off by default",
    "properties": {
        "depth": {
            "type": ["integer", "null"],
            "minimum": 1,
            "default": None,
            "description": "keep candidates ranked at most this deep by the miner (null: the pool's depth)",
        },
        "rank_range": {
            "type": ["array", "null"],
            "items": {"type": "integer", "minimum": 1},
            "minItems": 2,
            "maxItems": 2,
            "default": None,
            "description": "keep only ranks in [first, last] (1-based, both included; first <= last); null: every rank",
        },
        "exclude_duplicates": {
            "type": "boolean",
            "default": False,
            "description": "drop candidates that duplicate a judged positive of the query "
            "(exact or near duplicates; nothing is dropped from a pool built "
            "without duplicate detection)",
        },
        "margin": {
            "type": ["number", "null"],
            "minimum": 0,
            "default": None,
            "description": "TopK-MarginPos: keep candidates scoring at most best positive - margin, in the "
            "miner's score units (null: no such filter)",
        },
        "relative_margin": {
            "type": ["number", "null"],
            "minimum": 0,
            "maximum": 1,
            "default": None,
            "description": "TopK-PercPos: keep candidates scoring at most best positive - "
            "|best positive| x relative_margin (0.05: 5% of the best positive "
            "score's magnitude below it, whatever its sign; null: no such "
            "filter)",
        },
        "max_score": {
            "type": ["number", "null"],
            "default": None,
            "description": "keep candidates scoring at most this under the miner, in its score units "
            "(null: no such filter)",
        },
        "min_score": {
            "type": ["number", "null"],
            "default": None,
            "description": "keep candidates scoring at least this under the miner, in its score units, "
            "at most max_score (null: no such filter)",
        },
        "ce_threshold": {
            "type": ["number", "null"],
            "minimum": 0,
            "maximum": 1,
            "default": None,
            "description": "drop candidates the cross-encoder gives a probability of relevance at or "
            "above this, greater than 0 (RocketQA denoising; null: no such filter)",
        },
        "ce_margin": {
            "type": ["number", "null"],
            "minimum": 0,
            "maximum": 1,
            "default": None,
            "description": "drop candidates whose cross-encoder probability exceeds the best positive's "
            "minus this, less than 1 (null: no such filter)",
        },
        "keep": {
            "type": ["integer", "null"],
            "minimum": 1,
            "default": None,
            "description": "candidates kept per query (null: all)",
        },
        "sampling": {
            "enum": list(SAMPLING),
            "default": "top",
            "description": "which `keep` candidates: the best-ranked (top) or a uniform sample seeded by "
            "the seed and the query (random)",
        },
    },
}
