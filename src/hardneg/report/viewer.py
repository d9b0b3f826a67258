"""The hard-negative viewer: one self-contained, searchable HTML page per mined list, for reading the training data.

The queries that deserve a look come first: every flagged query (a suspected false negative among its negatives,
or its best positive below rank ``viewer.positive_rank`` of the mining ranking, or beyond its depth; the worst
first, at most ``viewer.flagged``), then a seeded sample of the other training queries (``viewer.queries``; all
when there are fewer). For each the page shows the query,
its relevant documents (relevance, rank in the miner's ranking, the mining model's score, a title + text snippet) and
its ``viewer.negatives`` best-ranked mined negatives (rank, score, margin to the best positive, whether BM25's
top-``depth`` has it, the suspected-false-negative and empty-document flags, a snippet), under the per-query
numbers of the audit (:mod:`hardneg.mining.audit`), whose whole report heads the page with its margin histogram
drawn. Margins and flags follow the audit: margin = negative score - best positive score under the mining model; a
margin >= 0 marks a suspected false negative. The words of the query are highlighted in the documents' texts.

A list brought in by ``hardneg import`` (a run trained on ``{imported: <folder>}``) has no miner and no ranking:
its page says where the list came from instead (the card's source file, its format and shape, its SHA-256, the
mapping counts), flags a query for suspected false negatives only, and shows the scores the file carried (teacher
scores; none where it carried none, and then no margins), each negative's rank in the file, and the positives the
file names beside the qrels' with the file's grades.

This module chooses the queries and reads what is shown of them; :mod:`hardneg.report.viewer_page` draws the page.
Every text from the data (ids, queries, titles, document texts, the imported file's path and format) is
HTML-escaped: a document holding ``<script>`` is shown as text. The page loads nothing from elsewhere (see
:mod:`hardneg.report.pages`); a little inline script filters the queries by words, by the suspected-false-negative
flag and by any flag. Same inputs and seed → the same bytes.
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass, fields

import pyarrow as pa
import pyarrow.compute as pc

from hardneg.errors import HardnegError
from hardneg.evaluation.sampling import sample_ids
from hardneg.io import artifacts
from hardneg.io.atomic import write_text
from hardneg.io.text import EMPTY_MARK, text_snippet
from hardneg.mining.audit_report import audit_markdown
from hardneg.mining.card import read_card
from hardneg.report.viewer_page import render_viewer
from hardneg.schema.values import section_values

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ViewerSettings:
    """The config's ``viewer`` section (meaning and defaults in the schema; no second copy of the defaults here)."""

    queries: int  # training queries shown beside the flagged ones, a seeded sample
    negatives: int  # best-ranked mined negatives shown per query
    snippet_chars: int  # characters of title + text shown per document
    positive_rank: int  # a query whose best positive ranks below this in the mining ranking is flagged
    flagged: int  # flagged queries shown at most, the worst first

    @classmethod
    def from_config(cls, section: dict) -> ViewerSettings:
        """From the validated ``viewer`` section; ``ConfigError`` naming ``viewer.<key>`` for an unknown or a
        missing key."""
        return cls(**section_values(section, [f.name for f in fields(cls)], "viewer"))


def sample_queries(qids: list[str], count: int, seed: int) -> list[str]:
    """The queries the viewer shows: ``count`` of ``qids`` seeded with ``seed``, in their order (all when fewer)."""
    return sample_ids(qids, count, seed)


