"""Config files as mappings: YAML read strictly and within limits (a key written twice, a key that is a list or
mapping, collections nested too deeply, aliases expanding to too many values, a file too large or not a regular
file: each an error naming the file and line), a run's resolved config read back, and the hash that identifies a
resolved config."""

from __future__ import annotations

import hashlib
import json
import os
import stat

import yaml

from hardneg.errors import ConfigFileError

# The limits of a config file. The largest shipped config (config/config.yaml) holds 16 kB, nests 6 levels and
# expands its aliases to a few hundred values; the YAML reader parses about 200 kB a second.
MAX_BYTES = 1 << 20  # 1 MiB
MAX_DEPTH = 64  # mappings and lists inside one another
MAX_ALIASED_NODES = 10_000  # values reached through aliases (*name), counted with the aliases inside them

_NOT_REGULAR = (
    (stat.S_ISDIR, "is a folder, not a file"),
    (stat.S_ISFIFO, "is a FIFO (named pipe), not a regular file"),
    (stat.S_ISSOCK, "is a socket, not a regular file"),
    (stat.S_ISCHR, "is a character device, not a regular file"),
    (stat.S_ISBLK, "is a block device, not a regular file"),
)


class _LimitError(yaml.YAMLError):
    """A file that is valid YAML but beyond what a config may be (``line`` is 1-based)."""

    def __init__(self, line: int, message: str):
        super().__init__(message)
        self.line = line
        self.message = message


class _StrictLoader(yaml.SafeLoader):
    """YAML's safe loader, refusing what a config never needs: a key written twice in one mapping (YAML would keep
    the last), a key that is a list or mapping, collections nested deeper than :data:`MAX_DEPTH`, and aliases
    expanding to more than :data:`MAX_ALIASED_NODES` values (an alias bomb: a few lines whose aliases of aliases
    stand for billions of values, which every later walk of the config would visit one by one)."""

    def __init__(self, stream) -> None:
        super().__init__(stream)
        self._depth = 0
        self._sizes: dict[int, int] = {}  # id(node) → values it stands for, aliases inside it expanded
        self._aliased = 0

    def compose_node(self, parent, index):
        if self.check_event(yaml.AliasEvent):
            mark = self.peek_event().start_mark
            node = super().compose_node(parent, index)
            if id(node) not in self._sizes:  # the collection it stands for is still open: it would hold itself
                raise _LimitError(mark.line + 1, "an alias (*name) inside the very mapping or list it names")
            self._aliased += self._sizes[id(node)]
            if self._aliased > MAX_ALIASED_NODES:
                raise _LimitError(
                    mark.line + 1,
                    f"the aliases (*name) expand to more than {MAX_ALIASED_NODES} "
                    f"values in all; write the repeated sections out, or repeat less",
                )
            return node
        collection = self.check_event(yaml.SequenceStartEvent, yaml.MappingStartEvent)
        if collection:
            self._depth += 1
            if self._depth > MAX_DEPTH:
                raise _LimitError(
                    self.peek_event().start_mark.line + 1,
                    f"mappings and lists nested more than {MAX_DEPTH} levels deep",
                )
        node = super().compose_node(parent, index)
        if collection:
            self._depth -= 1
        children = (
            node.value
            if isinstance(node, yaml.SequenceNode)
            else [part for pair in node.value for part in pair]
            if isinstance(node, yaml.MappingNode)
            else ()
        )
        self._sizes[id(node)] = 1 + sum(self._sizes[id(child)] for child in children)
        return node

    def construct_mapping(self, node, deep: bool = False) -> dict:
        seen: dict = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue  # '<<: *anchor' keys may be overridden on purpose
            if isinstance(key_node, (yaml.SequenceNode, yaml.MappingNode)):
                kind = "list" if isinstance(key_node, yaml.SequenceNode) else "mapping"
                raise yaml.constructor.ConstructorError(
                    None,
                    None,
                    f"a {kind} cannot be a key (a key is a name, a number or true/false)",
                    key_node.start_mark,
                )
            key = self.construct_object(key_node, deep=True)
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {key!r} (first on line {seen[key] + 1})", key_node.start_mark
                )
            seen[key] = key_node.start_mark.line
        return super().construct_mapping(node, deep=deep)


def _read_bytes(path: str | os.PathLike) -> bytes:
    """The bytes of config file ``path``: a regular file of at most :data:`MAX_BYTES`. Opened without blocking,
    so a FIFO is refused rather than waited on."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        raise ConfigFileError(path, None, "no such config file") from None
    except OSError as exc:
        raise ConfigFileError(path, None, f"cannot be read ({exc.strerror})") from None
    status = os.fstat(descriptor)
    what = next((what for test, what in _NOT_REGULAR if test(status.st_mode)), None)
    if what is not None:
        os.close(descriptor)
        raise ConfigFileError(path, None, what)
    with os.fdopen(descriptor, "rb") as handle:
        try:
            data = handle.read(MAX_BYTES + 1)
        except OSError as exc:
            raise ConfigFileError(path, None, f"cannot be read ({exc.strerror})") from None
    if len(data) > MAX_BYTES:
        raise ConfigFileError(
            path,
            None,
            f"holds {max(status.st_size, len(data))} bytes; a config file may hold at most {MAX_BYTES} bytes (1 MiB)",
        )
    return data


def read_config_yaml(path: str | os.PathLike) -> dict:
    """A config file's mapping, unvalidated (an empty file gives ``{}``). Anything but a regular file, a file
    larger than :data:`MAX_BYTES`, invalid UTF-8 or YAML, a key written twice or that is a list or mapping,
    collections nested deeper than :data:`MAX_DEPTH`, aliases expanding to more than :data:`MAX_ALIASED_NODES`
    values, a missing file or a top level that is not a mapping is a :class:`~hardneg.errors.ConfigFileError` (both
    a ``ConfigError`` and a ``DataError``) whose text names the file and line: ``my.yaml, line 3: ...``."""
    data = _read_bytes(path)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigFileError(
            path, data.count(b"\n", 0, exc.start) + 1, f"invalid UTF-8 ({exc.reason} at byte {exc.start})"
        ) from None
    loader = None
    try:
        loader = _StrictLoader(text)  # checks that every character is printable
        config = loader.get_single_data()
    except _LimitError as exc:
        raise ConfigFileError(path, exc.line, exc.message) from None
    except yaml.reader.ReaderError as exc:
        raise ConfigFileError(
            path,
            text.count("\n", 0, exc.position) + 1,
            f"invalid YAML: unacceptable character #x{exc.character:04x} ({exc.reason})",
        ) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc)
        raise ConfigFileError(path, mark.line + 1 if mark else None, f"invalid YAML: {problem}") from None
    finally:
        if loader is not None:
            loader.dispose()
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
