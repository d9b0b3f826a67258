"""Console messages of stage scripts (hardneg.io.logs.console) under Snakemake: a job's message reaches the
terminal, and its log keeps it; what the job only logs stays in the log. tests/unit/dense/test_console_warnings.py
checks the messages themselves."""

import textwrap

import pytest

from tests.support.workflow import snakemake


@pytest.mark.slow
def test_snakemake_shows_a_console_message_of_a_job(tmp_path):
    (tmp_path / "Snakefile").write_text(textwrap.dedent("""
        rule all:
            output: "out.txt"
            log: "logs/job.log"
            script: "job.py"
        """))
    (tmp_path / "job.py").write_text(textwrap.dedent("""
        from hardneg.io.logs import console, log_to
        log_to(snakemake.log[0])
        print("for the log only")
        console("visible on the terminal: %d empty documents", 2)
        open(snakemake.output[0], "w").write("done\\n")
        """))
    done = snakemake(tmp_path, cores=1, snakefile=None)  # the job's own Snakefile, in its folder
    assert done.returncode == 0, done.stderr
    out = done.stdout + done.stderr
    assert "hardneg warning: visible on the terminal: 2 empty documents\n  (log: logs/job.log)" in out
    assert "for the log only" not in out
    assert "visible on the terminal: 2 empty documents" in (tmp_path / "logs" / "job.log").read_text()
