import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SCIFACT = REPO.parent / "shared" / "data" / "scifact"


@pytest.fixture(scope="session")
def scifact() -> Path:
    """The real SciFact dataset beside the repository. In CI it must be there; elsewhere its absence skips."""
    if not (SCIFACT / "corpus.jsonl").exists():
        if os.environ.get("CI"):
            pytest.fail(f"SciFact data missing at {SCIFACT}")
        pytest.skip("SciFact data not available beside the repository")
    return SCIFACT


def write_lines(path: Path, lines: list[str] | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(lines, bytes):
        path.write_bytes(lines)
    else:
        path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


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
