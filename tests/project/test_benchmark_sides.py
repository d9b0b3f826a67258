"""A side of a benchmark run in a process of its own (benchmarks/report.run_side): its result, or why it failed
(exit status, signal, a memory limit passed) with its last error lines, never an exception that loses the other
sides' results."""

import sys

import pytest

from tests.support import REPO

sys.path.insert(0, str(REPO / "benchmarks"))  # the benchmark scripts import their helpers as `report`
from report import run_side  # noqa: E402


def _side(code: str, **kwargs) -> dict:
    return run_side([sys.executable, "-c", code], cwd=REPO, **kwargs)


def test_a_side_that_succeeds_gives_its_last_json_line_and_its_peak_memory():
    result = _side("import json; print('warming up'); print(json.dumps({'median_seconds': 1.5}))")
    assert result["median_seconds"] == 1.5 and result["peak_memory_bytes"] > 0 and "failed" not in result


@pytest.mark.parametrize("code, cause", [
    ("import sys; sys.stderr.write('Traceback\\nValueError: no such model\\n'); sys.exit(3)",
     "exit status 3; Traceback | ValueError: no such model"),
    ("import os, signal; os.kill(os.getpid(), signal.SIGKILL)", "killed by SIGKILL (the kernel's out-of-memory"),
    ("import os, signal; os.kill(os.getpid(), signal.SIGTERM)", "killed by SIGTERM; it printed no error"),
    ("print('not json')", "it printed no result; it printed no error"),
])
def test_a_side_that_fails_says_how(code, cause):
    result = _side(code)
    assert result["failed"].startswith(cause) or cause in result["failed"], result


def test_a_side_beyond_its_memory_limit_is_stopped_and_said_so():
    result = _side("import time; blocks = [bytearray(50 * 2**20) for _ in range(8)]; time.sleep(30)",
                   memory_limit=200 * 2 ** 20)
    assert result["failed"].startswith("stopped at "), result
    assert "beyond the 0.2 GiB it was allowed (the limit set)" in result["failed"]
    assert result["peak_memory_bytes"] > 200 * 2 ** 20
