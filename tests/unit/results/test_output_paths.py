"""Where --output may be written: never over an existing file or folder or inside the results folder without
--force, never over a link, a FIFO, a socket or a device, and never a folder that holds something else."""

import os
import socket

import pytest

from hardneg.errors import HardnegError
from hardneg.results.output_paths import check_output, inside


@pytest.fixture
def work(tmp_path, monkeypatch):
    """A working folder with a results folder, a file, an export folder, an empty folder and a folder of notes."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "results" / "star").mkdir(parents=True)
    (tmp_path / "results" / "star" / "hardnegs.parquet").write_bytes(b"PAR1")
    (tmp_path / "notes.txt").write_text("keep me")
    (tmp_path / "export").mkdir()
    (tmp_path / "export" / "done.json").write_text("{}")
    (tmp_path / "empty").mkdir()
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep me")
    return tmp_path


def check(path, folder=False, force=False):
    return check_output(path, folder=folder, what="test export", results="results", force=force,
                        previous=lambda p: (p / "done.json").is_file())


def refused(path, match, folder=False, force=False):
    with pytest.raises(HardnegError, match=match):
        check(path, folder=folder, force=force)


def test_new_paths_outside_the_results_are_accepted(work):
    assert str(check("new.jsonl")) == "new.jsonl"
    assert str(check("out/deeper/new.jsonl")) == "out/deeper/new.jsonl"  # missing folders are made when writing
    assert not (work / "out").exists()  # but not by the check
    assert str(check("new_folder", folder=True)) == "new_folder"


def test_an_existing_file_or_folder_needs_force(work):
    refused("notes.txt", r"--output notes.txt already exists \(a file\): give --force to replace it")
    assert str(check("notes.txt", force=True)) == "notes.txt"
    refused("export", r"--output export already exists \(an earlier test export\): give --force", folder=True)
    assert str(check("export", folder=True, force=True)) == "export"
    refused("empty", r"--output empty already exists \(an empty folder\): give --force", folder=True)
    assert str(check("empty", folder=True, force=True)) == "empty"


def test_anything_inside_the_results_folder_needs_force_and_no_file_there_is_replaced(work):
    refused("results/star/hardnegs.parquet", "--output results/star/hardnegs.parquet is inside the results folder "
                                             "results, where the workflow keeps its artifacts: give a path outside "
                                             "it, or --force")
    refused("results/star/new.jsonl", "is inside the results folder")  # a new file there too
    refused("results/star/st", "is inside the results folder", folder=True)
    refused(work / "elsewhere" / ".." / "results" / "x.jsonl", "is inside the results folder")
    os.symlink(work / "results" / "star", work / "star_link")  # through a linked folder
    refused("star_link/x.jsonl", "is inside the results folder")
    assert str(check("results/star/new.jsonl", force=True)) == "results/star/new.jsonl"  # a new file, with --force
    # an existing file there, never: an artifact the workflow would then find up to date
    refused("results/star/hardnegs.parquet", "--output results/star/hardnegs.parquet is a file of the results "
                                             "folder results .*: --force writes a new file there but replaces none",
            force=True)
    assert inside("results", "results") and not inside("results2/x", "results")


def test_force_never_replaces_what_is_not_an_output_of_the_same_shape(work):
    refused("mine", "--output mine is a folder that holds something other than a test export", folder=True, force=True)
    refused("mine", "--output mine is a folder; the test export is written as one file", force=True)
    refused("notes.txt", "--output notes.txt is a file; the test export is written as a folder", folder=True,
            force=True)
    refused("results", "holds something other than a test export", folder=True, force=True)


def test_links_fifos_sockets_and_devices_are_refused_even_with_force(work):
    os.symlink(work / "notes.txt", work / "link.jsonl")
    refused("link.jsonl", r"--output link.jsonl is a symbolic link \(to .*notes.txt\): writing would replace the "
                          "link, not what it points to", force=True)
    os.symlink(work / "nowhere", work / "dangling.jsonl")
    refused("dangling.jsonl", "is a symbolic link", force=True)
    os.symlink(work / "export", work / "folder_link")
    refused("folder_link", "is a symbolic link", folder=True, force=True)
    os.mkfifo(work / "fifo")
    refused("fifo", r"--output fifo is a FIFO \(named pipe\), not a file: hardneg writes only regular files and "
                    "folders", force=True)
    refused("fifo", "is a FIFO", folder=True, force=True)
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(work / "sock"))
        refused("sock", "--output sock is a socket, not a file", force=True)
    refused("/dev/null", "--output /dev/null is a character device, not a file", force=True)


def test_paths_that_cannot_be_a_file(work):
    refused("", "--output is empty: give the path of the file to write", force=True)
    refused("", "--output is empty: give the path of the folder to write", folder=True, force=True)
    refused("notes.txt/x.jsonl", f"--output notes.txt/x.jsonl cannot be written: {work / 'notes.txt'} is not a "
                                 "folder", force=True)
    os.symlink(work / "nowhere", work / "gone")
    refused("gone/x.jsonl", "cannot be written: .*gone is a broken symbolic link", force=True)
    assert sorted(p.name for p in work.iterdir()) == ["empty", "export", "gone", "mine", "notes.txt", "results"]
