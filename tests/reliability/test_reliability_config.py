"""Bad config files through both real entry points: ``hardneg check-config`` and ``snakemake -n`` (on the file
given with ``--configfile``, or on the working folder's ``config/config.yaml``).

Each case asserts that both refuse the config with a non-zero exit status and one message, said once, that names
the file and line or the config key and says what is wrong; that both say the same thing; that neither shows a
Python traceback; and that nothing is created under ``results/``. A few valid configs check the agreement the
other way: both accept them.

Snakemake reads a ``--configfile`` file with its own YAML reader before the Snakefile reads it again with
hardneg's; what that reader cannot survive (a FIFO, which it waits on; a folder; invalid UTF-8; a mapping or list
used as a key; nesting deeper than about 300 levels; aliases of mappings expanding exponentially, which it copies
one by one) is given here as the working folder's ``config/config.yaml``, which only hardneg's reader reads.
"""

from __future__ import annotations

import copy
import os
import re
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pytest
import yaml

from tests.support.configs import FALSE_NEGATIVES_CONFIG
from tests.support.workflow import BIN, output_of, snakemake

pytestmark = pytest.mark.slow

HARDNEG = str(BIN / "hardneg")
LIMIT_S = 60  # a case that takes longer hangs (a FIFO read, an alias bomb expanded)

VALID = {"seed": 1, "dataset": "tiny", "evaluation": {"split": "test"},
         "datasets": {"tiny": {"adapter": "synthetic", "num_docs": 200, "docs_per_cluster": 20,
                               "concept_vocab": 100, "num_queries": {"train": 20, "test": 10}}},
         "runs": {"bm25": {"method": "bm25", "params": {"top_k": 10}}}}


# ------------------------------------------------------------------------------------------ config writers
def _text(text: str | bytes) -> Callable[[Path], None]:
    def write(path: Path) -> None:
        path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
    return write


def _valid_with(*edits: tuple[tuple, object]) -> Callable[[Path], None]:
    """VALID with each (key path, value) set; value None deletes the key."""
    config = copy.deepcopy(VALID)
    for keys, value in edits:
        node = config
        for key in keys[:-1]:
            node = node.setdefault(key, {})
        if value is None:
            del node[keys[-1]]
        else:
            node[keys[-1]] = value
    return _text(yaml.safe_dump(config, sort_keys=False))


def _runs(**runs) -> Callable[[Path], None]:
    return _valid_with((("runs",), {**VALID["runs"], **runs}))


def _nested(depth: int) -> str:
    return "seed: 1\npq_matrix:\n  params:\n    deep: " + "[" * depth + "]" * depth + "\n"


def _list_bomb() -> str:
    """Nine levels of aliases, each a list of nine of the level below: 9**9 strings under evaluation.measures."""
    lines = ['l0: &l0 ["RR@10", "RR@10", "RR@10", "RR@10", "RR@10", "RR@10", "RR@10", "RR@10", "RR@10"]']
    lines += [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]" for i in range(1, 9)]
    return "\n".join(lines) + "\nevaluation:\n  measures: *l8\n"


def _mapping_bomb() -> str:
    lines = ["m0: &m0 {a: 1, b: 2, c: 3, d: 4, e: 5, f: 6, g: 7, h: 8, i: 9}"]
    lines += [f"m{i}: &m{i} {{{', '.join(f'k{j}: *m{i - 1}' for j in range(9))}}}" for i in range(1, 9)]
    return "\n".join(lines) + "\npq_matrix: {docs: bm25, indexes: [Flat], params: *m8}\n"


def _folder(path: Path) -> None:
    path.mkdir()
    (path / "config.yaml").write_text(yaml.safe_dump(VALID))


def _fifo(path: Path) -> None:
    os.mkfifo(path)


VALID_TEXT = yaml.safe_dump(VALID, sort_keys=False)


# ------------------------------------------------------------------------------------------------- cases
@dataclass(frozen=True)
class Case:
    id: str
    write: Callable[[Path], None]  # writes the config file at the path given
    expect: str  # the start of the one message; {path} is the config file as both entry points name it
    via: str = "configfile"  # configfile: --configfile FILE; workdir: config/config.yaml; second: the second of two
    seconds: float | None = None  # each entry point must answer within this


