"""Fusion of rankings: the dense–sparse hybrid of TCT-ColBERT, reciprocal rank fusion, and the tuning of a fusion
weight α on queries that are never evaluated.

The hybrid is that of TCT-ColBERT (Lin, Yang and Lin, RepL4NLP 2021, §4.3), as Pyserini's ``HybridSearcher``
computes it for one query: the top ``depth`` documents of the sparse ranking and of the dense ranking are pooled; a
document missing from one list gets that list's minimum score for the query; the fused score is
``α·sparse + dense`` (``sparse + α·dense`` with ``weight_on_dense``), optionally after each list's scores are
centred and scaled per query. Here it is computed over whole ranking tables at once (Arrow joins and NumPy, no loop
over queries); ``tests/unit/fusion/test_fusion.py`` checks it against hand-computed scores and
``tests/integration/test_pyserini_hybrid.py`` against Pyserini's own function. Reciprocal rank fusion is
Pyserini's (``pyserini.fusion.reciprocal_rank_fusion``; Cormack, Clarke and Büttcher, SIGIR 2009): a document's
score is Σ 1/(rrf_k + rank) over the rankings that rank it within ``depth``.

Every fused ranking keeps each query's top ``k`` by score, as stored (float32, the RANKING artifact's type), ties
broken by docid (ascending), ranks 1, 2, ...

Tuning: every α of a grid fuses the rankings of a seeded sample of judged queries of a split that is not
evaluated (``tune.split``: by default the split the dataset holds out of its training split, ``dev_from_train``,
else the training split), each fused ranking is evaluated with one measure
(ir-measures, :func:`hardneg.evaluation.metrics.evaluate`), and the best α is kept (the smallest of equal values).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hardneg.datasets.splits import TRAIN, held_out_split
from hardneg.evaluation.metrics import evaluate
from hardneg.evaluation.sampling import sample_ids
from hardneg.io import artifacts

log = logging.getLogger(__name__)

# The default grid of α. α·sparse + dense mixes raw scores: BM25's are ~5-40, a normalised dense model's cosines lie
# in [-1, 1] and the papers' unnormalised inner products spread over a few units to tens, so the useful α spans
# orders of magnitude (Pyserini's TCT-ColBERT hybrid on MS MARCO uses about 0.1); α = 0 is the dense ranking alone.
DEFAULT_ALPHA_GRID = [0.0, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0]
# A weight tuned on fewer judged queries than this is warned about (tune.min_queries' default): on a few dozen
# queries the grid's values differ by chance more than by α.
MIN_TUNING_QUERIES = 50


@dataclass(frozen=True)
class TuneParams:
    split: str | None  # null in a config: resolved when the config is checked (default_tune_split)
    queries: int
    measure: str
    min_queries: int


# The keys of a fusion method with a weight α (hardneg.methods.Method: a 'tune' section needs 'alpha' and
# 'alpha_grid'); the method's dataclass has the fields alpha, alpha_grid and tune (TuneParams).
WEIGHT_SCHEMA = {
    "alpha": {
        "type": ["number", "null"],
        "minimum": 0,
        "default": None,
        "description": "the weight α; null: tuned over alpha_grid on queries of tune.split "
        "(results/<run>/fusion_tuning.json)",
    },
    "alpha_grid": {
        "type": "array",
        "items": {"type": "number", "minimum": 0},
        "minItems": 1,
        "uniqueItems": True,
        "default": DEFAULT_ALPHA_GRID,
        "description": "the values of α tried when alpha is null. Scores are mixed raw (unless normalised): BM25 "
        "scores are ~5-40, a normalised dense model's cosines lie in [-1, 1], the papers' "
        "unnormalised inner products spread over a few units, so useful values span orders of "
        "magnitude (Pyserini's TCT-ColBERT hybrid on MS MARCO: about 0.1); 0 is one ranking alone",
    },
    "tune": {
        "type": "object",
        "additionalProperties": False,
        "default": {},
        "description": "the tuning of alpha (when alpha is null): never on an evaluated split",
        "properties": {
            "split": {
                "anyOf": [{"$ref": "#/$defs/name"}, {"type": "null"}],
                "default": None,
                "description": "the split whose queries α is tuned on; never evaluation.split or one of "
                "evaluation.extra_splits. null: the split the dataset holds out of its "
                "training split (its dev_from_train), else train",
            },
            "queries": {
                "type": "integer",
                "minimum": 1,
                "default": 1000,
                "description": "judged queries sampled with the run's seed (all when there are fewer)",
            },
            "measure": {
                "type": "string",
                "default": "RR@10",
                "description": "the ir-measures measure maximised (RR = MRR)",
            },
            "min_queries": {
                "type": "integer",
                "minimum": 1,
                "default": MIN_TUNING_QUERIES,
                "description": "a weight tuned on fewer judged queries than this is warned about, by "
                "check-config and by the tuning job: on a few dozen queries the grid's "
                "values differ by chance more than by α (reciprocal rank fusion, "
                "method rrf, tunes nothing)",
            },
        },
    },
}


def default_tune_split(dataset: dict) -> str:
    """The split α is tuned on when a run's ``tune.split`` is null: the split ``dataset`` (a dataset entry) holds
    out of its training split (``dev_from_train``: never trained on), else the training split."""
    return held_out_split(dataset) or TRAIN


# ------------------------------------------------------------------------------------------------ rankings
def _top(ranking: pa.Table, depth: int) -> pa.Table:
    """qid, docid and score (float64) of the documents a ranking ranks 1 to ``depth`` for each query."""
    top = ranking.filter(pc.less_equal(ranking["rank"], depth))
    return pa.table({"qid": top["qid"], "docid": top["docid"], "score": pc.cast(top["score"], pa.float64())})


def ranked(qid, docid, score: np.ndarray, k: int) -> pa.Table:
    """A RANKING table of each query's ``k`` best documents by ``score`` (rounded to float32, as stored), ties broken
    by docid (ascending), ranked from 1. ``qid`` and ``docid`` are string arrays aligned with ``score``."""
    table = pa.table({"qid": qid, "docid": docid, "score": pa.array(np.asarray(score, dtype=np.float32))})
    table = table.sort_by([("qid", "ascending"), ("score", "descending"), ("docid", "ascending")])
    qids, n = table["qid"].combine_chunks(), table.num_rows
    # in qid order a query's rows start where the qid changes
    changes = pc.not_equal(qids.slice(1), qids.slice(0, max(n - 1, 0))).to_numpy(zero_copy_only=False)
    starts = np.flatnonzero(np.r_[n > 0, changes])
    rank = np.arange(n) - np.repeat(starts, np.diff(np.r_[starts, n])) + 1
    table = table.append_column("rank", pa.array(rank.astype(np.int32))).filter(pa.array(rank <= k))
    return table.select(artifacts.RANKING.schema.names).cast(artifacts.RANKING.schema)


def _list_scores(pooled: pa.Table, top: pa.Table, column: str, normalization: bool) -> np.ndarray:
    """One list's score of every pooled (qid, docid) row: its own, else the list's minimum for the query;
    centred on the middle of the query's range and divided by its width when ``normalization``. A query the list
    has no document for counts as a range of 0 to 1 (Pyserini's convention); a range of width 0 gives 0."""
    bounds = top.group_by("qid").aggregate([("score", "min"), ("score", "max")])
    # a query absent from the list points past its bounds, at the range 0 to 1
    rows = pc.fill_null(pc.index_in(pooled["qid"], value_set=bounds["qid"]), len(bounds)).to_numpy()
    low = np.append(bounds["score_min"].to_numpy(), 0.0)[rows]
    high = np.append(bounds["score_max"].to_numpy(), 1.0)[rows]
    score = pc.fill_null(pooled[column], np.nan).to_numpy()
    score = np.where(np.isnan(score), low, score)
    if normalization:
        width = high - low
        score = (score - (low + high) / 2) / np.where(width > 0, width, 1.0)
    return score


def hybrid(
    sparse: pa.Table, dense: pa.Table, alpha: float, *, depth: int, k: int, normalization: bool, weight_on_dense: bool
) -> pa.Table:
    """The dense–sparse hybrid of TCT-ColBERT (§4.3) of two RANKING tables.

    Per query, the documents ranked 1 to ``depth`` by ``sparse`` and by ``dense`` are pooled; a document missing
    from one list gets that list's minimum score for the query (0 when the list has no document for the query).
    With ``normalization`` each list's scores s become (s − (min + max)/2) / (max − min) over the query's list
    (Pyserini's ``HybridSearcher``; a list whose scores are all equal gives 0). The fused score is
    α·sparse + dense, or sparse + α·dense with ``weight_on_dense``; scores are in the input rankings' units, mixed raw
    unless normalised.

    :param sparse: the sparse RANKING table (e.g. BM25): ``qid``, ``docid``, ``rank`` (1-based), ``score``.
    :param dense: the dense RANKING table (scores: inner products).
    :param alpha: the weight α, a finite number.
    :param depth: the ranks 1 to ``depth`` of each ranking that are pooled.
    :param k: documents kept per query in the fused ranking.
    :param normalization: centre and scale each list's scores per query before mixing.
    :param weight_on_dense: weigh the dense scores with α instead of the sparse ones.
    :returns: a RANKING table of each query's top ``k`` by fused score: ``qid``, ``docid``, ``rank`` (int32, from 1),
        ``score`` (float32, the fused score rounded as stored), ties broken by docid (ascending), rows sorted by
        qid then rank.
    :raises ValueError: an ``alpha`` that is not a finite number (every fused score would be NaN or infinite).
    """
    if not math.isfinite(alpha):
        raise ValueError(f"the hybrid's weight alpha must be a finite number, got {alpha!r}")
    tops = {"sparse": _top(sparse, depth), "dense": _top(dense, depth)}
    pooled = tops["sparse"].join(
        tops["dense"], keys=["qid", "docid"], join_type="full outer", left_suffix="_sparse", right_suffix="_dense"
    )
    scores = {name: _list_scores(pooled, top, f"score_{name}", normalization) for name, top in tops.items()}
    weighted, other = ("dense", "sparse") if weight_on_dense else ("sparse", "dense")
    return ranked(pooled["qid"], pooled["docid"], alpha * scores[weighted] + scores[other], k)


def reciprocal_rank_fusion(rankings: list[pa.Table], *, rrf_k: int, depth: int, k: int) -> pa.Table:
    """Reciprocal rank fusion of two or more RANKING tables with Pyserini (``pyserini.fusion.reciprocal_rank_fusion``).

    A document's fused score is Σ 1/(``rrf_k`` + rank) over the rankings that rank it 1 to ``depth`` (ranks 1-based);
    the rankings' own scores are not used.

    :param rankings: the RANKING tables to fuse (``qid``, ``docid``, ``rank``, ``score``).
    :param rrf_k: the constant added to every rank (60 in Cormack, Clarke and Büttcher).
    :param depth: the ranks 1 to ``depth`` of each ranking that count.
    :param k: documents kept per query in the fused ranking.
    :returns: a RANKING table of each query's top ``k`` by fused score: ``qid``, ``docid``, ``rank`` (int32, from 1),
        ``score`` (float32), ties broken by docid (ascending), rows sorted by qid then rank.
    """
    import pandas as pd  # pandas: slow to import, needed only here
    from pyserini.fusion import reciprocal_rank_fusion as pyserini_rrf  # Pyserini: slow to import; no JVM
    from pyserini.trectools import TrecRun

    trec_rankings = []
    for ranking in rankings:
        # Pyserini takes each query's first `depth` rows as its top: rows in rank order
        frame = ranking.sort_by([("qid", "ascending"), ("rank", "ascending")]).to_pandas()
        trec = TrecRun()
        trec.run_data = pd.DataFrame(
            {
                "topic": frame["qid"],
                "q0": "Q0",
                "docid": frame["docid"],
                "rank": frame["rank"],
                "score": frame["score"].astype(np.float64),
                "tag": "hardneg",
            }
        )
        trec_rankings.append(trec)
    fused = pyserini_rrf(trec_rankings, rrf_k=rrf_k, depth=depth, k=None).run_data
    return ranked(
        pa.array(fused["topic"], pa.string()),
        pa.array(fused["docid"], pa.string()),
        fused["score"].to_numpy(np.float64),
        k,
    )


# -------------------------------------------------------------------------------------------------- tuning
def sample_queries(qrels: pa.Table, count: int, seed: int) -> list[str]:
    """``count`` judged queries (a relevance ≥ 1) of a QRELS table drawn with ``seed``, sorted; all of them when
    there are fewer."""
    judged = sorted(set(qrels.filter(pc.greater_equal(qrels["relevance"], 1))["qid"].to_pylist()))
    return sample_ids(judged, count, seed)


def tune_weight(fuse: Callable[[float], pa.Table], qrels: pa.Table, grid: list[float], measure: str) -> pa.Table:
    """Evaluate the fused ranking of every α of ``grid`` with one measure, and mark the best α.

    Each value is the measure's mean over the judged queries of ``qrels`` (``hardneg.evaluation.metrics.evaluate``:
    a judged query the ranking misses scores 0).

    :param fuse: α → the fused RANKING table, e.g. ``lambda a: hybrid(sparse, dense, a, depth=1000, k=1000,
        normalization=False, weight_on_dense=False)``.
    :param qrels: the QRELS table of the tuning queries, a split that is not evaluated.
    :param grid: the values of α tried.
    :param measure: the ir-measures measure maximised, e.g. ``"RR@10"`` or ``"nDCG@10"``.
    :returns: a FUSION_TUNING table, one row per α in increasing α: ``alpha`` (float64), ``value`` (float64, the
        measure's mean), ``chosen`` (bool, true on the best value's row; the smallest α of equal values).
    :raises ConfigError: a ``measure`` that ir-measures cannot parse, or a cutoff that is not a positive integer.
    """

    alphas = sorted(float(a) for a in grid)
    values: list[float] = []
    for alpha in alphas:
        # every α ranks the same queries: a fused ranking that misses judged queries is warned about once
        means, _ = evaluate(fuse(alpha), qrels, [measure], label="the fused ranking", warn=not values)
        values.append(means[measure])
        log.info("alpha %g: %s %.4f", alpha, measure, values[-1])
    best = int(np.argmax(values))  # the first maximum: the smallest α of equal values
    return pa.table(
        {"alpha": alphas, "value": values, "chosen": [i == best for i in range(len(alphas))]},
        schema=artifacts.FUSION_TUNING.schema,
    )


def chosen_alpha(tuning: pa.Table) -> float:
    return tuning.filter(tuning["chosen"])["alpha"][0].as_py()
