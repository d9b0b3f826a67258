"""Snakemake's download and extract_member rules, for real, from file:// URLs (the downloads themselves:
tests/unit/datasets/test_download.py)."""

import hashlib

import pytest
import yaml

from tests.support.downloads import MD5, PAYLOAD, make_archive, small_config
from tests.support.workflow import snakemake


@pytest.mark.slow
def test_the_rules_fetch_and_unpack_before_the_dataset_needs_them(tmp_path):
    """Snakemake's download and extract_member jobs, for real, from file:// URLs: the archive is verified, its
    member streamed out, a plain file fetched, each job's log written; then the files are up to date."""
    archive = make_archive(tmp_path / "server" / "bundle.tar.gz", {"./collection.tsv": PAYLOAD})
    (tmp_path / "server" / "qrels.tsv").write_bytes(b"q1 0 7 1\n")
    work = tmp_path / "work"
    config = small_config({
        "data/bundle.tar.gz": {"url": archive.as_uri(), "md5": hashlib.md5(archive.read_bytes()).hexdigest()},
        "data/collection.tsv": {"archive": "data/bundle.tar.gz", "member": "collection.tsv", "md5": MD5},
        "data/qrels.tsv": {"url": (tmp_path / "server" / "qrels.tsv").as_uri(),
                           "md5": hashlib.md5(b"q1 0 7 1\n").hexdigest()}})
    work.mkdir()
    (work / "my.yaml").write_text(yaml.safe_dump(config))
    command = ["data/collection.tsv", "data/qrels.tsv", "--configfile", str(work / "my.yaml")]
    result = snakemake(work, *command, cores=1)
    assert result.returncode == 0, result.stderr[-3000:]
    assert (work / "data" / "collection.tsv").read_bytes() == PAYLOAD
    assert (work / "data" / "qrels.tsv").read_bytes() == b"q1 0 7 1\n"
    log = (work / "results" / "datasets" / "_downloads" / "logs" / "data" / "bundle.tar.gz.log").read_text()
    assert "verified" in log
    again = snakemake(work, *command, "-n", cores=1)
    assert again.returncode == 0 and "Nothing to be done" in again.stdout + again.stderr