CASES = [
    # the YAML reader's limits
    Case("nesting-too-deep", _text(_nested(100)),
         "{path}, line 4: mappings and lists nested more than 64 levels deep"),
    Case("nesting-thousands-deep", _text(_nested(5000)),
         "{path}, line 4: mappings and lists nested more than 64 levels deep", via="workdir"),
    Case("alias-bomb-of-lists", _text(_list_bomb()),
         "{path}, line 5: the aliases (*name) expand to more than 10000 values in all", seconds=10),
    Case("alias-bomb-of-mappings", _text(_mapping_bomb()),
         "{path}, line 4: the aliases (*name) expand to more than 10000 values in all", via="workdir", seconds=10),
    Case("alias-inside-itself", _text(VALID_TEXT + "method_modules: &self [*self]\n"),
         f"{{path}}, line {VALID_TEXT.count(chr(10)) + 1}: an alias (*name) inside the very mapping or list it names"),
    Case("file-too-large", _text(VALID_TEXT + "# " + "x" * (1 << 20) + "\n"),
         f"{{path}}: holds {len(VALID_TEXT) + 3 + (1 << 20)} bytes; a config file may hold at most 1048576 bytes "
         f"(1 MiB)", via="workdir"),
    Case("list-as-key", _text("seed: 1\n? [a, b]\n: 2\n"),
         "{path}, line 2: invalid YAML: a list cannot be a key", via="workdir"),
    Case("mapping-as-key", _text("seed: 1\nruns:\n  ? {bm25: 1}\n  : {method: bm25}\n"),
         "{path}, line 3: invalid YAML: a mapping cannot be a key", via="workdir"),
    Case("config-is-a-folder", _folder, "{path}: is a folder, not a file", via="workdir"),
    Case("config-is-a-fifo", _fifo, "{path}: is a FIFO (named pipe), not a regular file", via="workdir", seconds=10),
    Case("invalid-utf8", _text(b"seed: 1\ndataset: caf\xe9\n"),
         "{path}, line 2: invalid UTF-8 (invalid continuation byte at byte 20)", via="workdir"),
    # keys written twice: Snakemake's own reader keeps the last
    Case("duplicate-key", _text(VALID_TEXT + "seed: 2\n"),
         f"{{path}}, line {VALID_TEXT.count(chr(10)) + 1}: invalid YAML: duplicate key 'seed' (first on line 1)"),
    Case("duplicate-run", _text(VALID_TEXT + "  bm25: {method: bm25}\n"),
         f"{{path}}, line {VALID_TEXT.count(chr(10)) + 1}: invalid YAML: duplicate key 'bm25' "
         f"(first on line {VALID_TEXT.splitlines().index('  bm25:') + 1})"),
    Case("duplicate-key-in-the-second-file", _text("seed: 5\nseed: 6\n"),
         "{path}, line 2: invalid YAML: duplicate key 'seed' (first on line 1)", via="second"),
    # the rules the `resources` section may name
    Case("resources-of-no-rule", _valid_with((("resources",), {"nosuchrule": {"mem_mb": 1000}})),
         "config key 'resources.nosuchrule': no rule named 'nosuchrule' takes its resources from the config; "
         "rules: adore_index_table, assemble_episodes,"),
    Case("resources-misspelt", _valid_with((("resources",), {"train_dens": {"runtime": 60}})),
         "config key 'resources.train_dens': no rule named 'train_dens' takes its resources from the config"),
    # targets: a run name, or a path under results/
    Case("target-absolute", _valid_with((("targets",), ["/etc/passwd"])),
         "config key 'targets.0': '/etc/passwd' is an absolute path; a target is a run name or a path under results/"),
    Case("target-the-results-folder", _valid_with((("targets",), ["bm25", "results/"])),
         "config key 'targets.1': 'results/' is not a path under results/"),
    Case("target-climbing-out", _valid_with((("targets",), ["results/../../etc/passwd"])),
         "config key 'targets.0': 'results/../../etc/passwd' is not a path under results/"),
    Case("target-outside-results", _valid_with((("targets",), ["config/config.yaml"])),
         "config key 'targets.0': 'config/config.yaml' is not a path under results/"),
    Case("target-path-with-newline", _valid_with((("targets",), ["results/bm25/metrics.json\n"])),
         "config key 'targets.0': 'results/bm25/metrics.json\\n' holds a space or a control character"),
    Case("target-run-with-newline", _valid_with((("targets",), ["bm25\n"])),
         "config key 'targets.0': no run named 'bm25\\n'"),
    # names that end in a newline ('$' matches before one)
    Case("run-name-with-newline", _runs(**{"tiny\n": {"method": "bm25"}}),
         "config key 'runs.tiny\\n': invalid name 'tiny\\n': a name becomes a file name"),
    Case("dataset-name-with-newline",
         _valid_with((("datasets",), {"tiny\n": VALID["datasets"]["tiny"]}), (("dataset",), "tiny\n")),
         "config key 'datasets.tiny\\n': invalid name 'tiny\\n': a name becomes a file name"),
    Case("split-name-with-newline", _valid_with((("datasets", "tiny", "num_queries"), {"train": 20, "test\n": 10})),
         "config key 'datasets.tiny.num_queries.test\\n': invalid name 'test\\n': a name becomes a file name"),
    Case("evaluation-split-with-newline", _valid_with((("evaluation", "split"), "test\n")),
         "config key 'evaluation.split': invalid name 'test\\n': a name becomes a file name"),
    # run names taken by the results folder's own entries
    Case("run-named-report.html", _runs(**{"report.html": {"method": "bm25"}}),
         "config key 'runs.report.html': the name 'report.html' is reserved: results/report.html holds the report"),
    Case("run-named-summary.md", _runs(**{"summary.md": {"method": "bm25"}}),
         "config key 'runs.summary.md': the name 'summary.md' is reserved: results/summary.md holds the summary"),
    Case("run-named-tables", _runs(tables={"method": "bm25"}),
         "config key 'runs.tables': the name 'tables' is reserved: results/tables holds the cross-run tables"),
    Case("run-named-figures", _runs(figures={"method": "bm25"}),
         "config key 'runs.figures': the name 'figures' is reserved: results/figures holds the figures"),
    Case("run-named-Datasets", _runs(Datasets={"method": "bm25"}),
         "config key 'runs.Datasets': the name 'Datasets' is reserved: results/datasets holds the prepared datasets "
         "(a file system that ignores case sees one name)"),
]

