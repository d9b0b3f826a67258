"""The rule every file-based dataset shares: each split names both its query file and its qrels file."""

from __future__ import annotations

from hardneg.errors import ConfigError


def check_query_and_qrels_files(cfg: dict, queries_key: str, where: str = "dataset") -> None:
    """Check that every split under ``cfg[queries_key]`` has a file under ``cfg["qrels"]`` and the other way round.

    The canonical form has qrels for every split (training and evaluation read them, and ``judged_only`` keeps
    the judged queries), so a split with only one of the two is a :class:`ConfigError` naming the missing key,
    e.g. ``datasets.dl.qrels.test``. ``where`` is the dotted key of the dataset's config.
    """
    queries, qrels = cfg.get(queries_key) or {}, cfg.get("qrels") or {}
    for split in queries:
        if split not in qrels:
            raise ConfigError(f"{where}.qrels.{split}",
                              f"required key is missing: split {split!r} has {queries_key} "
                              f"({where}.{queries_key}.{split}) but no qrels file; every split needs its qrels")
    for split in qrels:
        if split not in queries:
            raise ConfigError(f"{where}.{queries_key}.{split}",
                              f"required key is missing: split {split!r} has a qrels file ({where}.qrels.{split}) "
                              f"but no {queries_key} file")
