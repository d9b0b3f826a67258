"""Duplicate documents of a corpus: exact (the same normalised text) and near (MinHash LSH over word shingles).

Hard-negative mining can exclude a negative that duplicates one of its query's positives: MS MARCO, for one,
holds many copies of the same passage, and such a copy mined as a negative is a false negative. The duplicates
are found once per corpus (:func:`find_duplicates`, the stage :func:`duplicates_stage`) as a DUPLICATES table;
:func:`flag_duplicates_of_positives` then marks the candidates of a query that duplicate one of its positives.

* Exact: documents whose normalised text (:func:`normalise_text`) has the same SHA-256 digest.
* Near: documents of different exact groups whose sets of word shingles (:func:`shingles`) have a Jaccard
  similarity of at least the threshold. MinHash LSH (the ``datasketch`` library) only proposes candidate pairs;
  every candidate's Jaccard similarity is then computed exactly from the two shingle sets, and pairs below the
  threshold (LSH's false positives) are dropped. LSH can miss a pair above the threshold (a false negative), with
  a probability that falls as ``num_perm`` grows.

Documents whose normalised text is empty (no title and no text, or nothing but punctuation) are never duplicates.
The result depends only on the corpus's documents, not on their row order.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
import sys
import unicodedata

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hardneg.io import artifacts, logs

log = logging.getLogger(__name__)

EXACT = "exact"
NEAR = "near"
BATCH_ROWS = 1 << 16  # corpus rows normalised at a time: bounds the Python strings alive at once
PAIR_CHUNK = 1 << 16  # LSH candidate pairs verified at a time: bounds the shingle sets alive at once
# The LSH index's (false positive, false negative) weights when datasketch tunes its bands to the threshold. Every
# candidate is verified exactly, so a false positive costs only time, while a miss loses a pair: at a threshold of
# 0.8 (128 permutations) the default (0.5, 0.5) proposes a pair of similarity 0.85 with probability 0.69, these
# weights with 0.97 (and a pair of 0.7, later dropped, with 0.44).
LSH_WEIGHTS = (0.1, 0.9)
_SCHEME = "affine32"  # datasketch's MinHash scheme, named so that a change of its default cannot change results


# ------------------------------------------------------------------------------------------------ text
@functools.cache
def _punctuation_table() -> dict[int, str]:
    """Every Unicode punctuation code point (general category P*) mapped to a space; built once per process
    (about a second: it scans every code point)."""
    return {code: " " for code in range(sys.maxunicode + 1) if unicodedata.category(chr(code)).startswith("P")}


def normalise_text(title: str | None, text: str | None) -> str:
    """The text of a document as compared for duplicates.

    Steps, in order: the title and the text are joined with a space (a missing or empty title or text counts as
    empty); Unicode NFKC normalisation (compatibility forms such as ligatures and full-width letters become their
    plain letters); case folding (``str.casefold``, so ``Straße`` and ``STRASSE`` agree); every punctuation
    character (Unicode general category P*: ``.,;:!?'"()[]-_/`` and their non-ASCII kin) becomes a space;
    runs of white space collapse to one space, none at either end. Symbols (category S*, e.g. ``$``, ``+``) and
    digits are kept.

    :param title: the document's title, or None.
    :param text: the document's text, or None.
    :returns: the normalised text: words separated by single spaces; empty when the document has no word.
    """
    joined = f"{title or ''} {text or ''}"
    folded = unicodedata.normalize("NFKC", joined).casefold()
    return " ".join(folded.translate(_punctuation_table()).split())


def shingles(normalised: str, size: int) -> set[str]:
    """The word shingles (word ``size``-grams) of a normalised text (:func:`normalise_text`).

    :param normalised: words separated by white space.
    :param size: words per shingle, 1 or more.
    :returns: the set of shingles, each its words joined by one space; a text of fewer than ``size`` words gives
        one shingle of all its words, an empty text the empty set.
    :raises ValueError: ``size`` below 1.
    """
    if size < 1:
        raise ValueError(f"shingle size must be 1 or more, not {size}")
    words = normalised.split()
    if len(words) <= size:
        return {" ".join(words)} if words else set()
    return {" ".join(words[i : i + size]) for i in range(len(words) - size + 1)}


def _band_key(band: bytes) -> bytes:
    """An LSH band's bucket key: 8 bytes of BLAKE2b instead of the band's 4 bytes per hash value, which shrinks the
    index several times; a rare collision only adds a candidate, and candidates are verified exactly."""
    return hashlib.blake2b(band, digest_size=8).digest()


def _jaccard(a: set[str], b: set[str]) -> float:
    """|a ∩ b| / |a ∪ b| of two non-empty sets."""
    common = len(a & b) if len(a) <= len(b) else len(b & a)  # iterates the smaller set
    return common / (len(a) + len(b) - common)


# ------------------------------------------------------------------------------------------------ finding
def _check_options(threshold: float, num_perm: int, shingle_size: int) -> None:
    if not 0.0 < threshold <= 1.0:
        raise ValueError(f"duplicate threshold must be in (0, 1], not {threshold}")
    if num_perm < 2:
        raise ValueError(f"num_perm must be 2 or more, not {num_perm}")
    if shingle_size < 1:
        raise ValueError(f"shingle size must be 1 or more, not {shingle_size}")


def _normalised_batches(corpus: pa.Table):
    """(first row, normalised texts) for each block of :data:`BATCH_ROWS` rows of ``corpus``, in row order."""
    for start in range(0, corpus.num_rows, BATCH_ROWS):
        block = corpus.slice(start, BATCH_ROWS)
        titles, texts = block.column("title").to_pylist(), block.column("text").to_pylist()
        yield start, [normalise_text(title, text) for title, text in zip(titles, texts)]


def _exact_groups(corpus: pa.Table) -> np.ndarray:
    """Per row, the code of its exact group (rows with the same normalised text share one); -1 for an empty
    document. Codes are arbitrary integers (they follow row order); only their equality means anything."""
    digests: list[pa.Array] = []
    for start, texts in _normalised_batches(corpus):
        # 32-byte digests rather than the texts: memory per document is fixed, whatever its length
        digests.append(
            pa.array([hashlib.sha256(t.encode("utf-8")).digest() if t else None for t in texts], pa.binary(32))
        )
        logs.progress(
            log,
            "duplicates: hashed %d of %d documents",
            start + len(texts),
            corpus.num_rows,
            done=start + len(texts),
            total=corpus.num_rows,
        )
    if not digests:
        return np.zeros(0, np.int64)
    codes = pc.dictionary_encode(pa.concat_arrays(digests)).indices
    return pc.fill_null(codes, -1).to_numpy(zero_copy_only=False).astype(np.int64)


def _group_runs(groups: np.ndarray, docids: pa.Array) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The non-empty rows sorted by (group, docid), and the start and length of each group's run in that order.

    :returns: (rows, starts, sizes): ``rows`` int64 row numbers; the first row of each run is the group's
        smallest docid, its representative.
    """
    keep = np.flatnonzero(groups >= 0)
    keyed = pa.table({"g": groups[keep], "docid": docids.take(pa.array(keep, pa.int64())), "row": keep})
    keyed = keyed.sort_by([("g", "ascending"), ("docid", "ascending")])
    rows = keyed["row"].to_numpy()
    sorted_groups = keyed["g"].to_numpy()
    if len(rows) == 0:
        return rows, np.zeros(0, np.int64), np.zeros(0, np.int64)
    starts = np.flatnonzero(np.r_[True, sorted_groups[1:] != sorted_groups[:-1]])
    sizes = np.diff(np.r_[starts, len(rows)])
    return rows, starts, sizes


def _pairs_within(starts: np.ndarray, sizes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every pair (i, j), i < j, of positions within the same run (runs given by start and size): k(k-1)/2 per
    run of k, built with NumPy arithmetic, without a loop over runs."""
    big = sizes >= 2
    starts, sizes = starts[big], sizes[big]
    # position p, the t-th of its run of k, pairs with the k-1-t positions after it
    positions = np.repeat(starts, sizes) + _ranks_within(sizes)
    after = np.repeat(sizes, sizes) - 1 - _ranks_within(sizes)
    left = np.repeat(positions, after)
    right = left + 1 + _ranks_within(after)
    return left, right


def _ranks_within(counts: np.ndarray) -> np.ndarray:
    """0, 1, ..., c-1 for each count c, concatenated."""
    total = int(counts.sum())
    return np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(counts) - counts, counts)


def _lsh_candidates(
    corpus: pa.Table, is_rep: np.ndarray, *, threshold: float, num_perm: int, shingle_size: int, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """Candidate pairs of representative rows proposed by MinHash LSH, each once as (earlier row, later row).

    Each representative is queried against those indexed before it and then indexed itself, so the corpus is
    read once, in row order, and only the LSH index (a few band hashes per document) is kept. The set of pairs
    is the pairs that share a band, whatever the order."""
    from datasketch import MinHash, MinHashLSH  # datasketch: imported only where duplicates are searched

    try:
        lsh = MinHashLSH(threshold=threshold, num_perm=num_perm, weights=LSH_WEIGHTS, hashfunc=_band_key)
    except ValueError:
        # a threshold near 1 tunes to a single band, which datasketch refuses (the options are checked already):
        # two bands still propose every pair of identical shingle sets, and more besides, verified anyway
        lsh = MinHashLSH(num_perm=num_perm, params=(2, num_perm // 2), hashfunc=_band_key)
    # one MinHash, cleared for each document: its permutations are drawn once, and the index keeps only the band
    # hashes it computes at insertion, not the MinHash
    minhash = MinHash(num_perm=num_perm, seed=seed, scheme=_SCHEME)
    left: list[int] = []
    right: list[int] = []
    total = int(is_rep.sum())
    done = 0
    for start, texts in _normalised_batches(corpus):
        for offset in np.flatnonzero(is_rep[start : start + len(texts)]):
            row = start + int(offset)
            minhash.clear()
            minhash.update_batch([s.encode("utf-8") for s in shingles(texts[offset], shingle_size)])
            for other in lsh.query(minhash):
                left.append(other)
                right.append(row)
            lsh.insert(row, minhash, check_duplication=False)
            done += 1
        logs.progress(
            log,
            "duplicates: indexed %d of %d distinct documents, %d candidate pairs",
            done,
            total,
            len(left),
            done=done,
            total=total,
        )
    return np.asarray(left, np.int64), np.asarray(right, np.int64)


def _verified(
    corpus: pa.Table, left: np.ndarray, right: np.ndarray, *, threshold: float, shingle_size: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The candidate pairs whose true Jaccard similarity of shingle sets is at least ``threshold``.

    :returns: (left, right, similarity) of the kept pairs, similarity as float64.
    """
    order = np.lexsort((right, left))  # pairs of one document together: its shingles built once per chunk
    left, right = left[order], right[order]
    keep = np.zeros(len(left), bool)
    similarity = np.zeros(len(left), np.float64)
    for lo in range(0, len(left), PAIR_CHUNK):
        hi = min(lo + PAIR_CHUNK, len(left))
        rows = np.unique(np.r_[left[lo:hi], right[lo:hi]])
        block = corpus.take(pa.array(rows))
        sets = {
            int(row): shingles(normalise_text(title, text), shingle_size)
            for row, title, text in zip(rows, block.column("title").to_pylist(), block.column("text").to_pylist())
        }
        for i in range(lo, hi):
            value = _jaccard(sets[int(left[i])], sets[int(right[i])])
            similarity[i] = value
            keep[i] = value >= threshold
        logs.progress(log, "duplicates: verified %d of %d candidate pairs", hi, len(left), done=hi, total=len(left))
    return left[keep], right[keep], similarity[keep]


def _pair_table(docids: pa.Array, a: np.ndarray, b: np.ndarray, kind: str, similarity: np.ndarray) -> pa.Table:
    """DUPLICATES rows for row pairs (a, b), each turned so that docid < duplicate."""
    first, second = docids.take(pa.array(a, pa.int64())), docids.take(pa.array(b, pa.int64()))
    smaller = pc.less(first, second)
    return pa.table(
        {
            "docid": pc.if_else(smaller, first, second),
            "duplicate": pc.if_else(smaller, second, first),
            "kind": pa.array([kind] * len(a), pa.string()),
            "similarity": pa.array(similarity, pa.float32()),
        },
        schema=artifacts.DUPLICATES.schema,
    )


def find_duplicates(
    corpus: pa.Table, *, threshold: float = 0.8, num_perm: int = 128, shingle_size: int = 3, seed: int = 1
) -> pa.Table:
    """The exact and near duplicate pairs of a corpus.

    Exact: documents with the same normalised text (:func:`normalise_text`; compared by SHA-256 digest), every
    pair within each such group (a group of k gives k(k-1)/2 pairs). Near: documents of different exact groups
    whose shingle sets (:func:`shingles` of ``shingle_size`` words) have a Jaccard similarity (|A ∩ B| / |A ∪ B|)
    of at least ``threshold``. One representative per exact group (its smallest docid) goes into a ``datasketch``
    MinHash LSH index; each pair of representatives it proposes is verified with the exact Jaccard similarity and
    dropped below ``threshold``; a kept pair stands for every pair of a member of one group with a member of the
    other, all with its similarity. LSH may miss a near pair, mostly pairs just above the threshold (fewer misses
    with more ``num_perm``; the index is tuned for recall, :data:`LSH_WEIGHTS`); no pair below the threshold is
    ever reported. Documents with an empty normalised text are never paired.

    The corpus is normalised block by block (:data:`BATCH_ROWS` rows), three times over (digests; MinHash; the
    candidates' shingles), so that no Python object per document outlives its block; what stays is one digest
    per document, the LSH index of the representatives and the candidate pairs.

    :param corpus: a CORPUS table (``docid``, ``title``, ``text``); docids unique and not null.
    :param threshold: the least Jaccard similarity of a near pair, in (0, 1]; also the threshold the LSH index is
        tuned for.
    :param num_perm: MinHash permutations (hash functions), 2 or more.
    :param shingle_size: words per shingle, 1 or more.
    :param seed: the seed of the MinHash permutations; with the same options the result is the same.
    :returns: a DUPLICATES table: ``docid``, ``duplicate`` (string, docid < duplicate in string order), ``kind``
        (``"exact"`` or ``"near"``) and ``similarity`` (float32: 1.0 for exact pairs, the Jaccard similarity for
        near ones); each unordered pair once, rows sorted by (docid, duplicate). The same table whatever the
        corpus's row order.
    :raises ValueError: an option out of range, or docids that are null or not unique.
    """
    _check_options(threshold, num_perm, shingle_size)
    corpus = corpus.select(["docid", "title", "text"])
    docids = artifacts.string_array(corpus.column("docid"))
    if docids.null_count or pc.count_distinct(docids).as_py() != len(docids):
        raise ValueError("corpus docids must be unique and not null")

    groups = _exact_groups(corpus)
    rows, starts, sizes = _group_runs(groups, docids)
    left, right = _pairs_within(starts, sizes)
    exact = _pair_table(docids, rows[left], rows[right], EXACT, np.ones(len(left)))

    is_rep = np.zeros(corpus.num_rows, bool)
    is_rep[rows[starts]] = True
    cand_left, cand_right = _lsh_candidates(
        corpus, is_rep, threshold=threshold, num_perm=num_perm, shingle_size=shingle_size, seed=seed
    )
    near_left, near_right, similarity = _verified(
        corpus, cand_left, cand_right, threshold=threshold, shingle_size=shingle_size
    )
    near = _expand_to_members(docids, groups, rows, starts, sizes, near_left, near_right, similarity)
    pairs = pa.concat_tables([exact, near])
    return pairs.sort_by([("docid", "ascending"), ("duplicate", "ascending")]).combine_chunks()


def _expand_to_members(
    docids: pa.Array,
    groups: np.ndarray,
    rows: np.ndarray,
    starts: np.ndarray,
    sizes: np.ndarray,
    rep_a: np.ndarray,
    rep_b: np.ndarray,
    similarity: np.ndarray,
) -> pa.Table:
    """Near pairs of representatives as the pairs of every member of one's group with every member of the
    other's, with the representatives' similarity."""
    # run index of each representative's group: a map from group code to run
    run_of_group = np.full(int(groups.max()) + 1 if len(groups) else 0, -1, np.int64)
    run_of_group[groups[rows[starts]]] = np.arange(len(starts))
    run_a, run_b = run_of_group[groups[rep_a]], run_of_group[groups[rep_b]]
    # pair p expands to sizes[run_a] * sizes[run_b] pairs: member i of a's run with member j of b's run
    count = sizes[run_a] * sizes[run_b]
    pair = np.repeat(np.arange(len(rep_a)), count)
    index = _ranks_within(count)
    width = sizes[run_b][pair]
    a = rows[starts[run_a][pair] + index // width]
    b = rows[starts[run_b][pair] + index % width]
    return _pair_table(docids, a, b, NEAR, similarity[pair])


# ------------------------------------------------------------------------------------------------ looking up
def duplicate_partners(duplicates: pa.Table) -> pa.Table:
    """Every pair of a DUPLICATES table in both directions, for lookups by either document.

    :param duplicates: a DUPLICATES table (each pair once, docid < duplicate); a table already in both
        directions (this function's result) gives the same result again.
    :returns: a table of the DUPLICATES schema (``docid``, ``duplicate``, ``kind``, ``similarity``) holding each
        pair twice, as (a, b) and (b, a), sorted by (docid, duplicate): the rows of a document's ``docid`` list
        all its duplicates.
    """
    duplicates = duplicates.select(artifacts.DUPLICATES.schema.names).cast(artifacts.DUPLICATES.schema)
    # only the docid < duplicate rows: a table already in both directions is not doubled again
    once = duplicates.filter(pc.less(duplicates["docid"], duplicates["duplicate"]))
    turned = pa.table(
        {
            "docid": once["duplicate"],
            "duplicate": once["docid"],
            "kind": once["kind"],
            "similarity": once["similarity"],
        },
        schema=artifacts.DUPLICATES.schema,
    )
    both = pa.concat_tables([once, turned])
    return both.sort_by([("docid", "ascending"), ("duplicate", "ascending")]).combine_chunks()


def flag_duplicates_of_positives(
    duplicates: pa.Table, candidates_qid, candidates_docid, positives_qrels: pa.Table
) -> tuple[pa.Array, pa.Array]:
    """For each candidate (query, document), a judged positive of the same query that the document duplicates.

    :param duplicates: a DUPLICATES table, or its :func:`duplicate_partners` (either works).
    :param candidates_qid: the query id of each candidate (a list, NumPy array, or Arrow array).
    :param candidates_docid: the document id of each candidate, as long as ``candidates_qid``.
    :param positives_qrels: a QRELS table (``qid``, ``docid``, ``relevance``); its rows with relevance >= 1 are
        the positives.
    :returns: (duplicate_of, duplicate_kind), two string arrays as long as the candidates: per candidate, a
        positive of its query that its document duplicates and the pair's kind (``"exact"`` or ``"near"``), or
        null and null. Among several such positives, an exact duplicate comes before a near one, then the smallest
        positive docid. A duplicate of another query's positive does not count.
    :raises ValueError: the two candidate columns differ in length.
    """
    qids, docids = artifacts.string_array(candidates_qid), artifacts.string_array(candidates_docid)
    if len(qids) != len(docids):
        raise ValueError(f"candidates_qid has {len(qids)} values, candidates_docid {len(docids)}")
    n = len(qids)
    partners = duplicate_partners(duplicates)
    positives = positives_qrels.filter(pc.greater_equal(positives_qrels["relevance"], 1))
    positives = pa.table(
        {"qid": artifacts.string_array(positives["qid"]), "positive": artifacts.string_array(positives["docid"])}
    )
    # (query, positive) ↔ (positive, partner): the documents that duplicate a positive, per query
    flagged = positives.join(
        pa.table(
            {
                "positive": partners["docid"],
                "docid": partners["duplicate"],
                "exact_first": pc.if_else(pc.equal(partners["kind"], EXACT), 0, 1).cast(pa.int8()),
            }
        ),
        keys="positive",
        join_type="inner",
    )
    # only candidates whose document duplicates some positive can match: the join below sees only those
    maybe = np.flatnonzero(pc.is_in(docids, value_set=pc.unique(flagged["docid"])).to_numpy(zero_copy_only=False))
    candidates = pa.table(
        {
            "row": pa.array(maybe, pa.int64()),
            "qid": qids.take(pa.array(maybe, pa.int64())),
            "docid": docids.take(pa.array(maybe, pa.int64())),
        }
    )
    matches = candidates.join(flagged, keys=["qid", "docid"], join_type="inner")
    matches = matches.sort_by([("row", "ascending"), ("exact_first", "ascending"), ("positive", "ascending")])
    row = matches["row"].to_numpy()
    first = np.flatnonzero(np.r_[True, row[1:] != row[:-1]]) if len(row) else np.zeros(0, np.int64)
    # candidate row -> its chosen match (index into matches), null where it has none
    pick = np.full(n, -1, np.int64)
    pick[row[first]] = first
    take = pa.array(pick, pa.int64(), mask=pick < 0)
    positive = matches["positive"].combine_chunks()
    kind = pc.if_else(pc.equal(matches["exact_first"].combine_chunks(), 0), EXACT, NEAR)
    duplicate_of = positive.take(take) if len(positive) else pa.nulls(n, pa.string())
    duplicate_kind = kind.take(take) if len(kind) else pa.nulls(n, pa.string())
    return duplicate_of, duplicate_kind


# ------------------------------------------------------------------------------------------------ the stage
def duplicates_stage(
    corpus_path: str | os.PathLike,
    duplicates_path: str | os.PathLike,
    *,
    threshold: float = 0.8,
    num_perm: int = 128,
    shingle_size: int = 3,
    seed: int = 1,
) -> int:
    """Stage function: :func:`find_duplicates` of a CORPUS Parquet file, written as a DUPLICATES Parquet file.

    :param corpus_path: the CORPUS Parquet file.
    :param duplicates_path: the DUPLICATES Parquet file to write (atomically).
    :param threshold: as in :func:`find_duplicates`.
    :param num_perm: as in :func:`find_duplicates`.
    :param shingle_size: as in :func:`find_duplicates`.
    :param seed: as in :func:`find_duplicates`.
    :returns: the number of pairs written (rows of the file).
    :raises DataError: the corpus file is missing or does not match its schema.
    :raises ValueError: an option out of range, or docids that are null or not unique.
    """
    corpus = artifacts.read_table(artifacts.CORPUS, corpus_path)
    pairs = find_duplicates(corpus, threshold=threshold, num_perm=num_perm, shingle_size=shingle_size, seed=seed)
    artifacts.write_table(pairs, artifacts.DUPLICATES, duplicates_path)
    exact = pc.sum(pc.equal(pairs["kind"], EXACT)).as_py() or 0
    logs.progress(
        log,
        "duplicates: %d documents, %d exact pairs, %d near pairs (threshold %s, num_perm %d, shingle_size %d, seed %d)",
        corpus.num_rows,
        exact,
        pairs.num_rows - exact,
        threshold,
        num_perm,
        shingle_size,
        seed,
        last=True,
    )
    return pairs.num_rows