# Mining that would select nothing, or less than it asks (a STAR run mining the warm-up's ranking of top 50)
WARMUP = {"method": "warmup", "inputs": {"negatives": "bm25"}, "params": {"search": {"top_k": 50}}}


def _star(mining: dict, **more) -> Callable[[Path], None]:
    star = {"method": "star", "inputs": {"init": "warmup", "negatives": "warmup", "bm25": "bm25"},
            "params": {"mining": mining}}
    return _valid_with((("runs",), {**VALID["runs"], "warmup": WARMUP, "star": star}),
                       *[((key,), value) for key, value in more.items()])


CASES += [
    Case("mining-rank-range-beyond-the-pool", _star({"depth": 30, "rank_range": [31, 40]}),
         "config key 'runs.star.params.mining.rank_range': ranks 31 to 40 reach beyond the 30 candidates of run "
         "star's pool (runs.star.params.mining.depth 30): it would select nothing"),
    Case("mining-rank-range-partly-beyond-the-pool", _star({"depth": 30, "rank_range": [20, 40]}),
         "config key 'runs.star.params.mining.rank_range': ranks 20 to 40 reach beyond the 30 candidates of run "
         "star's pool (runs.star.params.mining.depth 30): it would select ranks 20 to 30 only"),
    Case("mining-named-policy-beyond-the-pool",
         _star({"depth": 30, "policy": "window"}, policies={"window": {"rank_range": [31, 40]}}),
         "config key 'policies.window.rank_range': ranks 31 to 40 reach beyond the 30 candidates of run star's pool"),
    Case("mining-depth-beyond-the-miners-ranking", _star({"depth": 100}),
         "config key 'runs.star.params.mining.depth': 100 is deeper than the ranking of run star's miner warmup "
         "(runs.warmup.params.search.top_k: 50): its pool would hold ranks up to 50 only"),
    Case("mining-ce-threshold-zero", _star({"depth": 30, "ce_threshold": 0}),
         "config key 'runs.star.params.mining.ce_threshold': ce_threshold 0 drops every candidate"),
    Case("mining-ce-threshold-without-a-cross-encoder", _star({"depth": 30, "ce_threshold": 0.9}),
         "config key 'runs.star.params.mining.ce_threshold': filters by a cross-encoder's scores, but run star names "
         "no cross-encoder to score its pool"),
    Case("mining-ce-margin-without-a-cross-encoder", _star({"depth": 30, "ce_margin": 0.1}),
         "config key 'runs.star.params.mining.ce_margin': filters by a cross-encoder's scores, but run star names "
         "no cross-encoder to score its pool"),
    # a split name the runs do not find
    Case("training-split-misspelt",
         _valid_with((("datasets", "tiny", "num_queries"), {"trian": 20, "test": 10}),
                     (("runs",), {**VALID["runs"], "warmup": WARMUP})),
         "config key 'runs.warmup.params.train.split': dataset 'tiny' has no split 'train' to train on; it has "
         "trian, test"),
    # a run of the name the false-negative experiment gives the run it trains
    Case("run-named-like-a-generated-one",
         _text(yaml.safe_dump({**FALSE_NEGATIVES_CONFIG,
                               "false_negatives": {**FALSE_NEGATIVES_CONFIG["false_negatives"], "train": True},
                               "runs": {**FALSE_NEGATIVES_CONFIG["runs"], "inbatch_fn_top": {"method": "bm25"}}},
                              sort_keys=False)),
         "config key 'runs.inbatch_fn_top': the false_negatives experiment trains a run of this name"),
    # a comparison of a run the config lacks (its page no rule could build: "No rule to produce")
    Case("compare-names-an-unknown-run",
         _valid_with((("compare",), [{"name": "mine", "runs": ["bm25", "bm52"]}])),
         "config key 'compare.0.runs.1': no run named 'bm52'"),
    # the results folder: results/ or a folder of its own inside it
    Case("results-outside-results", _valid_with((("results",), "/tmp/elsewhere")),
         "config key 'results': '/tmp/elsewhere' is not the folder results or a folder inside it"),
    Case("results-in-a-reserved-folder", _valid_with((("results",), "results/tables")),
         "config key 'results': results/tables holds the cross-run tables"),
    Case("results-in-a-runs-folder", _valid_with((("results",), "results/bm25")),
         "config key 'results': results/bm25 is the folder of this config's run 'bm25'"),
]
assert len(CASES) >= 32 and len({case.id for case in CASES}) == len(CASES)


