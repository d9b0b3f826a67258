"""``hardneg verify <run>``: is a hard-negative list what its mining card (:mod:`hardneg.mining.card`) says, and
does mining again from the recorded inputs give it back?

:func:`verify` first compares every input digest of the card with the files now on disk and names those that
changed (and the list itself, when it changed since the card was written). It then re-mines: it loads the
miner's model, encodes the split's queries from the tokenized cache, searches the recorded index with the
recorded search parameters (and the recorded thread counts), builds the candidate pool with the recorded depth
and BM25 ranking, duplicate pairs and cross-encoder scores, applies the recorded policy and seed, and measures
the per-query overlap of the re-mined list with the stored one (:func:`overlap`): 1.0 for every query is
expected on the same hardware with an exact (``Flat``) index. For an approximate index (anything else) it also
searches the same corpus embeddings exactly (a ``Flat`` inner-product search over the miner's
``embeddings/corpus.npy``) and reports how far the approximate index's negatives drift from the exact search's.

A pool scored by a cross-encoder is re-scored with the ``score_pairs`` callable given (the cross-encoder's
method's, :attr:`hardneg.methods.registry.Method.score_pairs`, which the command line looks up); without one,
the cross-encoder's scores are those stored beside the pool, and the report says so.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hardneg.dense.encode import encode_rows
from hardneg.dense.raw_texts import TokenizedWithRaw
from hardneg.dense.tokenized import TokenizedTexts
from hardneg.io import artifacts
from hardneg.io.layout import moved_ranking
from hardneg.mining.card import check_inputs, check_list
from hardneg.mining.duplicates import duplicate_partners, flag_duplicates_of_positives
from hardneg.mining.negatives import positive_scores
from hardneg.mining.policies import Policy
from hardneg.mining.pool import build_pool
from hardneg.mining.pool_scores import score_pool
from hardneg.mining.rows import relevant_judgements
from hardneg.mining.selection import select

log = logging.getLogger(__name__)

CE_BATCH_SIZE = 64  # pairs per forward pass when the cross-encoder scores again (scores do not depend on it)


# ------------------------------------------------------------------------------------------------ overlap
def _pairs(table: pa.Table) -> pa.Table:
    """The distinct (qid, docid) pairs of a table."""
    return table.select(["qid", "docid"]).group_by(["qid", "docid"]).aggregate([])


def _ordered(table: pa.Table) -> pa.Table:
    """Each query's rows by score, highest first, ties by docid (so that the order of tied rows, which a search
    leaves to chance, cannot count as a difference), with their position within the query."""
    ranked = table.select(["qid", "docid", "score"]).sort_by(
        [("qid", "ascending"), ("score", "descending"), ("docid", "ascending")]
    )
    qids = ranked["qid"].combine_chunks() if ranked.num_rows else pa.array([], pa.string())
    starts = (
        np.flatnonzero(np.r_[True, pc.not_equal(qids[1:], qids[:-1]).to_numpy(zero_copy_only=False)])
        if len(qids)
        else np.zeros(0, np.int64)
    )
    position = np.arange(len(qids)) - np.repeat(starts, np.diff(np.r_[starts, len(qids)]))
    return pa.table({"qid": qids, "docid": ranked["docid"], "position": pa.array(position, pa.int64())})


def _counts(table: pa.Table, name: str) -> pa.Table:
    return table.group_by("qid").aggregate([("docid", "count")]).rename_columns(["qid", name])


def overlap(stored: pa.Table, other: pa.Table) -> dict:
    """How far two hard-negative lists agree, query by query.

    A query's overlap is |stored ∩ other| / |stored ∪ other| of its negatives (docids); the queries are those
    with a negative in either list (one with negatives on one side only has overlap 0). Its order agrees when
    both sides list the same documents in the same order once each side is sorted by score (highest first),
    ties broken by docid.

    :param stored: a HARDNEGS-like table (``qid``, ``docid``, ``score``).
    :param other: another.
    :returns: ``queries`` (compared), ``mean`` and ``min`` overlap (1.0 when no query has negatives),
        ``below_one`` (queries whose overlap is below 1.0) and ``same_order`` (queries whose order agrees).
    """
    a, b = _pairs(stored), _pairs(other)
    both = a.join(b, ["qid", "docid"], join_type="inner")
    sizes = _counts(a, "a").join(_counts(b, "b"), "qid", join_type="full outer")
    sizes = sizes.join(_counts(both, "both"), "qid", join_type="left outer")

    def column(name: str) -> np.ndarray:
        return pc.fill_null(sizes[name], 0).to_numpy().astype(np.int64) if sizes.num_rows else np.zeros(0, np.int64)

    size_a, size_b, common = column("a"), column("b"), column("both")
    values = common / np.maximum(size_a + size_b - common, 1)
    first, second = _ordered(stored), _ordered(other)
    agree = first.join(second, ["qid", "position"], join_type="inner", right_suffix="_other")
    agree = agree.filter(pc.equal(agree["docid"], agree["docid_other"]))
    counted = _counts(agree, "n")  # one group-by: two would list their queries in orders of their own
    agreeing = dict(zip(counted["qid"].to_pylist(), counted["n"].to_pylist()))
    qids = sizes["qid"].to_pylist()
    same = sum(1 for q, x, y in zip(qids, size_a, size_b) if x == y and agreeing.get(q, 0) == x)
    return {
        "queries": len(values),
        "mean": float(values.mean()) if len(values) else 1.0,
        "min": float(values.min()) if len(values) else 1.0,
        "below_one": int((values < 1.0).sum()),
        "same_order": int(same),
    }


# ---------------------------------------------------------------------------------------------- re-mining
@dataclass
class Remined:
    """What mining again gave: the ``negatives`` (HARDNEGS table) and the ``ranking`` (RANKING table) they come
    from; ``exact`` whether the index searched is exact; for an approximate index ``exact_negatives``, those of an
    exact search of the same embeddings; ``notes``, what the report should say about how it was done."""

    negatives: pa.Table
    ranking: pa.Table
    exact: bool
    exact_negatives: pa.Table | None = None
    notes: list[str] = field(default_factory=list)


@contextlib.contextmanager
def _recorded_threads(threads: Mapping):
    """Run with the torch and Faiss thread counts a card records (the ones the list was mined with), restoring
    this process's afterwards: float sums, and so near-tied scores, may depend on them."""
    # torch and Faiss: imported only where the list is mined again
    import faiss
    import torch

    before = torch.get_num_threads(), faiss.omp_get_max_threads()
    if threads.get("torch_intra_op"):
        torch.set_num_threads(int(threads["torch_intra_op"]))
    if threads.get("faiss_omp"):
        faiss.omp_set_num_threads(int(threads["faiss_omp"]))
    try:
        yield
    finally:
        torch.set_num_threads(before[0])
        faiss.omp_set_num_threads(before[1])


