"""Raw data files the workflow fetches itself: the config's ``downloads`` section.

Each entry is keyed by the local path it produces (the path a dataset's keys name) and is either

* a download: ``url`` and ``md5`` (and optional HTTP ``headers``). The file is streamed to a temporary file
  beside its target while its MD5 is computed, compared with the expected digest and only then renamed into
  place; or
* a member of a tar archive: ``archive`` (another ``downloads`` entry, itself downloaded) and ``member`` (its
  name inside the archive), with an optional ``md5`` of the extracted file. The member is streamed out the same
  way, so a 3 GB member never needs the whole archive unpacked.

A wrong checksum is a :class:`ChecksumError` naming the URL (or archive and member), the expected and the actual
digest; an interrupted or failed transfer leaves nothing at the target (:func:`hardneg.io.atomic.atomic_path`).
"""

from __future__ import annotations

import hashlib
import http.client
import logging
import os
import re
import tarfile
import time
import urllib.error
import urllib.request
from pathlib import PurePosixPath
from typing import overload

from hardneg.errors import ConfigError, HardnegError
from hardneg.io.atomic import atomic_path

log = logging.getLogger(__name__)

CHUNK = 1 << 20  # bytes read and hashed at a time
MD5_PATTERN = re.compile(r"[0-9a-f]{32}")


class DownloadError(HardnegError):
    """A file could not be fetched or unpacked (network error, HTTP status, truncated transfer, missing member)."""


class ChecksumError(DownloadError):
    """The bytes fetched do not have the expected MD5 digest. ``source`` is the URL (or ``archive:member``)."""

    def __init__(self, source: str, expected: str, actual: str, size: int):
        self.source, self.expected, self.actual, self.size = source, expected, actual, size
        super().__init__(
            f"{source}: checksum mismatch: expected MD5 {expected}, got {actual} ({size:,} bytes); "
            f"nothing was kept. Fetch it again, or check the `md5` of this entry of the config's "
            f"`downloads` if the file was republished"
        )


