"""Where the ``hardneg`` command may write what ``--output`` names (``export``, ``init``).

An output is written beside its target under a temporary name and renamed into place (:mod:`hardneg.io.atomic`):
a folder output replaces the folder whole. So before anything is read or written, :func:`check_output` refuses a
target whose replacement could lose something the user did not mean to give up:

* an existing file or folder, unless ``--force`` is given;
* anything inside the results folder (the command's ``--results``), where the workflow keeps its artifacts,
  unless ``--force`` is given;
* whatever ``--force`` says: a folder that holds something other than an earlier output of the same kind, a
  folder where a file is written and a file where a folder is, a symbolic link (the link, not its target, would
  be replaced), anything that is not a regular file or a folder (a FIFO, a socket, a device), and a path under
  something that is not a folder.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path

from hardneg.errors import HardnegError

_SPECIAL = (
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


def _special_kind(mode: int) -> str | None:
    """What a file of mode ``mode`` is when it is neither a regular file nor a folder (else None)."""
    for test, kind in _SPECIAL:
        if test(mode):
            return kind
    return None if stat.S_ISREG(mode) or stat.S_ISDIR(mode) else "not a regular file"


def _lstat(path: Path) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except FileNotFoundError:
        return None
    except NotADirectoryError:  # a path under a file: the check of its folders names it
        return None


def inside(path: str | os.PathLike, folder: str | os.PathLike) -> bool:
    """Whether ``path`` is ``folder`` or lies under it, once both are resolved (symbolic links followed, ``..``
    taken out), whether or not they exist."""
    return Path(path).resolve().is_relative_to(Path(folder).resolve())


def check_output(
    path: str | os.PathLike,
    *,
    folder: bool,
    what: str,
    results: str | os.PathLike = "results",
    force: bool = False,
    previous: Callable[[Path], bool] | None = None,
    option: str = "--output",
) -> Path:
    """``path`` as a Path when ``what`` (a file, or a ``folder``) may be written there (see the module
    docstring); otherwise a HardnegError that names ``option`` and says what is wrong and what to do.

    ``results``: the results folder, whose contents are written only with ``force``, and whose existing files
    are never replaced (but for one that ``previous`` recognises as an earlier output of ``what``); ``force``:
    replace an existing file, or a folder that is empty or that ``previous`` recognises as an earlier output of
    ``what``.
    Nothing is read or written here.
    """
    shape = "folder" if folder else "file"
    if not str(path):
        raise HardnegError(f"{option} is empty: give the path of the {shape} to write")
    path = Path(path)
    info = _lstat(path)
    if info is not None and stat.S_ISLNK(info.st_mode):
        raise HardnegError(
            f"{option} {path} is a symbolic link (to {os.readlink(path)}): writing would replace the "
            f"link, not what it points to; give the path of a new {shape}"
        )
    if info is not None and _special_kind(info.st_mode):
        raise HardnegError(
            f"{option} {path} is {_special_kind(info.st_mode)}, not a {shape}: hardneg writes only "
            "regular files and folders; give another path"
        )
    for parent in path.absolute().parents:
        if parent.exists():
            if not parent.is_dir():
                raise HardnegError(f"{option} {path} cannot be written: {parent} is not a folder")
            break
        if parent.is_symlink():
            raise HardnegError(f"{option} {path} cannot be written: {parent} is a broken symbolic link")
    if not force and inside(path, results):
        raise HardnegError(
            f"{option} {path} is inside the results folder {results}, where the workflow keeps "
            "its artifacts: give a path outside it, or --force to write there anyway"
        )
    if info is None:
        return path
    if not folder and stat.S_ISDIR(info.st_mode):
        raise HardnegError(f"{option} {path} is a folder; the {what} is written as one file: give a file path")
    if not folder and inside(path, results) and not (previous and previous(path)):  # --force: a new file only
        raise HardnegError(
            f"{option} {path} is a file of the results folder {results} (an artifact of the "
            f"workflow, or beside them): --force writes a new file there but replaces none; give "
            f"another path"
        )
    if folder and not stat.S_ISDIR(info.st_mode):
        raise HardnegError(f"{option} {path} is a file; the {what} is written as a folder: give a folder path")
    if folder and any(path.iterdir()) and not (previous and previous(path)):
        raise HardnegError(
            f"{option} {path} is a folder that holds something other than a {what}; the {what} "
            "replaces its folder whole: give a new folder, or remove this one"
        )
    if not force:
        held = f"an earlier {what}" if folder and any(path.iterdir()) else ("an empty folder" if folder else "a file")
        raise HardnegError(f"{option} {path} already exists ({held}): give --force to replace it, or another path")
    return path