class _Inputs:
    """A card's inputs, read from where they are now (``path_of``)."""

    def __init__(self, card: Mapping, path_of: Callable[[str], Path]):
        self.card, self.path_of = card, path_of

    def has(self, name: str) -> bool:
        return name in self.card["inputs"]

    def table(self, kind: artifacts.ArtifactKind, name: str) -> pa.Table | None:
        return artifacts.read_table(kind, self.path_of(name)) if self.has(name) else None


def _cross_encoder(
    inputs: _Inputs, ranking: pa.Table, qrels: pa.Table, score_pairs, device: str, notes: list[str]
) -> tuple[pa.Table | None, pa.Table | None]:
    """The cross-encoder's scores of the pool's candidates of ``ranking`` (RANKING-shaped) and of the judged
    positives (POSITIVE_SCORES-shaped): scored again with ``score_pairs``, or the stored ones without it."""
    card = inputs.card
    if not card["pool"].get("cross_encoder"):
        return None, None
    if score_pairs is None:
        note = (
            f"the cross-encoder scores were taken from the stored pool's ({card['pool']['cross_encoder']}: "
            f"{inputs.path_of('ce_candidates')}) rather than recomputed"
        )
        if note not in notes:
            notes.append(note)
        return inputs.table(artifacts.RANKING, "ce_candidates"), inputs.table(artifacts.POSITIVE_SCORES, "ce_positives")

    cache, split = inputs.path_of("ce_cache"), card["split"]
    # with their raw texts (the card's queries file is the split's), which a pretrained cross-encoder reads
    queries = TokenizedWithRaw(cache, f"queries_{split}", inputs.path_of("queries"), artifacts.QUERIES)
    corpus = TokenizedWithRaw(cache, "corpus", inputs.path_of("corpus"), artifacts.CORPUS)
    note = f"the cross-encoder scores were recomputed with the model of {card['pool']['cross_encoder']}"
    if note not in notes:
        notes.append(note)
    return score_pool(
        score_pairs,
        inputs.path_of("ce_model"),
        queries,
        corpus,
        ranking,
        qrels,
        depth=card["pool"]["depth"],
        batch_size=CE_BATCH_SIZE,
        device=device,
    )