def _copy(reader, handle, source: str, expected_size: int | None) -> tuple[str, int]:
    """Copy ``reader`` to ``handle`` in chunks; return (MD5 hex digest, bytes). Progress goes to the log about
    every 5% (or every 256 MiB when the size is unknown)."""
    digest, size, started = hashlib.md5(), 0, time.monotonic()
    step = max(CHUNK, expected_size // 20) if expected_size else 256 * CHUNK
    next_report = step
    while chunk := reader.read(CHUNK):
        handle.write(chunk)
        digest.update(chunk)
        size += len(chunk)
        if size >= next_report:
            rate = size / max(time.monotonic() - started, 1e-9) / CHUNK
            total = f" of {expected_size:,}" if expected_size else ""
            log.info("%s: %s%s bytes (%.1f MiB/s)", source, f"{size:,}", total, rate)
            next_report += step
    return digest.hexdigest(), size


@overload
def _check_md5(md5: str, where: str) -> str: ...
@overload
def _check_md5(md5: None, where: str) -> None: ...
def _check_md5(md5: str | None, where: str) -> str | None:
    if md5 is None:
        return None
    md5 = str(md5).lower()
    if not MD5_PATTERN.fullmatch(md5):
        raise ValueError(f"{where}: {md5!r} is not an MD5 digest (32 hexadecimal digits)")
    return md5


def download(
    url: str, target: str | os.PathLike, md5: str, *, headers: dict | None = None, timeout: float = 60.0
) -> str:
    """Fetch ``url`` (http, https or file) to ``target`` and return its MD5 digest, which must equal ``md5``.

    The bytes go to a temporary file beside ``target`` and are renamed onto it only when the transfer is complete
    (the ``Content-Length`` the server announced, when it announced one) and the digest matches; otherwise the
    temporary is removed and a :class:`DownloadError` (:class:`ChecksumError` for a wrong digest) is raised."""
    expected = _check_md5(md5, url)
    request = urllib.request.Request(url, headers={str(k): str(v) for k, v in (headers or {}).items()})
    log.info("fetching %s to %s (expected MD5 %s)", url, target, expected)
    with atomic_path(target) as tmp:
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response, open(tmp, "wb") as handle:
                length = response.headers.get("Content-Length")
                announced = int(length) if length and length.isdigit() else None
                actual, size = _copy(response, handle, url, announced)
        except urllib.error.HTTPError as exc:
            raise DownloadError(f"{url}: HTTP {exc.code} {exc.reason}") from None
        except (urllib.error.URLError, http.client.HTTPException, OSError) as exc:
            reason = exc.reason if isinstance(exc, urllib.error.URLError) else repr(exc)
            raise DownloadError(f"{url}: the transfer failed ({reason}); nothing was kept") from None
        if announced is not None and size != announced:
            raise DownloadError(f"{url}: the transfer stopped after {size:,} of {announced:,} bytes; nothing was kept")
        if actual != expected:
            raise ChecksumError(url, expected, actual, size)
    log.info("%s: %s bytes, MD5 %s verified", target, f"{size:,}", actual)
    return actual


def _member_name(name: str) -> str:
    """A tar member's name without a leading ``./`` (archives are written either way)."""
    return str(PurePosixPath(name[2:] if name.startswith("./") else name))


def extract_member(archive: str | os.PathLike, member: str, target: str | os.PathLike, md5: str | None = None) -> str:
    """Stream one regular-file ``member`` of a (compressed) tar ``archive`` to ``target``; return its MD5 digest,
    which must equal ``md5`` when one is given. Only the member's bytes are written, at ``target``: no path from
    the archive is ever created. A missing member, or one that is not a regular file, is a :class:`DownloadError`
    listing a few of the archive's members."""
    expected = _check_md5(md5, f"{archive}:{member}")
    wanted = _member_name(member)
    seen: list[str] = []  # the first members met, named when the member is missing
    source = f"{archive}:{member}"
    log.info("extracting %s to %s", source, target)
    with atomic_path(target) as tmp:
        try:
            with tarfile.open(archive, mode="r|*") as tar:  # a stream: one pass, members read in order
                for info in tar:
                    name = _member_name(info.name)
                    if name != wanted:
                        if len(seen) <= 10:
                            seen.append(name)
                        continue
                    if not info.isfile():
                        raise DownloadError(f"{source}: the member is not a regular file")
                    reader = tar.extractfile(info)
                    with open(tmp, "wb") as handle:
                        actual, size = _copy(reader, handle, source, info.size)
                    break
                else:
                    listed = ", ".join(seen[:10]) + (", …" if len(seen) > 10 else "")
                    raise DownloadError(f"{archive}: no member named {member!r} (members: {listed or 'none'})")
        except (tarfile.TarError, EOFError, OSError) as exc:
            raise DownloadError(f"{archive}: cannot read the archive ({exc}); nothing was kept") from None
        if size != info.size:
            raise DownloadError(f"{source}: {size:,} of {info.size:,} bytes read; nothing was kept")
        if expected is not None and actual != expected:
            raise ChecksumError(source, expected, actual, size)
    log.info("%s: %s bytes%s", target, f"{size:,}", f", MD5 {actual} verified" if expected else "")
    return actual


# ------------------------------------------------------------------------------------------------- the config
def downloaded_files(config: dict) -> dict:
    """path → entry of the ``downloads`` entries fetched from a URL."""
    return {path: entry for path, entry in config.get("downloads", {}).items() if "url" in entry}


def extracted_files(config: dict) -> dict:
    """path → entry of the ``downloads`` entries unpacked from an archive."""
    return {path: entry for path, entry in config.get("downloads", {}).items() if "archive" in entry}


def check_downloads(config: dict, results: str = "results") -> None:
    """What the schema cannot say of ``downloads``: paths are relative, stay in the working folder and out of
    ``results/`` (the workflow's own outputs), and each archive is itself a downloaded entry."""
    downloads = config.get("downloads", {})
    fetched = downloaded_files(config)
    for path, entry in downloads.items():
        key = f"downloads.{path}"
        parts = PurePosixPath(path).parts
        if os.path.isabs(path) or ".." in parts or "\\" in path:
            raise ConfigError(key, "a downloaded file's path is relative to the working folder, without '..'")
        if parts and parts[0] == results:
            raise ConfigError(
                key, f"a downloaded file cannot live under {results}/, which holds the workflow's outputs"
            )
        if "archive" in entry:
            if entry["archive"] not in fetched:
                raise ConfigError(
                    f"{key}.archive",
                    f"{entry['archive']!r} is not a `downloads` entry with a url; "
                    f"the archive a member comes from is downloaded first",
                )
            if entry["archive"] == path:
                raise ConfigError(f"{key}.archive", "a file cannot be a member of itself")
