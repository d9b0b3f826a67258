"""Config files are read strictly and within limits: each refusal is one ConfigFileError naming the file and line,
quickly, and what a config legitimately holds (anchors, merge keys, the shipped configs) still reads."""

import os
import time

import pytest
import yaml

from hardneg.errors import ConfigFileError, DataError
from hardneg.schema.files import MAX_ALIASED_NODES, MAX_BYTES, MAX_DEPTH, read_config_yaml
from tests.support import REPO


def _refused(path) -> str:
    with pytest.raises(ConfigFileError) as info:
        read_config_yaml(path)
    assert isinstance(info.value, DataError) and info.value.__cause__ is None
    return str(info.value)


def _write(tmp_path, text: str | bytes, name: str = "c.yaml"):
    path = tmp_path / name
    path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
    return path


def _list_bomb(levels: int = 9) -> str:
    lines = ["a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, levels)]
    return "\n".join(lines) + f"\nevaluation:\n  measures: *a{levels - 1}\n"


# ------------------------------------------------------------------------------------------------ limits
@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 100, 5000])
def test_nesting_deeper_than_the_limit_is_refused_at_its_line(tmp_path, depth):
    path = _write(tmp_path, "seed: 1\nx:\n  y: " + "[" * depth + "]" * depth + "\n")
    assert _refused(path) == f"{path}, line 3: mappings and lists nested more than {MAX_DEPTH} levels deep"
    keys = min(depth, 200)  # block mappings: each level indented once more
    mappings = "seed: 1\n" + "".join("  " * level + f"k{level}:\n" for level in range(keys)) + "  " * keys + "v: 1\n"
    path = _write(tmp_path, mappings, "m.yaml")
    # the mapping of level MAX_DEPTH + 1 starts at its first key, k<MAX_DEPTH>, on line MAX_DEPTH + 2
    assert _refused(path) == (f"{path}, line {MAX_DEPTH + 2}: mappings and lists nested more than {MAX_DEPTH} "
                              f"levels deep")


def test_nesting_up_to_the_limit_reads(tmp_path):
    # the top-level mapping is the first level
    path = _write(tmp_path, "x: " + "[" * (MAX_DEPTH - 1) + "1" + "]" * (MAX_DEPTH - 1) + "\n")
    value = read_config_yaml(path)["x"]
    for _ in range(MAX_DEPTH - 2):
        value = value[0]
    assert value == [1]


@pytest.mark.parametrize("text, line", [
    (_list_bomb(), 5),  # the billion laughs: 9**9 strings
    ("m0: &m0 {a: 1, b: 2, c: 3, d: 4, e: 5, f: 6, g: 7, h: 8, i: 9}\n" +
     "".join(f"m{i}: &m{i} {{{', '.join(f'k{j}: *m{i - 1}' for j in range(9))}}}\n" for i in range(1, 9)), 4),
])
def test_an_alias_bomb_is_refused_in_well_under_a_second(tmp_path, text, line):
    path = _write(tmp_path, text)
    start = time.monotonic()
    message = _refused(path)
    assert time.monotonic() - start < 1
    assert message == (f"{path}, line {line}: the aliases (*name) expand to more than {MAX_ALIASED_NODES} values in "
                       f"all; write the repeated sections out, or repeat less")


def test_aliases_count_what_they_stand_for_up_to_the_limit(tmp_path):
    # one alias of a list of n strings stands for n + 1 values (the list and its items)
    items = MAX_ALIASED_NODES - 1
    path = _write(tmp_path, f"a: &a [{', '.join(['x'] * items)}]\nb: *a\n")
    assert len(read_config_yaml(path)["b"]) == items
    path = _write(tmp_path, f"a: &a [{', '.join(['x'] * items)}]\nb: *a\nc: [1, *a]\n", "twice.yaml")
    assert _refused(path).startswith(f"{path}, line 3: the aliases (*name) expand to more than")


def test_an_alias_inside_what_it_names_is_refused(tmp_path):
    path = _write(tmp_path, "seed: 1\nloop: &loop {again: *loop}\n")
    assert _refused(path) == f"{path}, line 2: an alias (*name) inside the very mapping or list it names"