def _select(
    inputs: _Inputs,
    ranking: pa.Table,
    qrels: pa.Table,
    positives: pa.Table,
    *,
    score_pairs,
    device: str,
    notes: list[str],
) -> pa.Table:
    """The hard negatives the card's pool and policy select from ``ranking``."""
    card = inputs.card
    duplicates = None
    if inputs.has("duplicates"):
        partners = duplicate_partners(inputs.table(artifacts.DUPLICATES, "duplicates"))

        def duplicates(qids, docids):
            return flag_duplicates_of_positives(partners, qids, docids, qrels)

    ce_scores, ce_positives = _cross_encoder(inputs, ranking, qrels, score_pairs, device, notes)
    pool = build_pool(
        ranking,
        qrels,
        positives,
        depth=card["pool"]["depth"],
        bm25=inputs.table(artifacts.RANKING, "bm25_ranking"),
        ce_scores=ce_scores,
        ce_positive_scores=ce_positives,
        duplicates=duplicates,
    )
    policy = Policy.from_params(card["policy"]["params"])
    return select(pool, policy, seed=card["seed"]).negatives


def remine(
    card: Mapping, path_of: Callable[[str], Path], *, score_pairs: Callable | None = None, device: str | None = None
) -> Remined:
    """Mine a card's list again from its recorded inputs (see the module docstring).

    :param card: a mining card.
    :param path_of: the name of one of the card's inputs → where that input is now.
    :param score_pairs: for a pool scored by a cross-encoder, the cross-encoder method's ``score_pairs``
        (``(model_dir, queries, corpus, pairs, *, batch_size, device)`` → one probability per pair); None: the
        stored scores are used.
    :param device: where the miner's model encodes the queries; None: the device the card records.
    :returns: the :class:`Remined` list.
    :raises DataError: an input file that does not match its schema.
    :raises FileNotFoundError: a missing input.
    """
    # torch and Faiss: imported only where the list is mined again
    from hardneg.dense.model import BiEncoder
    from hardneg.dense.train_config import resolve_device
    from hardneg.index import build_index, is_exact, load_index, search_ranking, set_search_params

    search, split = card["search"], card["split"]
    device = str(resolve_device(device or search.get("device") or "auto"))  # "auto": cuda when there is one
    inputs = _Inputs(card, path_of)
    notes: list[str] = []
    with _recorded_threads(card.get("threads") or {}):
        texts = TokenizedTexts(path_of("tokenized_queries"), f"queries_{split}")
        model = BiEncoder.load(path_of("model"))
        vectors = encode_rows(
            model,
            texts,
            np.arange(len(texts)),
            "query",
            batch_size=search["batch_size"],
            device=resolve_device(device),
            precision=search.get("precision", "fp32"),
        )
        index = load_index(path_of("index"))
        set_search_params(index, search.get("search_params"))
        docids = artifacts.read_table(artifacts.ROW_IDS, path_of("docids"))["id"]
        qids = pa.array(texts.row_ids, pa.string())
        ranking = search_ranking(index, vectors, qids, docids, search["top_k"])
        qrels_file = artifacts.read_table(artifacts.QRELS, path_of("qrels"))
        qrels = relevant_judgements(qrels_file)
        corpus = np.load(path_of("corpus_embeddings"), mmap_mode="r")
        positives = positive_scores(vectors, qids, corpus, docids, qrels_file)
        negatives = _select(inputs, ranking, qrels, positives, score_pairs=score_pairs, device=device, notes=notes)
        exact = bool(is_exact(index))
        exact_negatives = None
        if not exact:  # the same embeddings searched exactly: how far the approximate index moves the negatives
            flat = build_index(corpus, "Flat", use_gpu=False)
            exact_ranking = search_ranking(flat, vectors, qids, docids, search["top_k"])
            exact_negatives = _select(
                inputs, exact_ranking, qrels, positives, score_pairs=score_pairs, device=device, notes=notes
            )
    return Remined(negatives=negatives, ranking=ranking, exact=exact, exact_negatives=exact_negatives, notes=notes)


