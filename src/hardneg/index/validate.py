"""Faiss index settings checked when the configuration is validated, before any job runs.

Every index factory string a config uses (a dense run's ``index.factory``, the index a method trains against such as
ADORE's ``adore.index``, and those an experiment builds, its declaration's ``factory_uses``) is parsed by Faiss
itself for the dimension of the embeddings it will index, so a typo (``Flatt``) or a product quantizer that does not
divide the dimension (``PQ7`` on 32 dimensions) is a :class:`~hardneg.errors.ConfigError` naming the key, not a
Faiss error after training.

The dimension comes from the model settings of the run whose documents are indexed: ``projection_dim`` when set,
else the built-in model's ``hidden_size``, else the ``hidden_size`` in the ``config.json`` of a local model folder
(or of a hub model already in the Hugging Face cache). A hub model not available offline leaves the dimension
unknown: the factory string is then only parsed.

**Training-set rule.** Faiss trains an index by k-means: IVF<n> clusters into n lists, and a product quantizer
PQ<m>x<b> (and OPQ's rotation) into 2^b centroids per part (256 by default). k-means needs at least one training
vector per centroid, so an index needs at least as many training vectors as its largest k-means; fewer is an
error. Faiss asks for 39 vectors per centroid and warns below that; hardneg builds such an index and logs a
warning. The training vectors are ``min(index.train_size, documents)`` (``train_size`` null: every document up to
100,000, or 64 per IVF list when that is more). The number of documents is known at config time for the
synthetic adapter (``num_docs``); for other datasets the same rule is checked when the index is built, before
Faiss trains.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from hardneg.errors import ConfigError

# Faiss's k-means asks for this many training vectors per centroid and warns below it.
FAISS_POINTS_PER_CENTROID = 39
# With a null index.train_size an index trains on every document up to this many (the config check and the build
# apply the same rule), or on up to TRAIN_VECTORS_PER_LIST vectors per list of an IVF index (some margin over 39)
# when that is more.
DEFAULT_TRAIN_SIZE = 100_000
TRAIN_VECTORS_PER_LIST = 64
# OPQ trains its rotation with an 8-bit product quantizer.
_OPQ_CENTROIDS = 256
# Dimensions tried when the model's is unknown: a factory string that parses for none of them is malformed.
_COMMON_DIMS = (768, 1024, 384, 512, 256)
_FACTORY_EXAMPLES = "e.g. Flat, PQ32, OPQ32,PQ32, IVF1024,PQ32, IVF1024,Flat, HNSW32"


# ------------------------------------------------------------------------------------------- faiss errors
def faiss_message(exc: BaseException) -> str:
    """Faiss's own explanation without the C++ function signature and source location."""
    text = str(exc).strip()
    text = re.sub(r"^Error in .*? at \S+:\d+: ", "", text, flags=re.DOTALL)
    text = re.sub(r"^Error: '(.*?)' failed: ", "", text)
    return re.sub(r"^Error: '(.*?)' failed$", r"\1 does not hold", text)


def _dimension_problem(factory: str, dim: int) -> str | None:
    """Name the first product quantizer of ``factory`` whose number of parts does not divide the dimension of the
    vectors it receives (the model's, or what a PCA/OPQ/RR/Pad transform before it makes of them)."""
    current, transform = dim, None
    for token in factory.split(","):
        token = token.strip()
        for match in re.finditer(r"(?<![A-Za-z])PQ(\d+)", token):
            parts = int(match.group(1))
            if parts and current % parts:
                where = (
                    f"the model's embeddings have {dim}"
                    if transform is None
                    else f"after {transform} the vectors have {current} (the model's embeddings have {dim})"
                )
                return f"PQ{parts} needs a dimension divisible by {parts}; {where}"
        resized = re.fullmatch(r"(?:OPQ\d+_|PCAR?W?|RR|ITQ|Pad)(\d+)", token)
        if resized:
            current, transform = int(resized.group(1)), token
    return None


def describe_factory_error(factory: str, dim: int | None, exc: BaseException) -> str:
    """A one-line explanation of why Faiss cannot build ``factory`` for ``dim``-dimensional vectors."""
    detail = faiss_message(exc)
    if detail.startswith("could not parse index string"):
        return f"'{factory}' is not a Faiss index factory string ({_FACTORY_EXAMPLES})"
    if dim is not None:
        problem = _dimension_problem(factory, dim)
        if problem is not None:
            return problem
    if "METRIC_L2" in detail:
        return f"'{factory}' does not support the inner-product metric every hardneg index uses"
    where = f" for {dim}-dimensional embeddings" if dim is not None else ""
    return f"Faiss cannot build '{factory}'{where}: {detail}"


def _index_factory(dim: int, factory: str):
    import faiss  # Faiss: imported only where an index is built or searched

    return faiss.index_factory(dim, factory, faiss.METRIC_INNER_PRODUCT)