def flagged_queries(
    audit: pa.Table, positive_rank: int, depth: int, limit: int, ranked: bool = True
) -> tuple[list[tuple[str, str]], int]:
    """The flagged queries of an AUDIT table, the worst first, at most ``limit``: (qid, why) of each, and how many
    are flagged in all. A query is flagged when a negative scores at or above its best positive (suspected false
    negatives; more first), or its best positive ranks below ``positive_rank`` in the mining ranking (beyond
    ``depth``: not retrieved at all; lower first). ``ranked``: False for an imported list, which has no mining
    ranking (its queries are flagged for suspected false negatives only)."""
    flagged = []
    for row in audit.to_pylist():
        suspected, rank = row["suspected_false_negatives"] or 0, row["best_positive_rank"]
        why = []
        if suspected:
            why.append(f"{suspected} suspected false negative{'s' if suspected != 1 else ''}")
        if ranked and rank is None:
            why.append(f"no positive in the top {depth} of the mining ranking")
        elif ranked and rank > positive_rank:
            why.append(f"best positive at rank {rank}, below {positive_rank}")
        if why:
            lowest = 0 if not ranked else -(depth + 1 if rank is None else rank)
            flagged.append((-suspected, lowest, row["qid"], "; ".join(why)))
    flagged.sort()
    return [(qid, why) for _, _, qid, why in flagged[:limit]], len(flagged)


def _rows_by_qid(table: pa.Table) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for row in table.to_pylist():
        out.setdefault(row["qid"], []).append(row)
    return out


