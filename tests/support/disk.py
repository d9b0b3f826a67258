"""A small disk for the full-disk tests: a tmpfs of a given size mounted on a folder (root only), grown on
demand, unmounted at the end of the test."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest


class SmallDisk:
    """A tmpfs of ``size`` (``mount``'s notation: ``1m``, ``64m``) mounted on ``path``."""

    def __init__(self, path: Path, size: str):
        self.path = path
        path.mkdir(parents=True, exist_ok=True)
        self._mount("-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", str(path))

    @staticmethod
    def _mount(*args: str) -> None:
        subprocess.run(["mount", *args], check=True, capture_output=True, text=True)

    def grow(self, size: str) -> None:
        """The same disk, its files kept, now of ``size``."""
        self._mount("-o", f"remount,size={size}", str(self.path))

    def unmount(self) -> None:
        subprocess.run(["umount", "--lazy", str(self.path)], check=False, capture_output=True)


def used_bytes(root: Path) -> int:
    """The bytes of every file under ``root``."""
    return sum(path.stat().st_size for path in root.rglob("*") if path.is_file())


def fill(disk: Path) -> Path:
    """A file taking every free byte of ``disk`` (grown when called again, as jobs may have freed some)."""
    ballast = disk / ".ballast"
    with open(ballast, "ab", buffering=0) as handle:
        for size in (1 << 16, 1 << 12, 1):
            try:
                while True:
                    handle.write(b"\0" * size)
            except OSError:
                pass
    return ballast


def small_disks():
    """The ``small_disk`` fixture's body: ``small_disk(path, size)`` mounts one; all are unmounted afterwards.
    Mounting needs root (CI runs as root, and fails here rather than skipping); elsewhere the test is skipped."""
    if os.geteuid() != 0 and not os.environ.get("CI"):
        pytest.skip("mounting a small disk (tmpfs) needs root")
    mounted: list[SmallDisk] = []

    def mount(path: Path, size: str) -> Path:
        mounted.append(SmallDisk(path, size))
        return path

    mount.disks = mounted
    yield mount
    for disk in reversed(mounted):
        disk.unmount()
