"""A job's progress on the console: periodic lines where the console is a file or pipe, a bar redrawn in place
where it is a terminal (a pseudo-terminal here, as a user's shell gives Snakemake's jobs); the log keeps every
line either way."""

import fcntl
import os
import pty
import struct
import subprocess
import sys
import termios
import textwrap

from tests.support import REPO

JOB = textwrap.dedent("""
    import logging, sys
    from hardneg.io import logs

    logs.log_to(sys.argv[1])
    log = logging.getLogger("hardneg.test")
    logs.progress(log, "step %d/%d", 1, 50, done=1, total=50)
    for step in range(2, 50):
        logs.tick(step, 50, "loss 0.5")
    logs.console("a warning in between")
    logs.progress(log, "step %d/%d", 50, 50, done=50, total=50, last=True)
    logs.progress(log, "done: %d texts", 7, last=True)
""")


def _run(tmp_path, terminal: bool) -> tuple[str, str]:
    """(what the console showed, the log) of the job above, its standard error a terminal or a pipe."""
    log = tmp_path / "results" / "warmup" / "logs" / "train.log"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), os.environ.get("PYTHONPATH", "")])}
    command = [sys.executable, "-c", JOB, str(log)]
    if not terminal:
        result = subprocess.run(command, capture_output=True, text=True, env=env, check=True)
        return result.stderr, log.read_text()
    controller, worker = pty.openpty()
    fcntl.ioctl(worker, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))  # 40 rows of 120 columns
    process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=worker, env=env)
    os.close(worker)
    shown = b""
    while True:
        try:
            chunk = os.read(controller, 4096)
        except OSError:  # the terminal's other end closed: the job is over
            break
        if not chunk:
            break
        shown += chunk
    os.close(controller)
    assert process.wait() == 0
    return shown.decode(), log.read_text()


def test_a_pipe_gets_lines_with_the_job_named(tmp_path):
    shown, log = _run(tmp_path, terminal=False)
    lines = shown.splitlines()
    assert lines[0] == "hardneg: warmup/train: step 1/50"
    assert "hardneg: warmup/train: step 50/50" in lines and "hardneg: warmup/train: done: 7 texts" in lines
    assert "\r" not in shown and "%|" not in shown  # no bar drawn into a file
    assert "step 1/50" in log and "step 50/50" in log and "done: 7 texts" in log


def test_a_terminal_gets_a_bar_redrawn_in_place(tmp_path):
    shown, log = _run(tmp_path, terminal=True)
    draws = shown.split("\r\x1b[K")
    first = draws[1].split("\r\n")[0]
    assert first.startswith("hardneg: warmup/train:   2%|") and first.endswith("| 1/50 [00:00<?, ?it/s] step 1/50")
    final = [draw for draw in draws if "50/50" in draw]
    assert final and final[-1].startswith("hardneg: warmup/train: 100%|") and "step 50/50" in final[-1]
    assert max(len(line) for draw in draws for line in draw.split("\r\n")) < 120  # no line wraps
    # the warning and the line after the bar each start on a line of their own
    assert "\nhardneg warning: a warning in between" in shown.replace("\r\n", "\n")
    assert "\nhardneg: warmup/train: done: 7 texts" in shown.replace("\r\n", "\n")
    assert "loss 0.5" not in log and "step 1/50" in log  # ticks redraw the bar only; the log keeps its lines
