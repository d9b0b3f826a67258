"""What a dataset adapter declares: how it reads a config entry of its kind (``adapter: <name>``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hardneg.datasets.canonical import Dataset


@dataclass(frozen=True)
class Adapter:
    """One source format. ``splits`` gives the split names a config entry declares, in order; ``input_files`` the
    raw files the dataset is prepared from (editing one re-prepares it); ``load`` the canonical
    :class:`~hardneg.datasets.canonical.Dataset` from a validated entry. A file-based adapter names the key holding
    its per-split query files (``query_files``); every such split needs its qrels file under ``qrels``.

    An adapter that generates its data from a seed (``seeded``) takes the config's global ``seed`` when its entry
    gives none. ``check`` is called with a validated entry (and its dotted key) when the config is checked, for
    what the schema cannot say, raising a :class:`~hardneg.errors.ConfigError` naming the key; ``num_docs`` gives
    the number of documents when the entry alone tells it (None otherwise: known once the data is read)."""

    name: str
    splits: Callable[[dict], list[str]]
    load: Callable[[dict], Dataset]
    input_files: Callable[[dict], list[str]] = lambda cfg: []
    query_files: str | None = None
    seeded: bool = False
    check: Callable[[dict, str], None] | None = None
    num_docs: Callable[[dict], int | None] = lambda cfg: None
