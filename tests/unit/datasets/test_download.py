"""Fetching raw data (hardneg.datasets.download, rules download and extract_member), without the network: a file://
URL or an HTTP server on 127.0.0.1. A right checksum puts the file in place; a wrong one, a failed or cut transfer
and a missing archive member are errors naming what failed, and nothing is left at the target or beside it. The
rules, run by Snakemake: tests/workflow/test_download_rules.py."""

import http.server
import threading
from pathlib import Path

import pytest

from hardneg.datasets.download import ChecksumError, DownloadError, check_downloads, download, extract_member
from hardneg.errors import ConfigError
from hardneg.pipeline.config import validate_config
from hardneg.pipeline.resources import check_resource_rules, rule_resources
from tests.support.downloads import MD5, PAYLOAD, make_archive, small_config

WRONG = "0" * 32


def leftovers(folder: Path) -> list[str]:
    """Everything in ``folder`` (the target's folder: a kept file or an atomic write's temporary)."""
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


@pytest.fixture
def source(tmp_path) -> Path:
    path = tmp_path / "server" / "collection.tsv"
    path.parent.mkdir()
    path.write_bytes(PAYLOAD)
    return path


def test_a_right_checksum_puts_the_file_in_place(tmp_path, source):
    target = tmp_path / "data" / "collection.tsv"
    assert download(source.as_uri(), target, MD5) == MD5
    assert target.read_bytes() == PAYLOAD
    assert leftovers(target.parent) == ["collection.tsv"]


def test_a_wrong_checksum_names_url_and_digests_and_leaves_nothing(tmp_path, source):
    target = tmp_path / "data" / "collection.tsv"
    with pytest.raises(ChecksumError) as caught:
        download(source.as_uri(), target, WRONG)
    message = str(caught.value)
    assert source.as_uri() in message and f"expected MD5 {WRONG}" in message and f"got {MD5}" in message
    assert (caught.value.expected, caught.value.actual, caught.value.size) == (WRONG, MD5, len(PAYLOAD))
    assert leftovers(target.parent) == []


def test_a_wrong_checksum_keeps_the_file_that_was_there(tmp_path, source):
    """The new bytes never replace the target unless verified (Snakemake removes outputs before a job anyway)."""
    target = tmp_path / "data" / "collection.tsv"
    target.parent.mkdir()
    target.write_bytes(b"old")
    with pytest.raises(ChecksumError):
        download(source.as_uri(), target, WRONG)
    assert target.read_bytes() == b"old" and leftovers(target.parent) == ["collection.tsv"]


def test_a_missing_source_is_a_download_error(tmp_path):
    target = tmp_path / "data" / "x.tsv"
    with pytest.raises(DownloadError, match="the transfer failed"):
        download((tmp_path / "nowhere.tsv").as_uri(), target, MD5)
    assert leftovers(target.parent) == []


def test_a_malformed_digest_is_refused_before_fetching(tmp_path, source):
    with pytest.raises(ValueError, match="not an MD5 digest"):
        download(source.as_uri(), tmp_path / "x", "abc")


class _Handler(http.server.BaseHTTPRequestHandler):
    """/ok: the payload; /short: announces more bytes than it sends; anything else: 404. Records request headers."""

    seen_headers: list = []

    def do_GET(self):  # noqa: N802 (http.server's name)
        type(self).seen_headers.append(dict(self.headers))
        if self.path == "/ok":
            self.send_response(200)
            self.send_header("Content-Length", str(len(PAYLOAD)))
            self.end_headers()
            self.wfile.write(PAYLOAD)
        elif self.path == "/short":
            self.send_response(200)
            self.send_header("Content-Length", str(len(PAYLOAD) + 1000))
            self.end_headers()
            self.wfile.write(PAYLOAD)
            self.close_connection = True
        else:
            self.send_error(404, "Not Found")

    def log_message(self, *args):  # keep the test output quiet
        pass


@pytest.fixture
def server():
    _Handler.seen_headers = []
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    # shutdown() waits for the loop to look again: every 50 ms, not the default half second, at each test's end
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def test_http_download_sends_the_headers(tmp_path, server):
    target = tmp_path / "data" / "collection.tsv"
    download(f"{server}/ok", target, MD5, headers={"X-Ms-Version": "2019-12-12"})
    assert target.read_bytes() == PAYLOAD
    assert _Handler.seen_headers[-1].get("X-Ms-Version") == "2019-12-12"


def test_http_wrong_checksum_leaves_nothing(tmp_path, server):
    target = tmp_path / "data" / "collection.tsv"
    with pytest.raises(ChecksumError, match=f"{server}/ok: checksum mismatch"):
        download(f"{server}/ok", target, WRONG)
    assert leftovers(target.parent) == []


