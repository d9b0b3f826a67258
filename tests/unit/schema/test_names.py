"""Names are matched whole (a final newline included), every pattern of the schema is anchored at the very end,
and error messages quote long values shortened."""

import re

import pytest

from hardneg.pipeline.config import load_schema
from hardneg.schema.names import NAME_PATTERN, QUOTE_LIMIT, quoted


@pytest.mark.parametrize("name", ["tiny", "bm25", "adore_star", "msmarco-passage.v2", "9x", "a.b"])
def test_plain_names_are_names(name):
    assert re.search(NAME_PATTERN, name)


@pytest.mark.parametrize("name", ["tiny\n", "tiny\r\n", "\ntiny", "ti\nny", "", ".", "..", "a..b", "_x", "-x",
                                  "a/b", "a b", "tiny\x00", "x" * 128 + "\n"])
def test_anything_else_is_not_a_name(name):
    assert not re.search(NAME_PATTERN, name)  # as JSON Schema's `pattern` applies it


def _patterns(node):
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "pattern":
                yield value
            else:
                yield from _patterns(value)
    elif isinstance(node, list):
        for value in node:
            yield from _patterns(value)


def test_every_whole_value_pattern_of_the_schema_refuses_a_final_newline():
    patterns = list(_patterns(load_schema()))
    assert NAME_PATTERN in patterns and len(patterns) >= 6
    for pattern in patterns:
        if pattern.startswith("^") and not pattern.endswith("$"):
            continue  # a prefix (the URL scheme): what follows it is free
        assert pattern.startswith("\\A") and pattern.endswith("\\Z"), pattern
    samples = {"\\A[0-9a-f]{32}\\Z": "0" * 32, "\\A[A-Za-z_][A-Za-z0-9_]*\\Z": "train_dense", "\\A[^|\\s]+\\Z": "†",
               NAME_PATTERN: "tiny"}
    for pattern, sample in samples.items():
        assert pattern in patterns and re.search(pattern, sample) and not re.search(pattern, sample + "\n")


def test_quoted_keeps_short_values_and_cuts_long_ones_in_the_middle():
    assert quoted("RR@10") == "'RR@10'"
    assert quoted(["a", 1]) == "['a', 1]"
    long = ["RR@10"] * 10_000
    text = quoted(long)
    assert len(text) < QUOTE_LIMIT + 40
    assert text.startswith("['RR@10', ") and text.endswith(f"'RR@10'] ({len(repr(long))} characters)")
    assert quoted("x" * 1000, limit=21) == f"'xxxxxxxxx…xxxxxxxxx' (1002 characters)"
