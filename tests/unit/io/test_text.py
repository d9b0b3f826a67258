"""Data shown on a terminal: control characters and bidirectional overrides become visible escapes, every other
character stays as it is."""

import pytest

from hardneg.io.text import visible, visible_lines


@pytest.mark.parametrize("raw, shown", [
    ("\x1b[31mred\x1b[0m", "\\x1b[31mred\\x1b[0m"),  # a colour
    ("\x1b]0;owned\x07", "\\x1b]0;owned\\x07"),  # a terminal title change, ended by BEL
    ("a\tb\nc\rd", "a\\tb\\nc\\rd"),
    ("\x00\x1f\x7f", "\\x00\\x1f\\x7f"),  # NUL, the last C0 control, DEL
    ("\x80\x9b\x9f", "\\x80\\x9b\\x9f"),  # C1 controls (U+009B: the one-character CSI)
    ("abc\u202egnp.exe", "abc\\u202egnp.exe"),  # right-to-left override
    ("\u202a\u202b\u202c\u202d", "\\u202a\\u202b\\u202c\\u202d"),
    ("\u2066x\u2067y\u2068z\u2069", "\\u2066x\\u2067y\\u2068z\\u2069"),  # isolates
    ("bad\udcffname", "bad\\udcffname"),  # an undecodable byte of a file name
], ids=["colour", "title", "tab-newline-return", "nul-us-del", "c1", "rlo", "embeddings", "isolates", "surrogate"])
def test_controls_and_overrides_become_escapes(raw, shown):
    assert visible(raw) == shown
    assert visible(shown) == shown  # what it writes is printable: escaping again changes nothing
    assert shown.isprintable()


def test_ordinary_text_is_unchanged():
    text = "Café naïve Straße – « quotes » 東京 Москва עברית العربية 😀 \\x1b is text, with a no-break\u00a0space"
    assert visible(text) == text


def test_visible_lines_keeps_the_line_breaks_between_lines():
    assert visible_lines("run a: \x1b[2J\nrun b: ok\n") == "run a: \\x1b[2J\nrun b: ok\n"


def test_markdown_table_writes_header_alignment_and_rows():
    from hardneg.io.text import markdown_table

    assert markdown_table(["run", "MRR@10"], [["bm25", "0.184"], ["star", "0.349"]], "lr") == [
        "| run | MRR@10 |",
        "|---|---:|",
        "| bm25 | 0.184 |",
        "| star | 0.349 |",
    ]
    assert markdown_table(["a"], []) == ["| a |", "|---|"]
    with pytest.raises(ValueError, match="a row of 1 cells in a table of 2 columns"):
        markdown_table(["a", "b"], [["x"]])
    with pytest.raises(ValueError, match="must give l or r for each of the 2 columns"):
        markdown_table(["a", "b"], [], "lx")