# ------------------------------------------------------------------------------------------------- report
def input_paths(card: Mapping, results: str | os.PathLike) -> dict[str, Path]:
    """Where each of a card's inputs (and its ``list``) is now, its recorded path taken from the card's results
    folder (e.g. ``results/...``) to ``results``; a path outside the card's results folder stays as recorded."""
    recorded = str(card.get("results") or "results").rstrip("/")

    def moved(path: str) -> Path:
        if path == recorded or path.startswith(recorded + "/"):
            return Path(results) / path[len(recorded) :].lstrip("/")
        return Path(path)

    # a ranking recorded in its folder's old place (<run>/rankings/) is read from its new one once that is renamed
    paths = {name: moved_ranking(moved(entry["path"])) for name, entry in card["inputs"].items()}
    paths["list"] = moved(card["list"]["path"])
    return paths


def verify(
    card: Mapping,
    *,
    results: str | os.PathLike = "results",
    remine_list: bool = True,
    score_pairs: Callable | None = None,
    device: str | None = None,
) -> dict:
    """Check a list against its card and, unless told not to, mine it again (see the module docstring).

    :param card: the run's mining card (:func:`hardneg.mining.card.read_card`).
    :param results: the results folder now holding the card's files (its recorded paths are moved there).
    :param remine_list: mine again; False: compare the digests only.
    :param score_pairs: the cross-encoder's ``score_pairs`` (see :func:`remine`), or None.
    :param device: where the miner's model encodes the queries (None: as recorded).
    :returns: the report: ``run``, ``list`` (path, rows, queries), ``inputs_checked``, ``changed`` (one line per
        changed or missing input, and the list when it changed), ``remined`` (bool), ``index`` (``factory``,
        ``exact``), ``overlap`` (:func:`overlap` of the stored and re-mined lists), ``ranking`` (the same measure
        over the miner's ranking to the pool's depth, stored against re-searched), ``exact_drift`` (for an
        approximate index: the re-mined list against an exact search's; else None), ``notes``, and
        ``reproduced``: no input changed and every query's overlap is 1.0.
    """
    paths = input_paths(card, results)
    changes = check_inputs(card, paths)
    listed = check_list(card, paths["list"])
    changed = [str(change) for change in changes] + ([str(listed)] if listed else [])
    report = {
        "run": card["run"],
        "list": {**card["list"], "path": str(paths["list"])},
        "inputs_checked": len(card["inputs"]),
        "changed": changed,
        "remined": False,
        "index": {"factory": card["search"].get("factory"), "exact": None},
        "overlap": None,
        "ranking": None,
        "exact_drift": None,
        "notes": [],
        "reproduced": False,
    }
    missing = [change.name for change in changes if change.current is None] + (
        ["list"] if listed is not None and listed.current is None else []
    )
    if missing:
        report["notes"].append(f"not mined again: {', '.join(missing)} missing")
        return report
    if not remine_list:
        report["reproduced"] = not changed
        return report
    stored = artifacts.read_table(artifacts.HARDNEGS, paths["list"])  # read first: an unreadable one stops here
    depth = card["pool"]["depth"]
    stored_ranking = artifacts.read_table(artifacts.RANKING, paths["ranking"])
    again = remine(card, lambda name: paths[name], score_pairs=score_pairs, device=device)
    report.update(
        remined=True,
        index={"factory": card["search"].get("factory"), "exact": again.exact},
        overlap=overlap(stored, again.negatives),
        ranking=overlap(
            stored_ranking.filter(pc.less_equal(stored_ranking["rank"], depth)),
            again.ranking.filter(pc.less_equal(again.ranking["rank"], depth)),
        ),
        notes=again.notes,
    )
    if again.exact_negatives is not None:
        report["exact_drift"] = overlap(again.exact_negatives, again.negatives)
    report["reproduced"] = not changed and report["overlap"]["below_one"] == 0
    return report


