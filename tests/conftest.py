import json
import os

# Before anything imports torch: two test workers (and their Snakemake jobs) share the cores, and OpenMP threads
# that spin while they wait would burn them (the workflow sets the same for its jobs: rules/common.smk).
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import pytest  # noqa: E402

from tests.support import REPO  # noqa: E402
from tests.support.browser import find_chromium  # noqa: E402
from tests.support.builds import Builds, session_root  # noqa: E402
from tests.support.disk import small_disks  # noqa: E402
from tests.support.files import write_lines  # noqa: E402

SCIFACT = REPO.parent / "shared" / "data" / "scifact"


@pytest.fixture(scope="session")
def scifact():
    """The real SciFact dataset beside the repository. In CI it must be there; elsewhere its absence skips."""
    if not (SCIFACT / "corpus.jsonl").exists():
        if os.environ.get("CI"):
            pytest.fail(f"SciFact data missing at {SCIFACT}")
        pytest.skip("SciFact data not available beside the repository")
    return SCIFACT


@pytest.fixture
def small_disk():
    """``small_disk(path, size)``: a tmpfs of ``size`` mounted on ``path`` for the test (tests/support/disk.py)."""
    yield from small_disks()


@pytest.fixture
def beir_folder(tmp_path):
    """Build a tiny BEIR folder; keyword arguments replace one file's lines."""
    def build(corpus=None, queries=None, qrels=None, split="test"):
        root = tmp_path / "beir"
        write_lines(root / "corpus.jsonl", corpus if corpus is not None else [
            '{"_id": "d1", "title": "Cats", "text": "cats purr and sleep"}',
            '{"_id": "d2", "title": "Dogs", "text": "dogs bark at night"}',
            '{"_id": "d3", "title": "Fish", "text": "fish swim in water"}',
        ])
        write_lines(root / "queries.jsonl", queries if queries is not None else [
            '{"_id": "q1", "text": "do cats purr"}',
            '{"_id": "q2", "text": "barking dogs"}',
        ])
        write_lines(root / "qrels" / f"{split}.tsv", qrels if qrels is not None else [
            "query-id\tcorpus-id\tscore", "q1\td1\t1", "q2\td2\t2",
        ])
        return root
    return build


@pytest.fixture(scope="session")
def builds(tmp_path_factory) -> Builds:
    """The tiny workflows of this test session (tests/support/builds.py): each built once, even when pytest-xdist's
    workers each ask for it (a lock in the session's common temporary folder: the first builds, the others wait)."""
    return Builds(session_root(tmp_path_factory) / "builds")


@pytest.fixture(scope="session")
def chromium() -> str:
    """Debian's chromium, for the tests that open pages in it headless (tests/support/browser.py): skipped where
    it is missing, a failure under CI (`make test` installs it as root)."""
    path = find_chromium()
    if path is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is missing: `make test` installs it as root (apt-get install chromium)")
        pytest.skip("chromium is not installed (apt-get install chromium; `make test` does it as root)")
    return path


@pytest.fixture(scope="session")
def main_run(builds):
    """A checkout (the repository's files, linked, with the default config) after `make run`'s Snakemake command:
    the main target built from nothing, once per test session."""
    return builds.main_run()


# Test files start longest first, so that with pytest-xdist (`make test` runs two files at a time) no worker is left
# running a long one alone at the end: each file's CPU seconds in the last profile of the whole suite
# (tests/durations.json, written by `python benchmarks/test_profile.py --save-durations`; a session build counts
# for the file that built it, so the files that only read it start later, when it is there). A file it does not
# list yet (a new one) starts first, as if it were the longest: started last, a slow one would run alone at the end.
DURATIONS = REPO / "tests" / "durations.json"
TESTS = REPO / "tests"


def pytest_collection_modifyitems(config, items):
    seconds = json.loads(DURATIONS.read_text(encoding="utf-8"))["seconds"] if DURATIONS.exists() else {}

    def place(item) -> float:
        try:
            return -seconds.get(item.path.relative_to(TESTS).as_posix(), float("inf"))
        except ValueError:  # a test outside tests/
            return 0.0

    items.sort(key=place)  # stable: the rest keep their order
