"""Resume: a resumed trainer gives the uninterrupted weights bit for bit; a checkpoint of another configuration is
not resumed; and a checkpoint never runs code (no pickle is ever loaded). A STAR training process killed after a
checkpoint and started again: tests/integration/test_resume_kill.py."""

import hashlib
import json
import logging
import os
import pickle
import shlex

import pytest
import torch

from hardneg.dense.checkpoint import STATE
from hardneg.dense.trainer_state import CHECKPOINT_FORMAT
from tests.support.training import build_tiny_with_hardnegs
from tests.support.training import tiny_trainer as _trainer


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    root = tmp_path_factory.mktemp("resume")
    return build_tiny_with_hardnegs(root)


# ------------------------------------------------------------------------------- checkpoints in one process
def _same_rows(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert x.keys() == y.keys() and all(x[k] == y[k] or (x[k] != x[k] and y[k] != y[k]) for k in x), (x, y)


def test_a_resumed_trainer_ends_with_the_uninterrupted_weights(tiny, tmp_path, caplog):
    """The checkpoint left at step 6 (of 8) holds every state: a fresh trainer resumes it and ends bit for bit
    where the uninterrupted run ended (model, optimiser and random-number states round-trip exactly)."""
    whole = _trainer(tiny, tmp_path / "ckpt")
    rows = whole.fit()
    assert len(rows) == 8 and not [key for key in rows[0] if "seconds" in key]  # no wall-clock in the log
    saved = json.loads((tmp_path / "ckpt" / STATE).read_text())
    assert saved["step"] == 6 and saved["format"] == CHECKPOINT_FORMAT
    assert sorted(p.name for p in (tmp_path / "ckpt").iterdir()) == [STATE, "tensors-6.safetensors"]
    resumed = _trainer(tiny, tmp_path / "ckpt")
    with caplog.at_level(logging.INFO, logger="hardneg"):
        resumed_rows = resumed.fit()
    assert "resuming from step 6 of 8" in caplog.text
    _same_rows(rows, resumed_rows)
    whole_state, resumed_state = whole.model.state_dict(), resumed.model.state_dict()
    assert whole_state.keys() == resumed_state.keys()
    for key, value in whole_state.items():
        assert torch.equal(value, resumed_state[key]), key
    resumed.discard_checkpoint()
    assert not list((tmp_path / "ckpt").iterdir())


def test_a_checkpoint_of_another_configuration_is_not_resumed(tiny, tmp_path, caplog):
    _trainer(tiny, tmp_path / "ckpt", fingerprint="run-a").fit()
    assert (tmp_path / "ckpt" / STATE).exists()
    fresh = _trainer(tiny, tmp_path / "fresh", checkpoint_every=0).fit()
    with caplog.at_level(logging.INFO, logger="hardneg"):
        rows = _trainer(tiny, tmp_path / "ckpt", fingerprint="run-b", checkpoint_every=0).fit()
    assert "belongs to another configuration" in caplog.text and "resuming" not in caplog.text
    _same_rows(rows, fresh)  # trained from the start


class _RunsCode:
    """Unpickled, it runs a shell command that creates ``marker``."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return os.system, (f"touch {shlex.quote(self.marker)}",)


def test_a_crafted_checkpoint_runs_no_code(tiny, tmp_path, caplog):
    """A pickle whose loading runs a command, placed where the trainer looks (as the pickled ``state.pt`` of the
    older format, and as the tensor file a valid-looking ``state.json`` names, with its true SHA-256), is never
    unpickled: the trainer logs why it ignores it and trains from the start."""
    probe = tmp_path / "probe"
    pickle.loads(pickle.dumps(_RunsCode(probe)))
    assert probe.exists()  # the payload is live: loading it with pickle runs the command

    marker = tmp_path / "marker"
    payload = pickle.dumps({"format": CHECKPOINT_FORMAT, "fingerprint": "run-a", "step": 6, "x": _RunsCode(marker)})
    fresh = _trainer(tiny, tmp_path / "fresh", checkpoint_every=0).fit()

    legacy = tmp_path / "legacy"
    legacy.mkdir()
    (legacy / "state.pt").write_bytes(payload)
    with caplog.at_level(logging.INFO, logger="hardneg"):
        rows = _trainer(tiny, legacy, checkpoint_every=0).fit()
    assert not marker.exists()
    assert "ignoring" in caplog.text and "state.pt" in caplog.text and "resuming" not in caplog.text
    _same_rows(rows, fresh)

    crafted = tmp_path / "crafted"
    crafted.mkdir()
    (crafted / "tensors-6.safetensors").write_bytes(payload)
    (crafted / STATE).write_text(json.dumps({
        "format": CHECKPOINT_FORMAT, "fingerprint": "run-a", "step": 6, "tensors": "tensors-6.safetensors",
        "tensors_sha256": hashlib.sha256(payload).hexdigest(), "state": {"model": {"$tensor": "t0"}}}))
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="hardneg"):
        rows = _trainer(tiny, crafted, checkpoint_every=0).fit()
    assert not marker.exists()
    assert "cannot be read" in caplog.text and "resuming" not in caplog.text
    _same_rows(rows, fresh)
