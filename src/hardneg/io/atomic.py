"""Atomic artifact writing: write beside the target under a temporary name, then rename into place.

A crash or an exception leaves no partial artifact behind. An exception removes its temporary; a process
killed outright (SIGKILL, a lost machine) cannot, so every write first removes the temporaries that earlier,
interrupted writes of the same target left beside it (``.<target name>.<random>.tmp``). That is safe because a
target has one writer at a time: Snakemake runs one job per output and locks the working directory.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

log = logging.getLogger(__name__)

_SUFFIX = ".tmp"
# The process's umask, read once at import (setting it to read it is not thread-safe): temporaries are created
# private (0600 files, 0700 folders) and, once written, are given the umask's permissions (0644 and 0755 under
# umask 022), whatever their writers chose (some libraries create their files 0600), before they take the
# target's place.
_UMASK = os.umask(0o022)
os.umask(_UMASK)


def _open_up(path: Path) -> None:
    """Give ``path`` (and, for a folder, everything in it) the permissions of a file or folder the user creates."""
    if path.is_symlink():
        return
    if path.is_dir():
        os.chmod(path, 0o777 & ~_UMASK)
        for root, dirs, files in os.walk(path):
            for name in dirs:
                if not os.path.islink(os.path.join(root, name)):
                    os.chmod(os.path.join(root, name), 0o777 & ~_UMASK)
            for name in files:
                if not os.path.islink(os.path.join(root, name)):
                    os.chmod(os.path.join(root, name), 0o666 & ~_UMASK)
    else:
        os.chmod(path, 0o666 & ~_UMASK)


def _prefix(target: Path) -> str:
    return f".{target.name}."


def stale_temporaries(target: str | os.PathLike) -> list[Path]:
    """The temporaries of ``target`` in its folder: ``.<name>.<random>.tmp`` files or folders, where the random
    part has no dot (so those of ``corpus.parquet`` are never taken for those of ``corpus``)."""
    target = Path(target)
    if not target.parent.is_dir():
        return []
    return sorted(
        entry
        for entry in target.parent.iterdir()
        if _is_temporary(entry.name) and _target_name(entry.name) == target.name
    )


def _target_name(name: str) -> str:
    """The target's name in a temporary's name ``.<target name>.<random>.tmp`` (the random part has no dot)."""
    return name[1 : -len(_SUFFIX)].rpartition(".")[0]


def _is_temporary(name: str) -> bool:
    """Whether ``name`` is that of a temporary: ``.<target name>.<random>.tmp``."""
    if not (name.startswith(".") and name.endswith(_SUFFIX)) or len(name) <= 1 + len(_SUFFIX):
        return False
    target, dot, random = name[1 : -len(_SUFFIX)].rpartition(".")
    return bool(dot and target and random)


def _remove(stale: Path) -> None:
    if stale.is_dir() and not stale.is_symlink():
        shutil.rmtree(stale, ignore_errors=True)
    else:
        stale.unlink(missing_ok=True)


def _remove_stale(target: Path) -> None:
    for stale in stale_temporaries(target):
        _remove(stale)
        log.info("removed %s, left by an interrupted write of %s", stale, target)


def remove_temporaries(root: str | os.PathLike) -> list[Path]:
    """Remove every temporary under ``root`` (those of any target) and return them. Only for a moment when no
    write can be in progress under ``root``: the workflow calls it before its first job starts and after its
    last job ended on a failure (Snakemake's lock keeps other runs out), so a job killed outright leaves nothing
    behind even when no later job writes its target again."""
    root = Path(root)
    found: list[Path] = []
    if not root.is_dir():
        return found
    for folder, dirs, files in os.walk(root):
        for name in sorted(dirs + files):
            if _is_temporary(name):
                found.append(Path(folder) / name)
        dirs[:] = [name for name in dirs if not _is_temporary(name)]
    for stale in found:
        _remove(stale)
    return sorted(found)


def _prepare(target: str | os.PathLike) -> Path:
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    _remove_stale(target)
    return target


def _name_the_target(error: BaseException, target: Path) -> None:
    """Raise ``error`` again naming ``target`` when it is an operating-system error that names no file (a write
    that failed, e.g. on a full disk: the file written was a temporary the user never sees)."""
    if isinstance(error, OSError) and error.filename is None and error.errno is not None:
        raise OSError(error.errno, error.strerror or os.strerror(error.errno), str(target)) from error


@contextlib.contextmanager
def atomic_path(target: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary file path in the target's folder; rename it onto ``target`` on success."""
    target = _prepare(target)
    fd, tmp = tempfile.mkstemp(prefix=_prefix(target), suffix=_SUFFIX, dir=target.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        _open_up(tmp_path)
        os.replace(tmp_path, target)
    except BaseException as error:
        tmp_path.unlink(missing_ok=True)
        _name_the_target(error, target)
        raise


@contextlib.contextmanager
def atomic_dir(target: str | os.PathLike) -> Iterator[Path]:
    """Yield an empty temporary folder beside ``target``; on success it replaces ``target`` whole."""
    target = _prepare(target)
    tmp_path = Path(tempfile.mkdtemp(prefix=_prefix(target), suffix=_SUFFIX, dir=target.parent))
    try:
        yield tmp_path
        _open_up(tmp_path)
        if target.exists():
            shutil.rmtree(target)
        os.replace(tmp_path, target)
    except BaseException as error:
        shutil.rmtree(tmp_path, ignore_errors=True)
        _name_the_target(error, target)
        raise


def write_text(target: str | os.PathLike, text: str) -> None:
    """Write a text file atomically (UTF-8)."""
    with atomic_path(target) as tmp:
        tmp.write_text(text, encoding="utf-8")


def unwritable_folders(paths) -> list[str]:
    """The folders among those ``paths`` would be written in that cannot be: for a path that exists, its folder
    (replacing a file removes it from there; a folder is replaced inside its parent); for one that does not, its
    nearest existing ancestor (where the missing folders would be made). Each folder once, in the order of
    ``paths``; none when every write can go ahead (``os.access``: as the kernel answers this process, so a root
    user who may override permissions finds every folder writable).

    :param paths: files or folders about to be written (a workflow's outputs and logs).
    :returns: folder paths, as given (relative stays relative)."""
    found: dict[str, None] = {}  # the folders in order, each once
    for path in map(os.fspath, paths):
        folder = os.path.dirname(os.path.normpath(path)) or "."
        while not os.path.isdir(folder) and folder not in ("", ".", os.sep):
            folder = os.path.dirname(folder) or "."
        if not os.access(folder, os.W_OK | os.X_OK):
            found.setdefault(folder, None)
    return list(found)
