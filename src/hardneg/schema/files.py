"""Config files as mappings: YAML read strictly (a key written twice is an error naming its line), a run's
resolved config read back, and the hash that identifies a resolved config."""

from __future__ import annotations

import hashlib
import json
import os

import yaml

from hardneg.errors import ConfigFileError


class _UniqueKeyLoader(yaml.SafeLoader):
    """YAML's safe loader, but a key written twice in one mapping is an error (YAML would keep the last)."""

    def construct_mapping(self, node, deep=False):
        seen: dict = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue  # '<<: *anchor' keys may be overridden on purpose
            key = self.construct_object(key_node, deep=True)
            if isinstance(key, (str, int, float, bool)) and key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {key!r} (first on line {seen[key] + 1})", key_node.start_mark)
            seen.setdefault(key, key_node.start_mark.line)
        return super().construct_mapping(node, deep=deep)


def read_config_yaml(path: str | os.PathLike) -> dict:
    """A config file's mapping, unvalidated (an empty file gives ``{}``). Invalid YAML, a key written twice, a
    missing file or a top level that is not a mapping is a :class:`~hardneg.errors.ConfigFileError` (both a
    ``ConfigError`` and a ``DataError``) whose text names the file and line: ``my.yaml, line 3: ...``."""
    try:
        with open(path, encoding="utf-8") as handle:
            config = yaml.load(handle, Loader=_UniqueKeyLoader)
    except FileNotFoundError:
        raise ConfigFileError(path, None, "no such config file") from None
    except UnicodeDecodeError as exc:
        raise ConfigFileError(path, None, f"invalid UTF-8 ({exc.reason} at byte {exc.start})") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc)
        raise ConfigFileError(path, mark.line + 1 if mark else None, f"invalid YAML: {problem}") from None
    if config is None:
        return {}
    if not isinstance(config, dict):
        raise ConfigFileError(path, None, f"a config must be a mapping of keys, got a {type(config).__name__}")
    return config


def read_resolved(path: str | os.PathLike) -> dict:
    """A run's resolved config (``results/<run>/config.yaml``) as written by
    :func:`hardneg.io.provenance.write_resolved`."""
    with open(path, encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def config_hash(resolved: dict) -> str:
    """A stable SHA-256 of a resolved config (key order does not matter)."""
    canonical = json.dumps(resolved, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()