# --------------------------------------------------------------------------------------- training vectors
def kmeans_sizes(index) -> list[tuple[int, str]]:
    """(centroids, what they are) of every k-means Faiss runs to train ``index``: IVF lists, product-quantizer
    centroids, OPQ's rotation. Empty for an index that needs no k-means (Flat, HNSW, SQ)."""
    import faiss  # Faiss: imported only where an index is built or searched

    index = faiss.downcast_index(index)
    sizes: list[tuple[int, str]] = []
    if isinstance(index, faiss.IndexPreTransform):
        chain = index.chain
        for position in range(chain.size()):  # type: ignore[attr-defined]  # a SWIG vector; faiss's stub: a list
            transform = chain.at(position)  # type: ignore[attr-defined]  # a SWIG vector; faiss's stub: a list
            if isinstance(faiss.downcast_VectorTransform(transform), faiss.OPQMatrix):
                sizes.append((_OPQ_CENTROIDS, "one per centroid of the 8-bit product quantizer OPQ trains with"))
        return sizes + kmeans_sizes(index.index)
    if isinstance(index, faiss.IndexIVF):
        sizes.append((int(index.nlist), f"one per inverted list of IVF{index.nlist}"))
        sizes += kmeans_sizes(index.quantizer)
    elif isinstance(index, faiss.IndexHNSW):
        return kmeans_sizes(index.storage)
    elif isinstance(index, faiss.IndexRefine):
        return kmeans_sizes(index.base_index)
    elif isinstance(index, faiss.IndexIDMap):
        return kmeans_sizes(index.index)
    pq = getattr(index, "pq", None)
    if isinstance(pq, faiss.ProductQuantizer):
        sizes.append((int(pq.ksub), f"one per centroid of its {pq.nbits}-bit product quantizer"))
    return sizes


def needed_training_vectors(index) -> tuple[int, str]:
    """(how many training vectors ``index`` needs at least, why); (0, "") when it needs no k-means."""
    return max(kmeans_sizes(index), key=lambda size: size[0], default=(0, ""))


def default_train_size(index, num_docs: int, default: int) -> int:
    """The training vectors used when ``index.train_size`` is null: every document up to ``default``, or up to
    64 per IVF list when that is more."""
    import faiss  # Faiss: imported only where an index is built or searched

    ivf = faiss.try_extract_index_ivf(index)
    wanted = default if ivf is None else max(default, TRAIN_VECTORS_PER_LIST * ivf.nlist)
    return min(num_docs, wanted)


def too_few_training_vectors(factory: str, index, num_docs: int, train_size: int | None, default: int) -> str | None:
    """Why ``index`` (built from ``factory``) cannot be trained over ``num_docs`` documents with ``train_size``,
    or None when it can (see the module docstring for the rule)."""
    needed, reason = needed_training_vectors(index)
    if not needed:
        return None
    size = default_train_size(index, num_docs, default) if train_size is None else min(int(train_size), num_docs)
    if size >= needed:
        return None
    if train_size is not None and train_size < needed <= num_docs:
        return f"'{factory}' needs at least {needed} training vectors ({reason}); index.train_size is {train_size}"
    return f"'{factory}' needs at least {needed} training vectors ({reason}); the corpus has {num_docs} documents"


# ------------------------------------------------------------------------------------------ dimensions
def embedding_dim(model: dict) -> int | None:
    """The dimension of the embeddings a run's ``params.model`` produces; None when it cannot be known offline."""
    if model.get("projection_dim"):
        return int(model["projection_dim"])
    name = model.get("name", "builtin")
    if name == "builtin":
        return int(model["builtin"]["hidden_size"])
    local = Path(name) / "config.json"
    config_file = local if local.is_file() else _cached_hub_config(name)
    if config_file is None:
        return None
    try:
        settings = json.loads(Path(config_file).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    for key in ("hidden_size", "dim", "d_model"):  # BERT-like, DistilBERT, T5-like
        if isinstance(settings.get(key), int) and settings[key] > 0:
            return settings[key]
    return None


def _cached_hub_config(name: str) -> str | None:
    """The ``config.json`` of hub model ``name`` when the Hugging Face cache already holds it (no download)."""
    try:
        from huggingface_hub import try_to_load_from_cache  # huggingface_hub: imported only to look up a hub model

        found = try_to_load_from_cache(name, "config.json")
    except Exception:  # not a valid repository id, no huggingface_hub: the dimension stays unknown
        return None
    return found if isinstance(found, str) else None


# ---------------------------------------------------------------------------------------------- checks
def check_factory(
    factory: str,
    key: str,
    *,
    dim: int | None,
    num_docs: int | None = None,
    train_size: int | None = None,
    default_train_size: int = 100_000,
):
    """Check that Faiss can build ``factory`` for ``dim``-dimensional embeddings (None: unknown, so only parse it
    with common dimensions) and, when ``num_docs`` is known, train it; raise :class:`ConfigError` naming ``key``
    otherwise. Returns the empty index Faiss built, or None when no common dimension suits it."""
    if not isinstance(factory, str) or not factory.strip():
        raise ConfigError(key, f"must be a Faiss index factory string ({_FACTORY_EXAMPLES}), got {factory!r}")
    if factory != factory.strip():
        raise ConfigError(key, f"'{factory}' has spaces around it; write '{factory.strip()}'")
    if dim is None:
        # The model's dimension is unknown: parse with common ones. The k-means sizes do not depend on it.
        errors, index = [], None
        for candidate in _COMMON_DIMS:
            try:
                index = _index_factory(candidate, factory)
                break
            except RuntimeError as exc:
                errors.append(exc)
        if index is None:
            if faiss_message(errors[0]).startswith("could not parse index string"):
                raise ConfigError(key, describe_factory_error(factory, None, errors[0]))
            return None  # it may suit the model's unknown dimension
    else:
        try:
            index = _index_factory(dim, factory)
        except RuntimeError as exc:
            raise ConfigError(key, describe_factory_error(factory, dim, exc)) from None
    if num_docs is not None:
        problem = too_few_training_vectors(factory, index, num_docs, train_size, default_train_size)
        if problem is not None:
            raise ConfigError(key, problem)
    return index