def viewer_queries(
    qids: list[str],
    *,
    queries: pa.Table,
    qrels: pa.Table,
    hardnegs: pa.Table,
    positives: pa.Table,
    audit: pa.Table,
    corpus: pa.Table,
    mining_ranking: pa.Table | None,
    bm25_ranking: pa.Table | None,
    depth: int,
    negatives: int,
    snippet_chars: int,
    pool: pa.Table | None = None,
) -> list[dict]:
    """What the viewer shows of each query of ``qids``, in that order (tables may hold other queries too).

    ``queries`` (QUERIES), ``qrels`` (QRELS), ``hardnegs`` (HARDNEGS), ``positives`` (POSITIVE_SCORES: the
    miner's scores of the positives, or an imported list's positives with the file's grades and teacher scores),
    ``audit`` (AUDIT), ``corpus`` (CORPUS rows of the documents shown), ``mining_ranking`` (RANKING: the mining
    model's ranking, for the rank of each positive; None for an imported list), ``bm25_ranking`` (RANKING, or None:
    the reference ranking, top ``depth``) and ``pool`` (CANDIDATES, or None: the pool the negatives were selected
    from, for the positives they duplicate).

    Returns one dict per query: qid, text, the audit row's numbers (best_positive_rank, best_positive_score,
    num_negatives, bm25_overlap, min_margin, max_margin, suspected_false_negatives; None when null), positives
    [{docid, relevance, judged, rank, score, snippet}] (the documents the qrels judge relevant and those
    ``positives`` names; relevance descending, then docid; relevance: the grade in ``positives`` where it has the
    document, else the qrels'; judged: whether the qrels judge it relevant; rank and score None when unknown) and
    negatives, the ``negatives`` best-ranked [{rank, docid, score, margin, in_bm25, suspected, empty, duplicate,
    snippet}]: margin = score - best positive score (None without either), suspected = margin >= 0, in_bm25 None
    without ``bm25_ranking``, duplicate the positive the negative duplicates and how ("p1 (exact)"; None: none, or no
    ``pool``). Scores are the mining model's (inner products), or the imported file's (None where it has none).
    """
    texts = dict(zip(queries["qid"].to_pylist(), queries["text"].to_pylist()))
    docs = {
        d: (t, x)
        for d, t, x in zip(corpus["docid"].to_pylist(), corpus["title"].to_pylist(), corpus["text"].to_pylist())
    }
    audit_rows = {row["qid"]: row for row in audit.to_pylist()}
    relevant = _rows_by_qid(qrels.filter(pc.greater_equal(qrels["relevance"], 1)))
    listed = {qid: {r["docid"]: r for r in rows} for qid, rows in _rows_by_qid(positives).items()}
    mining_ranks: dict[tuple[str, str], int] = {}
    for row in mining_ranking.to_pylist() if mining_ranking is not None else []:
        key = (row["qid"], row["docid"])
        mining_ranks[key] = min(row["rank"], mining_ranks.get(key, row["rank"]))
    negs = _rows_by_qid(hardnegs)
    duplicates = {}
    if pool is not None:
        marked = pool.filter(pc.is_valid(pool["duplicate_of"]))
        duplicates = {
            (q, d): f"{of} ({kind})"
            for q, d, of, kind in zip(
                marked["qid"].to_pylist(),
                marked["docid"].to_pylist(),
                marked["duplicate_of"].to_pylist(),
                marked["duplicate_kind"].to_pylist(),
            )
        }
    in_bm25 = None
    if bm25_ranking is not None:
        top = bm25_ranking.filter(pc.less_equal(bm25_ranking["rank"], depth))
        in_bm25 = set(zip(top["qid"].to_pylist(), top["docid"].to_pylist()))

    def snippet(docid: str) -> str:
        return text_snippet(*docs[docid], snippet_chars) if docid in docs else "(not in the corpus)"

    def is_empty(docid: str) -> bool:
        return docid in docs and text_snippet(*docs[docid], snippet_chars) == EMPTY_MARK

    out = []
    for qid in qids:
        row = audit_rows.get(qid, {})
        judged = {r["docid"]: r["relevance"] for r in relevant.get(qid, [])}
        named = listed.get(qid, {})
        positives_shown = []
        for docid in set(named) | set(judged):
            entry = named.get(docid, {})
            positives_shown.append(
                {
                    "docid": docid,
                    "relevance": entry.get("relevance") or judged.get(docid),
                    "judged": docid in judged,
                    "rank": mining_ranks.get((qid, docid)),
                    "score": entry.get("score"),
                    "snippet": snippet(docid),
                }
            )
        positives_shown.sort(key=lambda p: (-p["relevance"], p["docid"]))
        best = max((p["score"] for p in positives_shown if p["score"] is not None), default=None)
        shown = sorted(negs.get(qid, []), key=lambda r: r["rank"])[:negatives]
        negatives_shown = []
        for neg in shown:
            margin = None if best is None or neg["score"] is None else neg["score"] - best
            negatives_shown.append(
                {
                    "rank": neg["rank"],
                    "docid": neg["docid"],
                    "score": neg["score"],
                    "margin": margin,
                    "in_bm25": None if in_bm25 is None else (qid, neg["docid"]) in in_bm25,
                    "suspected": margin is not None and margin >= 0,
                    "empty": is_empty(neg["docid"]),
                    "duplicate": duplicates.get((qid, neg["docid"])),
                    "snippet": snippet(neg["docid"]),
                }
            )
        out.append(
            {
                "qid": qid,
                "text": texts.get(qid, ""),
                "positives": positives_shown,
                "negatives": negatives_shown,
                **{
                    name: row.get(name)
                    for name in (
                        "best_positive_rank",
                        "best_positive_score",
                        "num_negatives",
                        "bm25_overlap",
                        "min_margin",
                        "max_margin",
                        "suspected_false_negatives",
                    )
                },
            }
        )
    return out


