"""Atomic writes (hardneg.io.atomic): temporaries private while written, the put-in-place file or folder with the
umask's permissions, a write removing what killed writes of the same target left, and nothing left by a failed
write (what a killed stage leaves, through the workflow: tests/reliability/test_reliability_kills.py)."""

from __future__ import annotations

import os
import stat

import pytest

from hardneg.io.atomic import atomic_dir, atomic_path, remove_temporaries, stale_temporaries


# ---------------------------------------------------------------------------------------- atomic writes
def test_atomic_writes_keep_the_umask(tmp_path):
    """Temporaries are private while written; the file or folder put in place has the umask's permissions
    (0644 and 0755 under umask 022), like any file the user creates."""
    from hardneg.io import atomic

    previous = os.umask(0o022)
    saved = atomic._UMASK
    atomic._UMASK = 0o022  # as read at import by a process started under umask 022
    try:
        atomic.write_text(tmp_path / "a.txt", "x")
        with atomic.atomic_path(tmp_path / "b.bin") as tmp:
            assert stat.S_IMODE(tmp.stat().st_mode) == 0o600  # private while written
            tmp.unlink()  # as a library that writes its own file and renames it does
            fd = os.open(tmp, os.O_CREAT | os.O_WRONLY, 0o600)
            os.close(fd)
        with atomic.atomic_dir(tmp_path / "folder") as folder:
            (folder / "inner").mkdir(mode=0o700)
            fd = os.open(folder / "inner" / "f.bin", os.O_CREAT | os.O_WRONLY, 0o600)  # as safetensors does
            os.close(fd)
    finally:
        atomic._UMASK = saved
        os.umask(previous)
    modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in [tmp_path / "a.txt", *(tmp_path / "folder").rglob("*"),
                                                               tmp_path / "folder"]}
    modes["b.bin"] = stat.S_IMODE((tmp_path / "b.bin").stat().st_mode)
    assert modes == {"a.txt": 0o644, "b.bin": 0o644, "folder": 0o755, "inner": 0o755, "f.bin": 0o644}


def test_a_write_removes_what_killed_writes_of_the_same_target_left(tmp_path):
    target = tmp_path / "corpus.parquet"
    stale_file = tmp_path / ".corpus.parquet.k1ll3d_1.tmp"
    stale_dir = tmp_path / ".corpus.parquet.k1ll3d_2.tmp"
    stale_file.write_text("partial")
    (stale_dir / "inner").mkdir(parents=True)
    others = [tmp_path / ".corpus.abcdefgh.tmp",  # the temporary of another target, "corpus"
              tmp_path / ".corpus.parquet.tmp",  # no random part
              tmp_path / "corpus.parquet.x1.tmp"]  # not hidden
    for other in others:
        other.write_text("keep")
    assert stale_temporaries(target) == [stale_file, stale_dir]
    with atomic_path(target) as tmp:
        tmp.write_text("done")
    assert target.read_text() == "done" and not stale_file.exists() and not stale_dir.exists()
    assert all(other.exists() for other in others)

    folder = tmp_path / "index"
    (tmp_path / ".index.zzzzzzzz.tmp" / "segment").mkdir(parents=True)
    with atomic_dir(folder) as tmp:
        (tmp / "data").write_text("x")
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".index")) == []
    assert (folder / "data").read_text() == "x"


def test_the_workflow_removes_every_temporary_under_results(tmp_path):
    """What the workflow does before its first job and after a failed run: every ``.<name>.<random>.tmp`` under
    the folder goes (a temporary folder with what is inside it), whichever target it was for; nothing else."""
    results = tmp_path / "results"
    left = [results / "colbert" / "rankings" / ".test.trec.a1b2c3d4.tmp",
            results / "tables" / ".training_time.md.q_w_e_r_t.tmp",
            results / "star" / ".model.x9y8z7w6.tmp"]
    for path in left[:2]:
        path.parent.mkdir(parents=True)
        path.write_text("partial")
    (left[2] / "inner" / ".weights.bin.abcdefgh.tmp").mkdir(parents=True)
    kept = [results / "colbert" / "rankings" / "test.trec", results / "star" / ".hidden", results / "star" / "a.tmp",
            results / "star" / ".tmp"]
    for path in kept:
        path.write_text("keep")
    assert remove_temporaries(results) == sorted(left)
    assert not any(path.exists() for path in left) and all(path.exists() for path in kept)
    assert remove_temporaries(results) == [] and remove_temporaries(tmp_path / "absent") == []


def test_an_artifact_gets_the_usual_permissions(tmp_path):
    with atomic_path(tmp_path / "run.trec") as tmp:
        tmp.write_text("q1 Q0 d1 1 1.0 x\n")
    with atomic_dir(tmp_path / "model") as tmp:
        (tmp / "config.json").write_text("{}")
    umask = os.umask(0o022)
    os.umask(umask)
    assert stat.S_IMODE((tmp_path / "run.trec").stat().st_mode) == 0o666 & ~umask
    assert stat.S_IMODE((tmp_path / "model").stat().st_mode) == 0o777 & ~umask


def test_a_failed_write_leaves_neither_target_nor_temporary(tmp_path):
    target = tmp_path / "metrics.json"
    with pytest.raises(RuntimeError):
        with atomic_path(target) as tmp:
            tmp.write_text("half")
            raise RuntimeError("stop")
    assert list(tmp_path.iterdir()) == []


def test_a_failed_write_names_the_target_not_its_temporary(tmp_path):
    import errno

    target = tmp_path / "page.html"
    with pytest.raises(OSError) as error:
        with atomic_path(target):
            raise OSError(errno.ENOSPC, "No space left on device")  # as a write to a full disk raises it
    assert error.value.errno == errno.ENOSPC and error.value.filename == str(target)
    assert list(tmp_path.iterdir()) == []  # no temporary, no target
    with pytest.raises(FileNotFoundError) as named:  # an error naming its own file keeps it
        with atomic_dir(tmp_path / "folder"):
            open(tmp_path / "elsewhere" / "x", "w")
    assert named.value.filename == str(tmp_path / "elsewhere" / "x")
