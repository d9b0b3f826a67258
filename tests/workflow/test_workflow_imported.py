"""Training on an imported list through the workflow, continuing a copy of the session's tiny STAR chain: STAR's
hard negatives exported for Tevatron with the miner's scores, brought back with `hardneg import`, and a STAR run
whose negatives input names the imported folder; Snakemake copies the list into the run's folder, trains on it,
audits it, draws its viewer and evaluates the run, and makes nothing of the chain again; a second run on the same
list distils from the scores it carries. `hardneg verify` of the run checks the digests (exit 0) until the source
file changes (exit 1, naming it)."""

import json

import numpy as np
import pyarrow.parquet as pq
import pytest

from hardneg.cli import main
from tests.support.builds import copy_build
from tests.support.configs import STAR_CONFIG
from tests.support.workflow import output_of, snakemake_jobs, write_config

pytestmark = pytest.mark.slow

SOURCE, FOLDER = "exports/star_tevatron.jsonl", "imports/star"
RANKING = {**STAR_CONFIG["runs"]["star"], "inputs": {"init": "warmup", "negatives": {"imported": FOLDER}, "bm25": "bm25"}}
# the same list, the miner's scores it carries as the teacher's (kl: a listwise divergence over each row's own)
DISTILLED = {**RANKING, "params": {**RANKING["params"], "distill": {"loss": "kl", "weight": 0.5}}}
CONFIG = {**STAR_CONFIG, "runs": {**STAR_CONFIG["runs"], "star_imported": RANKING, "star_imported_kd": DISTILLED}}


@pytest.fixture(scope="module")
def built(builds, tmp_path_factory):
    """A copy of the tiny chain, STAR's list exported and imported there, and the run trained on the import built;
    the jobs Snakemake ran."""
    workdir = copy_build(builds.star_chain(), tmp_path_factory.mktemp("imported") / "work")
    results = str(workdir / "results")
    assert main(["export", "hardnegs", "star", "--format", "tevatron", "--output", str(workdir / SOURCE),
                 "--scores", "miner", "--negatives", "4", "--results", results]) == 0
    assert main(["import", str(workdir / SOURCE), "--format", "tevatron", "--dataset", "tiny",
                 "--output", str(workdir / FOLDER), "--results", results]) == 0
    write_config(workdir, CONFIG)
    result, jobs = snakemake_jobs(workdir, "results/star_imported/metrics.json",
                                  "results/star_imported_kd/train_log.parquet", timeout=900)
    assert result.returncode == 0, output_of(result)[-4000:]
    return workdir, jobs


def test_a_run_trains_on_an_imported_list_and_verify_checks_its_source(built, capsys):
    workdir, jobs = built
    results, run = workdir / "results", workdir / "results" / "star_imported"
    ran = {(job["rule"], job["wildcards"].get("run")) for job in jobs}
    assert {("import_hard_negatives", "star_imported"), ("train_dense", "star_imported"),
            ("audit_hard_negatives", "star_imported"), ("hardneg_viewer", "star_imported"),
            ("evaluate", "star_imported")} <= ran
    assert {name for _, name in ran} <= {"star_imported", "star_imported_kd", None}  # nothing of the chain again
    # the run trained on the imported list (its copy, byte for byte), with the file's teacher scores
    assert (run / "hardnegs.parquet").read_bytes() == (workdir / FOLDER / "hardnegs.parquet").read_bytes()
    imported = pq.read_table(run / "hardnegs.parquet")
    assert imported.num_rows > 0 and imported["score"].null_count == 0
    assert max(imported.group_by("qid").aggregate([("docid", "count")])["docid_count"].to_pylist()) == 4  # exported
    assert json.loads((run / "metrics.json").read_text())["num_queries"] == 20
    audit = json.loads((run / "hardnegs_audit.json").read_text())
    assert audit["best_positive_rank"] is None and audit["num_negatives"] == imported.num_rows
    card = json.loads((run / "hardnegs_card.json").read_text())
    viewer = (run / "hardnegs_viewer.html").read_text()
    assert (f"Imported with <code>hardneg import</code> from <code>{workdir / SOURCE}</code> (tevatron, v1; SHA-256 "
            f"<code>{card['import']['source']['sha256'][:16]}</code>…)") in viewer
    assert "Mined by run" not in viewer and viewer.count('<section class="query"') > 0
    assert "<h2>Margins of the imported negatives</h2>" in viewer  # the miner's scores came along as the teacher's
    assert main(["verify", "star_imported", "--results", str(results)]) == 0
    assert capsys.readouterr().out.rstrip().endswith("reproduced: yes")
    with open(workdir / SOURCE, "a", encoding="utf-8") as handle:  # the source file changes after the import
        handle.write("\n")
    assert main(["verify", "star_imported", "--results", str(results)]) == 1
    out = capsys.readouterr().out
    assert f"source {workdir / SOURCE} changed since the list was imported" in out
    assert out.rstrip().endswith("reproduced: no")


def test_a_run_distils_from_the_scores_its_imported_list_carries(built):
    workdir, jobs = built
    training = next(job for job in jobs
                    if job["rule"] == "train_dense" and job["wildcards"]["run"] == "star_imported_kd")
    # the teacher's scores are the run's copies of the list and of its positives, the scores as the file gave them
    assert "results/star_imported_kd/hardnegs_positives.parquet" in training["input"]
    assert not any("pools" in path for path in training["input"])  # no pool, no cross-encoder
    log = pq.read_table(workdir / "results" / "star_imported_kd" / "train_log.parquet").to_pandas()
    assert len(log) > 0 and np.isfinite(log.distill_loss).all() and (log.distill_loss > 0).all()
    plain = pq.read_table(workdir / "results" / "star_imported" / "train_log.parquet").to_pandas()
    assert "distill_loss" not in plain or plain.distill_loss.isna().all()
