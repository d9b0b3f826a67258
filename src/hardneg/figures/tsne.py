"""Figure ``tsne`` (STAR/ADORE paper, Fig. 6): one evaluation query, its relevant documents and its top
negatives, before and after ADORE, mapped to two dimensions by t-SNE.

ADORE trains only the query encoder against the fixed document embeddings of its ``docs`` run, so both queries
live in one document space: *before* is the docs run's own query vector and ranking, *after* the ADORE run's.
The points are the two query vectors, the query's relevant documents and the top ``negatives`` non-relevant
documents of each ranking (one point per document, labelled by the ranking(s) it is a top negative of). t-SNE
(scikit-learn, exact method, PCA initialisation, a fixed ``random_state``) maps them together, so the same
inputs give the same coordinates.

Without a chosen query, the figure takes the query whose first relevant document ADORE moved up most: the largest
gain in reciprocal rank (1 / rank of the first relevant document in the ranking, 0 when none is ranked) from the
docs run's ranking to the ADORE run's; ties go to the first qid in sorted order.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from hardneg.errors import ConfigError, DataError
from hardneg.figures.declaration import Figure
from hardneg.figures.plot import PALETTE, new_figure, save_png, write_data
from hardneg.io import artifacts

if TYPE_CHECKING:
    import pandas as pd

log = logging.getLogger(__name__)

KIND = artifacts.FIGURE_TSNE
# the files the figure reads (its declaration's inputs give them under these names)
INPUTS = (
    "query_before",
    "query_ids_before",
    "ranking_before",
    "query_after",
    "query_ids_after",
    "ranking_after",
    "doc_embeddings",
    "doc_ids",
    "qrels",
)
QUERY_KINDS = ("query_before", "query_after")
DOC_KINDS = ("relevant", "negative_before", "negative_after", "negative_both")


def relevant_documents(qrels: pa.Table) -> dict[str, set[str]]:
    """qid → the docids judged relevant (relevance ≥ 1)."""
    relevant: dict[str, set[str]] = {}
    for qid, docid, grade in zip(*(qrels[c].to_pylist() for c in ("qid", "docid", "relevance"))):
        if grade >= 1:
            relevant.setdefault(qid, set()).add(docid)
    return relevant


def first_relevant_reciprocal(ranking: pd.DataFrame, relevant: Mapping[str, set[str]]) -> pd.Series:
    """qid → 1 / the rank of its first relevant document in ``ranking`` (qid, docid, rank); 0 when none is
    ranked. Every qid of ``relevant`` is in the result."""
    import pandas as pd  # pandas: only where a frame is made (the DAG is planned without it)

    pairs = pd.DataFrame([(q, d) for q, docs in relevant.items() for d in docs], columns=["qid", "docid"])
    ranked = pairs.merge(ranking[["qid", "docid", "rank"]], on=["qid", "docid"], how="inner")
    best = ranked.groupby("qid")["rank"].min()
    return (1.0 / best).reindex(sorted(relevant), fill_value=0.0)


def choose_query(before: pd.DataFrame, after: pd.DataFrame, relevant: Mapping[str, set[str]]) -> str:
    """The query whose first relevant document moved up most from ranking ``before`` to ranking ``after`` (the
    largest gain in its reciprocal rank; ties: the first qid in sorted order)."""
    import pandas as pd  # pandas: only where a frame is made (the DAG is planned without it)

    gain = first_relevant_reciprocal(after, relevant) - first_relevant_reciprocal(before, relevant)
    ordered = pd.DataFrame({"qid": gain.index, "gain": gain.to_numpy()}).sort_values(
        ["gain", "qid"], ascending=[False, True], kind="stable"
    )
    return str(ordered["qid"].iloc[0])


def _ids(path) -> list[str]:
    return artifacts.read_table(artifacts.ROW_IDS, path)["id"].to_pylist()


def _query_vector(npy, ids_path, qid: str) -> np.ndarray:
    ids = _ids(ids_path)
    if qid not in ids:
        raise DataError(ids_path, None, f"query {qid!r} has no embedding here")
    return np.asarray(np.load(npy, mmap_mode="r")[ids.index(qid)], dtype=np.float64)


def _top_negatives(ranking: pd.DataFrame, qid: str, relevant: set[str], count: int) -> list[str]:
    ranked = ranking[ranking["qid"] == qid].sort_values("rank", kind="stable")
    return [d for d in ranked["docid"] if d not in relevant][:count]


def tsne_table(
    inputs: Mapping[str, str | os.PathLike],
    split: str,
    *,
    qid: str | None = None,
    negatives: int = 10,
    perplexity: float = 5.0,
    seed: int = 42,
) -> pa.Table:
    """t-SNE coordinates of one query before and after ADORE, its relevant documents and its top ``negatives``
    non-relevant documents of each ranking.

    ``inputs`` maps the names of :data:`INPUTS` to files: the query embeddings (``.npy``) and their ids
    (``.ids.parquet``) and the ranking of split ``split`` before (the docs run) and after (the ADORE run), the
    fixed corpus embeddings and their ids, and the qrels folder (``<split>.parquet`` is read). ``qid`` None: see
    :func:`choose_query`.
    Returns a table of kind :data:`hardneg.io.artifacts.FIGURE_TSNE` (the queries first, then the relevant
    documents in docid order, then the negatives: before's in rank order, then after's others). A ``qid`` without
    a relevant document, or a ``perplexity`` not below the number of points, is a :class:`ConfigError` naming
    ``figures.tsne.qid`` / ``figures.tsne.perplexity``."""
    from sklearn.manifold import TSNE  # scikit-learn: slow to import, needed only here

    qrels_path = os.path.join(inputs["qrels"], f"{split}.parquet")
    relevant = relevant_documents(artifacts.read_table(artifacts.QRELS, qrels_path))
    before = artifacts.read_table(artifacts.RANKING, inputs["ranking_before"]).to_pandas()
    after = artifacts.read_table(artifacts.RANKING, inputs["ranking_after"]).to_pandas()
    if qid is None:
        qid = choose_query(before, after, relevant)
        log.info("query %s: its first relevant document moved up most", qid)
    elif qid not in relevant:
        raise ConfigError("figures.tsne.qid", f"query {qid!r} has no relevant document in {qrels_path}")
    doc_row = {docid: row for row, docid in enumerate(_ids(inputs["doc_ids"]))}
    rank = {
        side: {d: int(r) for d, r in zip(*(table.loc[table["qid"] == qid, c] for c in ("docid", "rank")))}
        for side, table in (("before", before), ("after", after))
    }
    mine = relevant[qid]
    negatives_before = _top_negatives(before, qid, mine, negatives)
    negatives_after = _top_negatives(after, qid, mine, negatives)
    docs = [(d, "relevant") for d in sorted(mine) if d in doc_row]  # an empty document has no embedding
    for docid in dict.fromkeys(negatives_before + negatives_after):
        kind = (
            "negative_both"
            if docid in negatives_before and docid in negatives_after
            else "negative_before"
            if docid in negatives_before
            else "negative_after"
        )
        docs.append((docid, kind))
    corpus = np.load(inputs["doc_embeddings"], mmap_mode="r")
    vectors = np.vstack(
        [
            _query_vector(inputs["query_before"], inputs["query_ids_before"], qid),
            _query_vector(inputs["query_after"], inputs["query_ids_after"], qid),
            np.asarray(corpus[[doc_row[d] for d, _ in docs]], dtype=np.float64),
        ]
    )
    if perplexity >= len(vectors):
        raise ConfigError(
            "figures.tsne.perplexity",
            f"t-SNE needs a perplexity below the number of points; query "
            f"{qid!r} has {len(vectors)} (set it lower, or raise "
            f"figures.tsne.negatives)",
        )
    xy = TSNE(n_components=2, perplexity=perplexity, init="pca", method="exact", random_state=seed).fit_transform(
        vectors
    )
    points = [qid, qid] + [d for d, _ in docs]
    kinds = list(QUERY_KINDS) + [k for _, k in docs]

    def ranks(side):
        return pa.array([None if k in QUERY_KINDS else rank[side].get(p) for p, k in zip(points, kinds)], pa.int32())

    return pa.table(
        {
            "qid": [qid] * len(points),
            "point": points,
            "kind": kinds,
            "x": xy[:, 0],
            "y": xy[:, 1],
            "rank_before": ranks("before"),
            "rank_after": ranks("after"),
        },
        schema=KIND.schema,
    )


STYLE = {  # kind → marker, colour, size, legend text, layer (documents above the large query stars)
    "negative_before": ("v", PALETTE[0], 45, "top negative before only", 4),
    "negative_after": ("^", PALETTE[1], 45, "top negative after only", 4),
    "negative_both": ("D", PALETTE[4], 40, "top negative before and after", 4),
    "relevant": ("o", PALETTE[2], 110, "relevant document", 5),
    "query_before": ("*", PALETTE[7], 320, "query before", 3),
    "query_after": ("*", PALETTE[3], 320, "query after", 3),
}


def _rank_text(value) -> str:
    import pandas as pd  # pandas: only where a frame is made (the DAG is planned without it)

    return "-" if value is None or pd.isna(value) else str(int(value))


def draw_tsne(table: pa.Table, path: str | os.PathLike, *, before: str, after: str) -> None:
    """Draw ``table`` (kind FIGURE_TSNE): one marker style per kind, an arrow from the query before to the query
    after, each relevant document labelled with its rank before → after. ``before`` and ``after`` name the two
    runs (title). PNG at ``path``."""
    data = table.to_pandas()
    figure, (ax,) = new_figure(7.4, 5.6)
    for kind, (marker, colour, size, text, layer) in STYLE.items():
        rows = data[data["kind"] == kind]
        if len(rows):
            ax.scatter(
                rows["x"],
                rows["y"],
                marker=marker,
                s=size,
                color=colour,
                edgecolors="black",
                linewidths=0.5,
                label=f"{text} ({len(rows)})" if kind in DOC_KINDS else text,
                zorder=layer,
            )
    start = data[data["kind"] == "query_before"].iloc[0]
    end = data[data["kind"] == "query_after"].iloc[0]
    ax.annotate(
        "",
        xy=(end["x"], end["y"]),
        xytext=(start["x"], start["y"]),
        zorder=2,
        arrowprops={"arrowstyle": "->", "color": "black", "linewidth": 1.2},
    )
    for _, row in data[data["kind"] == "relevant"].iterrows():
        ax.annotate(
            f"rank {_rank_text(row['rank_before'])} → {_rank_text(row['rank_after'])}",
            (row["x"], row["y"]),
            textcoords="offset points",
            xytext=(6, 6),
            fontsize="small",
        )
    ax.set_xticks([])
    ax.set_yticks([])
    ax.set_xlabel("t-SNE 1")
    ax.set_ylabel("t-SNE 2")
    ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize="small", frameon=False)
    ax.set_title(f"Query {data['qid'].iloc[0]}: before ADORE ({before}) and after ({after})", fontsize="medium")
    save_png(figure, path)


def write_tsne(
    inputs: Mapping[str, str | os.PathLike],
    split: str,
    *,
    before: str,
    after: str,
    qid: str | None,
    negatives: int,
    perplexity: float,
    seed: int,
    data_path: str | os.PathLike,
    png_path: str | os.PathLike,
) -> pa.Table:
    """Compute the figure's data (:func:`tsne_table`), write it to ``data_path`` (Parquet) and draw it to
    ``png_path``; ``before`` / ``after``: the names of the docs run and the ADORE run. Returns the data."""
    table = write_data(
        tsne_table(inputs, split, qid=qid, negatives=negatives, perplexity=perplexity, seed=seed), KIND, data_path
    )
    draw_tsne(table, png_path, before=before, after=after)
    return table


def _inputs(plan, spec: dict, key: str) -> dict:
    run = plan.report.check_run(spec["run"], f"{key}.run")
    docs = plan.doc_run(run)
    if docs == run:
        raise ConfigError(
            f"{key}.run",
            f"run {run!r} keeps no other run's documents fixed: name an ADORE run "
            f"(inputs.docs), whose docs run gives the 'before'",
        )
    layout, split = plan.layout, plan.eval_split
    return {
        "query_before": layout.query_embeddings(docs, split),
        "query_ids_before": layout.query_ids(docs, split),
        "ranking_before": layout.ranking(docs, split),
        "query_after": layout.query_embeddings(run, split),
        "query_ids_after": layout.query_ids(run, split),
        "ranking_after": layout.ranking(run, split),
        "doc_embeddings": layout.corpus_embeddings(docs),
        "doc_ids": layout.corpus_ids(docs),
        "qrels": layout.qrels_dir(plan.dataset(run)),
    }


def _params(spec: dict, plan) -> dict:
    # the docs run, for the job only: a config whose t-SNE run is not defined draws no t-SNE, and still parses
    return {
        "run": spec["run"],
        "qid": spec["qid"],
        "negatives": spec["negatives"],
        "perplexity": spec["perplexity"],
        "docs": lambda wildcards: plan.doc_run(spec["run"]),
        "split": plan.eval_split,
        "seed": plan.config["seed"],
    }


def _build(inputs, params, data_path, png_path) -> pa.Table:
    return write_tsne(
        {name: inputs[name] for name in INPUTS},
        params["split"],
        before=params["docs"],
        after=params["run"],
        qid=params["qid"],
        negatives=params["negatives"],
        perplexity=params["perplexity"],
        seed=params["seed"],
        data_path=data_path,
        png_path=png_path,
    )


FIGURE = Figure("tsne", caption="tsne.rst", inputs=_inputs, params=_params, build=_build, mem_mb=2000, runtime=10)
