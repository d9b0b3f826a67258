"""Where a run's rankings lie: the rules' one pattern for its own index and another's, and rankings where an earlier
version put them (results/<run>/runs/, now rankings/): found, refused with the way on, and read from their new
folder where a mining card still records the old one."""

import re

import pytest

from hardneg.errors import HardnegError, OutputPathError, ResultsLayoutError
from hardneg.io.layout import (
    BY_INDEX_PATTERN,
    BY_INDEX_WILDCARD,
    Layout,
    by_index,
    index_slug,
    moved_ranking,
    old_ranking_folders,
    refuse_old_rankings,
    split_file,
)


def _old(root, *parts, files=("test.parquet",)):
    folder = root.joinpath(*parts, "runs")
    folder.mkdir(parents=True)
    for name in files:
        (folder / name).write_bytes(b"x")
    return str(folder)


def test_a_run_writes_its_rankings_in_rankings(tmp_path):
    layout = Layout(str(tmp_path))
    assert layout.ranking("bm25", "test") == f"{tmp_path}/bm25/rankings/test.parquet"
    assert layout.ranking_trec("ance/episodes/2", "train") == f"{tmp_path}/ance/episodes/2/rankings/train.trec"
    assert layout.ranking("star", "dev", "Flat") == f"{tmp_path}/star/by_index/Flat/rankings/dev.parquet"


@pytest.mark.parametrize("index", [None, "Flat", "OPQ8_PQ8"])
def test_the_rules_pattern_of_a_run_or_another_index_gives_the_layouts_paths(index):
    """The rules searching and evaluating a run, with its own index or another, write through one pattern: the
    {by_index} wildcard's value for ``index`` makes it the path the layout gives for that index."""
    layout, value = Layout("out"), by_index(index)
    assert re.fullmatch(BY_INDEX_PATTERN, value) and index_slug(value) == index
    for path in ("ranking", "ranking_trec", "query_embeddings", "query_ids"):
        pattern = getattr(layout, path)("{run}", "{split}", BY_INDEX_WILDCARD)
        assert pattern.format(run="ance/episodes/2", split="dev", by_index=value) == \
            getattr(layout, path)("ance/episodes/2", "dev", index)
    for path in ("metrics", "per_query"):
        assert getattr(layout, path)("{run}", BY_INDEX_WILDCARD).format(run="star", by_index=value) == \
            getattr(layout, path)("star", index)
    folder = "out/star" if index is None else f"out/star/by_index/{index}"  # a job's log and benchmark in it
    assert layout.log("{run}", "evaluate", BY_INDEX_WILDCARD).format(run="star", by_index=value) == \
        f"{folder}/logs/evaluate.log"
    assert layout.benchmark("star", "evaluate", index) == f"{folder}/benchmarks/evaluate.tsv"


def test_a_splits_file_is_named_in_one_place():
    """A job given a dataset's folder reads its split's file by the name the layout gives that file."""
    layout = Layout("out")
    assert split_file(layout.qrels_dir("tiny"), "dev") == layout.qrels("tiny", "dev") == \
        "out/datasets/tiny/qrels/dev.parquet"
    assert split_file(layout.queries_dir("tiny"), "train") == layout.queries("tiny", "train")
    assert split_file(layout.hidden_qrels_dir("tiny"), "train") == layout.hidden_qrels("tiny", "train")
    with pytest.raises(OutputPathError):
        split_file(layout.qrels_dir("tiny"), "../../escape")


def test_another_index_is_one_name(tmp_path):
    with pytest.raises(OutputPathError):
        Layout(str(tmp_path)).metrics("star", "../elsewhere")
    assert not re.fullmatch(BY_INDEX_PATTERN, "/by_index/a/b")


def test_old_folders_are_found_in_runs_episodes_and_other_indexes(tmp_path):
    found = [_old(tmp_path, "bm25"), _old(tmp_path, "star", "by_index", "Flat", files=("dev.trec",)),
             _old(tmp_path, "ance", "episodes", "1"), _old(tmp_path, "ance", "episodes", "1", "by_index", "IVF")]
    _old(tmp_path, "datasets", "toy")  # a dataset named like the folder: not a run's
    _old(tmp_path, "tables")
    _old(tmp_path, "warmup", files=())  # holds no ranking
    _old(tmp_path, "inbatch")
    (tmp_path / "inbatch" / "rankings").mkdir()  # the new folder is there: the old one is left alone
    assert old_ranking_folders(tmp_path) == sorted(found)
    assert old_ranking_folders(tmp_path / "missing") == []


def test_old_folders_are_refused_with_the_way_on(tmp_path):
    refuse_old_rankings(tmp_path)  # none: nothing to say
    folders = [_old(tmp_path, f"run{i}") for i in range(7)]
    with pytest.raises(ResultsLayoutError) as refused:
        refuse_old_rankings(tmp_path)
    message = str(refused.value)
    assert isinstance(refused.value, HardnegError)
    assert message.startswith(f"{tmp_path}: rankings where an earlier version put them: a run's rankings are now in "
                              "<run>/rankings/, not <run>/runs/")
    assert ", ".join(folders[:5]) + " and 2 more" in message
    assert f"mv {folders[0]} {folders[0][:-len('runs')]}rankings" in message and "--touch" in message


def test_a_recorded_path_in_a_renamed_folder_is_read_from_the_new_one(tmp_path):
    old = tmp_path / "warmup" / "runs" / "train.parquet"
    assert moved_ranking(old) == old  # neither there: as recorded
    (tmp_path / "warmup" / "rankings").mkdir(parents=True)
    (tmp_path / "warmup" / "rankings" / "train.parquet").write_bytes(b"x")
    assert moved_ranking(old) == tmp_path / "warmup" / "rankings" / "train.parquet"
    old.parent.mkdir()
    old.write_bytes(b"y")
    assert moved_ranking(old) == old  # still in its old place: that file
    other = tmp_path / "warmup" / "pools" / "train.parquet"
    assert moved_ranking(other) == other