@dataclass(frozen=True)
class Valid:
    id: str
    files: tuple[str, ...]  # the config files' texts, merged in order
    via: str = "configfile"
    planned: str = "results/bm25/metrics.json"


VALID_CASES = [
    Valid("one-file", (VALID_TEXT,)),
    Valid("anchors-merge-keys-targets-and-resources", (
        VALID_TEXT.replace("params:\n      top_k: 10", "params: &bm25 {top_k: 10}") +
        "  bm25b: {method: bm25, params: {<<: *bm25, k1: 1.2}}\n"
        "targets: [bm25, results/bm25b/config.yaml, ./results/bm25/metrics.json]\n"
        "resources:\n  bm25_search: {mem_mb: 1000, runtime: 5}\n  figure_tsne: {runtime: 5}\n",), via="workdir",
        planned="results/bm25b/config.yaml"),
    Valid("two-files-merged", (VALID_TEXT, "seed: 2\nruns:\n  bm25b: {method: bm25}\n"),
          planned="results/bm25b/metrics.json"),
]


# ---------------------------------------------------------------------------------------------- running
def _config_paths(workdir: Path, users: Path, case_via: str, writers: list[Callable[[Path], None]]) -> list[str]:
    """Write the configs and return them as both entry points are given them."""
    if case_via == "workdir":
        (workdir / "config").mkdir(parents=True)
        writers[0](workdir / "config" / "config.yaml")
        return ["config/config.yaml"]
    workdir.mkdir(parents=True)
    users.mkdir()
    paths = []
    for position, writer in enumerate(writers):
        path = users / f"config{position}.yaml"
        writer(path)
        paths.append(str(path))
    return paths


