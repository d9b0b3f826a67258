"""A pytest plugin that records where a test session's time goes (``-p tests.support.profile --profile-dir DIR``;
``benchmarks/test_profile.py`` runs it and reads the records).

Into ``DIR``, one JSON line each:
* ``phases-<worker>.jsonl``: every phase (setup, call, teardown) of every test, with its wall seconds, the CPU
  seconds of the worker itself and of the processes it started and waited for (Snakemake and its jobs, the
  ``hardneg`` command, mkdocs, a JVM started by a helper);
* ``fixtures-<worker>.jsonl``: every fixture set up, with its scope, the test that asked first and the same times;
* ``processes-<pid>.jsonl``: every Python process the tests started (``tests/support/profiling/sitecustomize.py``,
  put on ``PYTHONPATH`` here, which every process the tests start inherits).

Without ``--profile-dir`` the plugin does nothing."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

SITE = Path(__file__).resolve().parent / "profiling"


def pytest_addoption(parser):
    parser.addoption("--profile-dir", default=None, help="record the session's test, fixture and process times here")


def pytest_configure(config):
    folder = config.getoption("--profile-dir")
    if not folder:
        return
    folder = Path(folder).resolve()
    folder.mkdir(parents=True, exist_ok=True)
    os.environ["HARDNEG_TEST_PROFILE"] = str(folder)
    path = os.environ.get("PYTHONPATH", "")
    if str(SITE) not in path.split(os.pathsep):
        os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(SITE), path]))
    config.pluginmanager.register(_Recorder(folder), "hardneg-profile-recorder")


class _Clock:
    """Wall and CPU seconds (own, and waited-for children's) since it was made."""

    def __init__(self):
        self.wall, self.times = time.monotonic(), os.times()

    def read(self) -> dict:
        now = os.times()
        return {"wall": round(time.monotonic() - self.wall, 3),
                "cpu": round(now.user + now.system - self.times.user - self.times.system, 3),
                "children_cpu": round(now.children_user + now.children_system
                                      - self.times.children_user - self.times.children_system, 3)}


class _Recorder:
    def __init__(self, folder: Path):
        self.folder = folder
        self.worker = os.environ.get("PYTEST_XDIST_WORKER", "main")

    def _append(self, kind: str, line: dict) -> None:
        with open(self.folder / f"{kind}-{self.worker}.jsonl", "a", encoding="utf-8") as handle:
            handle.write(json.dumps(line) + "\n")

    def _phase(self, item, phase: str):
        clock = _Clock()
        yield
        self._append("phases", {"test": item.nodeid, "phase": phase, "worker": self.worker, "end": time.time(),
                                **clock.read()})

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_setup(self, item):
        yield from self._phase(item, "setup")

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_call(self, item):
        yield from self._phase(item, "call")

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_teardown(self, item):
        yield from self._phase(item, "teardown")

    @pytest.hookimpl(hookwrapper=True)
    def pytest_fixture_setup(self, fixturedef, request):
        clock = _Clock()
        yield
        item = getattr(request, "_pyfuncitem", None)  # the test whose set-up asked (a session fixture's node is
        # the session)
        self._append("fixtures", {"fixture": fixturedef.argname, "scope": fixturedef.scope,
                                  "test": item.nodeid if item is not None else request.node.nodeid,
                                  "worker": self.worker, **clock.read()})
