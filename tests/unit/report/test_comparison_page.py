"""The comparison page (hardneg.report.comparison_page) of the hand-made results folder of
tests/support/comparison.py: texts from the data escaped, the same bytes twice. (The page opened in a browser:
tests/integration/test_pages_in_chromium.py.)"""

import pytest

from hardneg.report.comparison_page import write_comparison_page
from tests.support.comparison import write_page


@pytest.fixture
def page(tmp_path):
    return write_page(tmp_path)


def test_the_page_escapes_the_data_and_is_reproducible(page, tmp_path):
    text = page.read_text(encoding="utf-8")
    assert "<script" not in text and "<img" not in text and "\x1b" not in text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    assert "&quot;&gt;&lt;img src=x onerror=alert(2)&gt;" in text and "wolves \\x1b[31mhowl at night" in text
    assert text.count('<section class="query"') == 3 and "Holm" in text
    again = tmp_path / "again.html"
    write_comparison_page(["base", "star", "adore"], again, results=tmp_path / "results", top=3, depth=3)
    assert again.read_bytes() == page.read_bytes()


def test_queries_left_unshown_are_not_called_unchanged(tmp_path):
    import shutil

    results = write_page(tmp_path).parent / "results"
    shown_none = tmp_path / "top0.html"
    write_comparison_page(["base", "star"], shown_none, results=results, top=0, depth=3)
    assert "No query changed" not in shown_none.read_text(encoding="utf-8")  # star changes two queries
    shutil.copytree(results / "base", results / "copy")
    same = tmp_path / "same.html"
    write_comparison_page(["base", "copy"], same, results=results, top=0, depth=3)
    assert "No query changed" in same.read_text(encoding="utf-8")


def test_runs_with_replicates_show_their_seeds_on_the_page(tmp_path):
    import shutil

    results = write_page(tmp_path).parent / "results"
    for source, replicate in (("star", "base_seed2"), ("adore", "star_seed2")):
        shutil.copytree(results / source, results / replicate)
    page = tmp_path / "seeds.html"
    write_comparison_page(["base", "star"], page, results=results, top=3, depth=3)
    text = page.read_text(encoding="utf-8")
    assert '<table class="stats seeds">' in text and "Welch p vs base" in text
    assert "star: star, star_seed2" in text and "base: base, base_seed2" in text
    assert '<table class="stats seeds">' not in (tmp_path / "compare.html").read_text(encoding="utf-8")
