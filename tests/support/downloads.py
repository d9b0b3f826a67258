"""Raw data to fetch: a payload of MS MARCO passage lines and its MD5, a tar.gz archive of members, and a small config
naming downloads."""

import hashlib
import io
import tarfile
from pathlib import Path

PAYLOAD = b"".join(b"%d\tpassage number %d\n" % (i, i) for i in range(5000))  # ~100 kB, several chunks of a read
MD5 = hashlib.md5(PAYLOAD).hexdigest()


def make_archive(path: Path, members: dict) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(path, "w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def small_config(downloads: dict) -> dict:
    return {"dataset": "tiny", "datasets": {"tiny": {"adapter": "synthetic", "num_docs": 200, "docs_per_cluster": 20,
                                                      "num_queries": {"train": 20, "test": 10}}},
            "runs": {"bm25": {"method": "bm25"}}, "downloads": downloads}