def _check_config(workdir: Path, paths: list[str]) -> tuple[subprocess.CompletedProcess, float]:
    start = time.monotonic()
    result = subprocess.run([HARDNEG, "check-config", *paths], capture_output=True, text=True, cwd=workdir,
                            timeout=LIMIT_S)
    return result, time.monotonic() - start


def _dry_run(workdir: Path, via: str, paths: list[str]) -> tuple[subprocess.CompletedProcess, float]:
    args = [] if via == "workdir" else ["--configfile", *paths]
    start = time.monotonic()
    result = snakemake(workdir, "-n", *args, cores=None, timeout=LIMIT_S)
    return result, time.monotonic() - start


def _snakemake_message(out: str) -> str:
    """The message of the error Snakemake reports while reading the Snakefile (between its header, ``XError in
    file "..."``, and the locations it lists)."""
    found = re.search(r'^\w+Error in file "[^"]*", line \d+:\n(.*?)\n  File "', out, re.DOTALL | re.MULTILINE)
    assert found, out[-3000:]
    return found.group(1)


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_a_bad_config_is_refused_by_both_entry_points_alike(case, tmp_path):
    workdir, users = tmp_path / "work", tmp_path / "user"
    writers = [_text(VALID_TEXT), case.write] if case.via == "second" else [case.write]
    paths = _config_paths(workdir, users, case.via, writers)
    expect = case.expect.format(path=paths[-1])

    checked, check_seconds = _check_config(workdir, paths)
    assert checked.returncode == 2, checked.stdout + checked.stderr
    assert checked.stdout == "" and "Traceback" not in checked.stderr, checked.stderr[-3000:]
    assert checked.stderr.startswith("hardneg: error: ") and checked.stderr.count("hardneg: error:") == 1
    assert checked.stderr.count(expect) == 1, f"{expect!r} not said once in:\n{checked.stderr[-3000:]}"

    planned, plan_seconds = _dry_run(workdir, case.via, paths)
    out = output_of(planned)
    assert planned.returncode != 0, out[-3000:]
    assert "Traceback" not in out and "RecursionError" not in out and "MemoryError" not in out, out[-3000:]
    assert out.count(expect) == 1, f"{expect!r} not said once in:\n{out[-3000:]}"
    message = _snakemake_message(out)
    assert message.startswith(expect)
    assert checked.stderr.count(message) == 1, (message, checked.stderr)  # the same words from both

    assert not (workdir / "results").exists()
    if case.seconds is not None:
        assert check_seconds < case.seconds and plan_seconds < case.seconds, (check_seconds, plan_seconds)


@pytest.mark.parametrize("case", VALID_CASES, ids=[case.id for case in VALID_CASES])
def test_a_valid_config_is_accepted_by_both_entry_points(case, tmp_path):
    workdir, users = tmp_path / "work", tmp_path / "user"
    paths = _config_paths(workdir, users, case.via, [_text(text) for text in case.files])

    checked, _ = _check_config(workdir, paths)
    assert checked.returncode == 0, checked.stderr[-3000:]
    assert checked.stdout.startswith(f"{' + '.join(paths)}: valid\n") and "  run bm25: method bm25" in checked.stdout

    planned, _ = _dry_run(workdir, case.via, paths)
    out = output_of(planned)
    assert planned.returncode == 0, out[-3000:]
    assert case.planned in out, out[-3000:]
    assert not (workdir / "results").exists()