def viewer_stage(
    run: str,
    *,
    hardnegs_path,
    positives_path,
    audit_path,
    audit_summary_path,
    mining_ranking_path,
    corpus_path,
    queries_path,
    qrels_path,
    output_path: str | os.PathLike,
    bm25_ranking_path=None,
    pool_path=None,
    card_path=None,
    miner: str | None,
    split: str,
    depth: int,
    seed: int,
    settings: dict,
) -> int:
    """Stage function: the hard-negative list of run ``run`` (mined, or imported) and what the pipeline has about
    it → the viewer page at ``output_path`` (written atomically).

    Reads the hard negatives (HARDNEGS), positive scores (POSITIVE_SCORES: the miner's, or the imported list's
    with the file's grades and teacher scores), the audit (AUDIT Parquet and its JSON summary), the miner's ranking
    of the training split (RANKING; ``mining_ranking_path`` None for an imported list), the corpus, the training queries
    and qrels of split ``split`` and, when given, the BM25 reference ranking (RANKING), the candidate pool
    (CANDIDATES: which negatives duplicate a positive) and an imported list's card (``card_path``: the run's
    ``hardnegs_card.json``, whose ``import`` section says where the list came from; ``miner`` None then) — of the
    tables, only the rows of the queries shown and the documents shown. ``settings``: the config's ``viewer``
    section; ``seed`` draws the sample.

    :returns: the number of queries shown: the flagged ones, then the sample.
    :raises HardnegError: ``card_path`` is not the card of an imported list (naming the file).
    """
    config = ViewerSettings.from_config(settings)
    imported = read_card(card_path) if card_path is not None else None
    if imported is not None and "import" not in imported:
        raise HardnegError(f"{card_path}: not the card of an imported list (it has no import section)")
    audit = artifacts.read_table(artifacts.AUDIT, audit_path)
    flagged, num_flagged = flagged_queries(audit, config.positive_rank, depth, config.flagged, ranked=imported is None)
    why = dict(flagged)
    others = [qid for qid in audit["qid"].to_pylist() if qid not in why]
    qids = [qid for qid, _ in flagged] + sample_queries(others, config.queries, seed)
    hardnegs = artifacts.read_matching_rows(artifacts.HARDNEGS, hardnegs_path, "qid", qids)
    qrels = artifacts.read_matching_rows(artifacts.QRELS, qrels_path, "qid", qids)
    positives = artifacts.read_matching_rows(artifacts.POSITIVE_SCORES, positives_path, "qid", qids)
    shown = set(qrels.filter(pc.greater_equal(qrels["relevance"], 1))["docid"].to_pylist())
    shown.update(positives["docid"].to_pylist())  # an imported file's positives the qrels may not judge
    for rows in _rows_by_qid(hardnegs).values():  # the documents shown: positives and the best-ranked negatives
        shown.update(row["docid"] for row in sorted(rows, key=lambda r: r["rank"])[: config.negatives])
    bm25 = (
        artifacts.read_matching_rows(artifacts.RANKING, bm25_ranking_path, "qid", qids) if bm25_ranking_path else None
    )
    queries = viewer_queries(
        qids,
        queries=artifacts.read_matching_rows(artifacts.QUERIES, queries_path, "qid", qids),
        qrels=qrels,
        hardnegs=hardnegs,
        positives=positives,
        audit=audit,
        corpus=artifacts.read_matching_rows(artifacts.CORPUS, corpus_path, "docid", sorted(shown)),
        mining_ranking=artifacts.read_matching_rows(artifacts.RANKING, mining_ranking_path, "qid", qids)
        if mining_ranking_path is not None
        else None,
        bm25_ranking=bm25,
        depth=depth,
        negatives=config.negatives,
        snippet_chars=config.snippet_chars,
        pool=artifacts.read_matching_rows(artifacts.CANDIDATES, pool_path, "qid", qids) if pool_path else None,
    )
    for query in queries:
        query["flagged"] = why.get(query["qid"])
    with open(audit_summary_path, encoding="utf-8") as handle:
        summary = json.load(handle)
    write_text(
        output_path,
        render_viewer(
            queries,
            run=run,
            miner=miner,
            split=split,
            depth=depth,
            seed=seed,
            num_training_queries=audit.num_rows,
            with_bm25=bm25 is not None,
            audit_markdown=audit_markdown(summary, bars=False),
            histogram=summary["margin"]["histogram"],
            num_flagged=num_flagged,
            positive_rank=config.positive_rank,
            imported=imported,
        ),
    )
    log.info(
        "hard-negative viewer of run %s: %d flagged (of %d) and %d sampled of %d training queries, %d negatives "
        "each at most (%s)",
        run,
        len(flagged),
        num_flagged,
        len(queries) - len(flagged),
        audit.num_rows,
        config.negatives,
        output_path,
    )
    return len(queries)