def _measure(result: Mapping) -> str:
    return (
        f"mean {result['mean']:.4f}, min {result['min']:.4f}, {result['below_one']} of {result['queries']} "
        f"queries below 1.0; same order in {result['same_order']} of {result['queries']}"
    )


def format_report(report: Mapping, card: Mapping) -> str:
    """The report of :func:`verify` as a few lines of text for a person."""
    listed = report["list"]
    policy = card["policy"]["name"] or "the run's own policy keys"
    lines = [
        f"run {report['run']}: hard negatives {listed['path']} ({listed['rows']} rows, "
        f"{listed.get('queries', '?')} queries), mined by {card['miner']} from split {card['split']} of "
        f"{card['dataset']}"
    ]
    lines += checked_lines(report, "inputs")
    if report["remined"]:
        kind = "exact" if report["index"]["exact"] else "approximate"
        lines.append(
            f"re-mined with index {report['index']['factory']} ({kind}) of run "
            f"{card['search'].get('doc_run', card['miner'])}, pool {card['pool']['name']}, policy {policy}, "
            f"seed {card['seed']}:"
        )
        lines.append(f"  overlap with the stored list: {_measure(report['overlap'])}")
        lines.append(f"  the miner's ranking to depth {card['pool']['depth']}: {_measure(report['ranking'])}")
        if report["exact_drift"] is not None:
            lines.append(
                f"  drift of the {report['index']['factory']} negatives from an exact search's: "
                f"{_measure(report['exact_drift'])}"
            )
    return "\n".join(lines + verdict_lines(report))


def checked_lines(report: Mapping, what: str, checked: str = "") -> list[str]:
    """The lines of a verify report on its recorded files (``what``: "inputs", "files"; ``checked``: which they
    are, said when none changed): how many were checked, and each that changed."""
    if report["changed"]:
        return [
            f"{what}: {report['inputs_checked']} checked, {len(report['changed'])} changed:",
            *(f"  {line}" for line in report["changed"]),
        ]
    return [f"{what}: {report['inputs_checked']} checked{f' ({checked})' if checked else ''}, none changed"]


def verdict_lines(report: Mapping) -> list[str]:
    """The closing lines of a verify report: its notes, then whether the list was reproduced."""
    return [f"note: {note}" for note in report["notes"]] + [f"reproduced: {'yes' if report['reproduced'] else 'no'}"]
