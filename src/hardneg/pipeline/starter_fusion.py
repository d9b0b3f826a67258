"""The fused runs of a starter config (:mod:`hardneg.pipeline.starter`) and what decides their order: how many
judged queries a split of the dataset has, read from its files, against the tuning minimum
(:data:`hardneg.fusion.MIN_TUNING_QUERIES`)."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from hardneg.datasets.beir import read_beir_qrels
from hardneg.datasets.qrels import read_trec_qrels
from hardneg.datasets.splits import HELD_OUT, TRAIN, held_out_queries
from hardneg.fusion import MIN_TUNING_QUERIES

HEADER_FUSION = (
    "Fused runs over BM25 and {dense}: reciprocal rank fusion ({rrf}, no weight to tune){hybrid_text}. "
    "The headline fused run, listed first of them: {headline}{why}."
)


def _split_qrels(dataset: dict, split: str) -> pa.Table | None:
    """The QRELS table of ``split`` as its file holds it (BEIR, MS MARCO and TREC datasets); None for another
    adapter or a split without a file."""
    if dataset["adapter"] == "beir":
        path = Path(dataset["path"]) / "qrels" / f"{split}.tsv"
        return read_beir_qrels(path)[0] if path.is_file() else None
    files = dataset.get("qrels")
    if isinstance(files, dict) and split in files and os.path.isfile(files[split]):
        return read_trec_qrels(files[split])[0]
    return None


def judged_queries(dataset: dict, split: str) -> int | None:
    """How many judged queries (a relevance of 1 or more) ``dataset``'s ``split`` has, from its files (a split held
    out of the training split by ``dev_from_train``: those held out; a synthetic dataset: its ``num_queries``), or
    None when that cannot be told without preparing the dataset."""
    if dataset["adapter"] == "synthetic":
        return dataset.get("num_queries", {}).get(split)
    option = dataset.get("dev_from_train")
    if option is not None and split == HELD_OUT:
        qrels = _split_qrels(dataset, TRAIN)
        return None if qrels is None else len(held_out_queries(qrels, option["share"], option.get("seed", 0)))
    qrels = _split_qrels(dataset, split)
    if qrels is None:
        return None
    return pc.count_distinct(qrels.filter(pc.greater_equal(qrels["relevance"], 1))["qid"]).as_py()


def fused_runs(runs: dict, dataset: dict, splits: list[str], prefix: str, dense: str, evaluated: str) -> None:
    """Add to ``runs`` the fusion of BM25 and the chain's last dense run ``dense``: reciprocal rank fusion
    (``<prefix>rrf``, no weight to tune) and, when the dataset has a dev split that is not the ``evaluated`` one,
    the hybrid of their scores (``<prefix>hybrid``) with α tuned on it. The headline fused run
    (:func:`headline_fused_run`) comes first."""
    rrf = {f"{prefix}rrf": {"method": "rrf", "inputs": {"runs": ["bm25", dense]}}}
    hybrid = {}
    if HELD_OUT in splits and evaluated != HELD_OUT:
        hybrid = {
            f"{prefix}hybrid": {
                "method": "hybrid",
                "inputs": {"runs": ["bm25", dense]},
                "params": {"tune": {"split": HELD_OUT}},
            }
        }
    tuned = judged_queries(dataset, HELD_OUT) if hybrid else None
    first, second = (hybrid, rrf) if hybrid and tuned is not None and tuned >= MIN_TUNING_QUERIES else (rrf, hybrid)
    runs.update(first | second)


def headline_fused_run(config: dict) -> str | None:
    """The fused run a starter config puts first (its headline): the hybrid when α is tuned on at least
    :data:`MIN_TUNING_QUERIES` dev queries, else reciprocal rank fusion; None without a fused run."""
    return next((name for name, run in config["runs"].items() if run["method"] in ("rrf", "hybrid")), None)


def fusion_note(config: dict) -> str | None:
    """Why the headline fused run is the one it is, when the dev split is too small to tune α on: a sentence, or
    None."""
    hybrid = next((name for name, run in config["runs"].items() if run["method"] == "hybrid"), None)
    if hybrid is None:
        return None
    dataset = config["datasets"][config["dataset"]]
    queries = judged_queries(dataset, HELD_OUT)
    if queries is None or queries >= MIN_TUNING_QUERIES:
        return None
    return (
        f"split {HELD_OUT} has {queries} judged quer{'y' if queries == 1 else 'ies'}, fewer than "
        f"{MIN_TUNING_QUERIES}: {hybrid}'s weight tuned on them may be chance, so reciprocal rank fusion "
        f"({headline_fused_run(config)}) is the headline fused run"
    )


def fusion_header(config: dict) -> str:
    """The starter config's header lines on its fused runs (empty without one)."""
    fused = {run["method"]: name for name, run in config["runs"].items() if run["method"] in ("rrf", "hybrid")}
    if not fused:
        return ""
    inputs = config["runs"][fused["rrf"]]["inputs"]["runs"]
    hybrid_text = (
        f", and the hybrid of their scores ({fused['hybrid']}) with its weight tuned on split {HELD_OUT}"
        if "hybrid" in fused
        else ""
    )
    note = fusion_note(config)
    why = (
        f" ({note})"
        if note
        else (
            " (its weight is tuned on enough dev queries)"
            if "hybrid" in fused and headline_fused_run(config) == fused["hybrid"]
            else ""
        )
    )
    text = HEADER_FUSION.format(
        dense=inputs[1], rrf=fused["rrf"], hybrid_text=hybrid_text, headline=headline_fused_run(config), why=why
    )
    return textwrap.fill(text, width=116, initial_indent="# ", subsequent_indent="# ") + "\n"