def test_a_file_larger_than_the_limit_is_refused_before_it_is_parsed(tmp_path):
    path = _write(tmp_path, "seed: 1\n" + "# padding\n" * (MAX_BYTES // 10))
    assert os.path.getsize(path) > MAX_BYTES
    assert _refused(path) == f"{path}: holds {os.path.getsize(path)} bytes; a config file may hold at most " \
                             f"{MAX_BYTES} bytes (1 MiB)"
    _write(tmp_path, "seed: 1\n" + "#" * (MAX_BYTES - 9) + "\n", "limit.yaml")
    assert os.path.getsize(tmp_path / "limit.yaml") == MAX_BYTES
    assert read_config_yaml(tmp_path / "limit.yaml") == {"seed": 1}


# --------------------------------------------------------------------------------------------------- keys
@pytest.mark.parametrize("text, message", [
    ("seed: 1\n? [a, b]\n: 2\n", "line 2: invalid YAML: a list cannot be a key"),
    ("seed: 1\nruns:\n  ? {x: 1}\n  : {method: bm25}\n", "line 3: invalid YAML: a mapping cannot be a key"),
    ("seed: 1\nruns:\n  [bm25]: {method: bm25}\n", "line 3: invalid YAML: a list cannot be a key"),
    ("seed: 1\nruns: {bm25: 1, bm25: 2}\n", "line 2: invalid YAML: duplicate key 'bm25' (first on line 2)"),
    ("1: a\n2: b\n1: c\n", "line 3: invalid YAML: duplicate key 1 (first on line 1)"),
    ("~: a\nnull: b\n", "line 2: invalid YAML: duplicate key None (first on line 1)"),
])
def test_keys_that_are_collections_or_written_twice_are_refused(tmp_path, text, message):
    path = _write(tmp_path, text)
    assert _refused(path).startswith(f"{path}, {message}")


def test_merge_keys_and_anchors_still_read(tmp_path):
    path = _write(tmp_path, "base: &b {k1: 0.9, b: 0.4}\nruns:\n  x: {<<: *b, k1: 1.2}\n  y:\n    <<: *b\n")
    assert read_config_yaml(path) == {"base": {"k1": 0.9, "b": 0.4},
                                      "runs": {"x": {"k1": 1.2, "b": 0.4}, "y": {"k1": 0.9, "b": 0.4}}}


@pytest.mark.parametrize("name", ["config.yaml", "msmarco-passage.yaml", "msmarco-doc.yaml"])
def test_the_shipped_configs_read_as_yaml_reads_them(name):
    path = REPO / "config" / name
    assert read_config_yaml(path) == yaml.safe_load(path.read_text())


# ---------------------------------------------------------------------------------- what the file is
def test_a_folder_fifo_or_device_is_refused_without_waiting(tmp_path):
    folder = tmp_path / "folder.yaml"
    folder.mkdir()
    assert _refused(folder) == f"{folder}: is a folder, not a file"
    fifo = tmp_path / "fifo.yaml"
    os.mkfifo(fifo)  # no writer: reading it would wait for ever
    assert _refused(fifo) == f"{fifo}: is a FIFO (named pipe), not a regular file"
    assert _refused("/dev/null") == "/dev/null: is a character device, not a regular file"
    assert _refused(tmp_path / "none.yaml") == f"{tmp_path}/none.yaml: no such config file"


def test_a_link_to_a_regular_file_reads(tmp_path):
    target = _write(tmp_path, "seed: 3\n")
    (tmp_path / "link.yaml").symlink_to(target)
    assert read_config_yaml(tmp_path / "link.yaml") == {"seed": 3}


@pytest.mark.parametrize("data, message", [
    (b"seed: 1\ndataset: caf\xe9\n", "line 2: invalid UTF-8 (invalid continuation byte at byte 20)"),
    (b"seed: 1\nruns: {}\nx: \"a\x01\"\n", "line 3: invalid YAML: unacceptable character #x0001 (special characters "
                                           "are not allowed)"),
])
def test_bytes_that_are_not_yaml_text_name_their_line(tmp_path, data, message):
    path = _write(tmp_path, data)
    assert _refused(path) == f"{path}, {message}"