def test_http_errors_and_cut_transfers_leave_nothing(tmp_path, server):
    target = tmp_path / "data" / "collection.tsv"
    with pytest.raises(DownloadError, match="HTTP 404"):
        download(f"{server}/missing", target, MD5)
    with pytest.raises(DownloadError) as caught:
        download(f"{server}/short", target, MD5)
    assert f"{server}/short" in str(caught.value) and not isinstance(caught.value, ChecksumError)
    assert leftovers(target.parent) == []


def test_a_member_is_streamed_out_with_or_without_a_leading_dot(tmp_path):
    archive = make_archive(tmp_path / "a.tar.gz", {"./collection.tsv": PAYLOAD, "qrels.train.tsv": b"1 0 7 1\n"})
    target = tmp_path / "data" / "collection.tsv"
    assert extract_member(archive, "collection.tsv", target, MD5) == MD5
    assert target.read_bytes() == PAYLOAD
    extract_member(archive, "qrels.train.tsv", tmp_path / "data" / "qrels.tsv")
    assert (tmp_path / "data" / "qrels.tsv").read_bytes() == b"1 0 7 1\n"
    assert leftovers(tmp_path / "data") == ["collection.tsv", "qrels.tsv"]


def test_a_wrong_member_checksum_or_a_missing_member_leaves_nothing(tmp_path):
    archive = make_archive(tmp_path / "a.tar.gz", {"collection.tsv": PAYLOAD, "queries.train.tsv": b"1\tq\n"})
    target = tmp_path / "data" / "x.tsv"
    with pytest.raises(ChecksumError, match=f"a.tar.gz:collection.tsv: checksum mismatch: expected MD5 {WRONG}"):
        extract_member(archive, "collection.tsv", target, WRONG)
    with pytest.raises(DownloadError, match=r"no member named 'qrels.dev.small.tsv' \(members: collection.tsv, "
                                            r"queries.train.tsv\)"):
        extract_member(archive, "qrels.dev.small.tsv", target)
    assert leftovers(target.parent) == []


def test_a_broken_archive_is_a_download_error(tmp_path):
    broken = tmp_path / "a.tar.gz"
    broken.write_bytes(make_archive(tmp_path / "b.tar.gz", {"collection.tsv": PAYLOAD}).read_bytes()[:200])
    target = tmp_path / "data" / "x.tsv"
    with pytest.raises(DownloadError, match="a.tar.gz"):
        extract_member(broken, "collection.tsv", target)
    assert leftovers(target.parent) == []


@pytest.mark.parametrize("downloads, key, message", [
    ({"data/x.tsv": {"url": "https://example.org/x.tsv"}}, "downloads.data/x.tsv.md5", "required key is missing"),
    ({"data/x.tsv": {"url": "https://example.org/x.tsv", "md5": "XYZ"}}, "downloads.data/x.tsv.md5", "does not match"),
    ({"data/x.tsv": {"url": "ftp://example.org/x.tsv", "md5": MD5}}, "downloads.data/x.tsv.url", "does not match"),
    ({"data/x.tsv": {"archive": "data/a.tar.gz"}}, "downloads.data/x.tsv.member", "required key is missing"),
    ({"data/x.tsv": {"archive": "data/a.tar.gz", "member": "x.tsv"}}, "downloads.data/x.tsv.archive",
     "not a `downloads` entry with a url"),
    ({"/abs/x.tsv": {"url": "https://example.org/x.tsv", "md5": MD5}}, "downloads./abs/x.tsv", "relative"),
    ({"results/x.tsv": {"url": "https://example.org/x.tsv", "md5": MD5}}, "downloads.results/x.tsv", "under results/"),
])
def test_bad_downloads_entries_are_config_errors(downloads, key, message):
    with pytest.raises(ConfigError) as caught:
        validate_config(small_config(downloads))
    assert caught.value.key == key and message in caught.value.message


def test_downloads_entries_get_their_defaults():
    config = validate_config(small_config({
        "data/a.tar.gz": {"url": "https://example.org/a.tar.gz", "md5": MD5},
        "data/x.tsv": {"archive": "data/a.tar.gz", "member": "x.tsv"}}))
    assert config["downloads"]["data/a.tar.gz"]["headers"] == {}
    assert config["downloads"]["data/x.tsv"]["md5"] is None
    check_downloads(config)


def test_rule_resources_come_from_the_config_and_names_are_checked():
    config = {"resources": {"train_dense": {"runtime": 2880}}}
    assert rule_resources(config, "train_dense", mem_mb=8000, runtime=240) == {"mem_mb": 8000, "runtime": 2880}
    assert rule_resources(config, "tokenize", mem_mb=4000, runtime=60) == {"mem_mb": 4000, "runtime": 60}
    check_resource_rules(config, ["train_dense", "tokenize"])
    with pytest.raises(ConfigError) as caught:
        check_resource_rules({"resources": {"train_dens": {"runtime": 1}}}, ["train_dense", "tokenize"])
    assert caught.value.key == "resources.train_dens" and "rules: tokenize, train_dense" in caught.value.message
