"""Pages of the library opened in Debian's headless chromium (tests/support/browser.py), which `make test`
installs: the comparison page (hardneg.report.comparison_page) of the hand-made results folder of
tests/support/comparison.py renders its tables, shows the hostile query and title as text, runs nothing, and cuts
no column off in a wide or a narrow window."""

import pytest

from tests.support.browser import Chromium
from tests.support.comparison import HOSTILE_QUERY, HOSTILE_TITLE, write_page


@pytest.fixture
def page(tmp_path):
    return write_page(tmp_path)


# every cell whose content is wider than the cell, and every table container that scrolls sideways
CUT_OFF = ("[...document.querySelectorAll('th, td, div.fit')].filter(e => e.scrollWidth > e.clientWidth + 1)"
           ".map(e => e.tagName + ': ' + e.textContent.slice(0, 40))")


@pytest.mark.slow
@pytest.mark.parametrize("width", [1400, 700])
def test_the_page_in_chromium(page, chromium, tmp_path, width):
    with Chromium(chromium, tmp_path / "profile", width=width, height=900) as browser:
        browser.open(page)
        stats = browser.evaluate("[...document.querySelectorAll('table.stats tbody tr')]"
                                 ".map(r => [...r.cells].map(c => c.textContent))")
        assert [row[0] for row in stats] == ["base", "star", "adore"]
        assert stats[1][1:4] == ["0.875", "+0.167", "2/1/1"]
        assert browser.evaluate("document.querySelectorAll('section.query table.rankings').length") == 3
        assert browser.evaluate("document.querySelector('section.query h3 .text').textContent") == HOSTILE_QUERY
        cells = browser.evaluate("[...document.querySelectorAll('table.rankings td.doc')].map(c => c.textContent)")
        assert any(HOSTILE_TITLE in cell for cell in cells) and any(cell.startswith("R1d3") for cell in cells)
        assert browser.evaluate("document.querySelectorAll('script, img').length") == 0  # text, never markup
        assert browser.evaluate(CUT_OFF) == []
        assert browser.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
        browser.pump(0.2)
        assert browser.errors == []
        browser.screenshot(tmp_path / f"compare-{width}.png")
