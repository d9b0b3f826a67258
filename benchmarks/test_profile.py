"""Where the test suite's time goes: every test, fixture and Python process of a pytest session, per file and per
job kind.

    python benchmarks/test_profile.py [--out DIR] [--top 40] [--save-durations] [-- PYTEST ARGS...]
    python benchmarks/test_profile.py --read DIR [--top 40] [--save-durations]

Runs ``python -m pytest`` (by default ``make test``'s arguments: ``tests -n 2 --dist loadfile``) with the
profiling plugin (``tests/support/profile.py``), which records each test phase's wall and CPU seconds, each
fixture's set-up, and every Python process the tests start (Snakemake, each of its jobs, the ``hardneg``
command). Then prints Markdown tables: the session's totals, the files by wall time, the slowest tests and fixtures,
and the Snakemake jobs by script (how many ran, their CPU seconds, how many imported torch). ``--read`` prints the
tables of records kept from an earlier run. The record's summary is also written to benchmarks/out/test_profile.json;
``--save-durations`` writes each file's CPU seconds to tests/durations.json, the order in which `make test` starts
the files (most work first: tests/conftest.py; CPU, not wall seconds, so that a file that waited for another's
build does not start first next time and wait again). CPU seconds of a test are its worker's and those of the processes it
waited for (Snakemake and its jobs).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from report import save

REPO = Path(__file__).resolve().parents[1]
DURATIONS = REPO / "tests" / "durations.json"
MAKE_TEST = ["tests", "-n", "2", "--dist", "loadfile", "--no-loadscope-reorder"]


def read_lines(folder: Path, prefix: str) -> list[dict]:
    lines = []
    for path in sorted(folder.glob(f"{prefix}-*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                try:
                    lines.append(json.loads(line))
                except json.JSONDecodeError:  # a process killed while writing its line
                    continue
    return lines


def test_file(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def seconds(value: float) -> str:
    return f"{value:,.1f}"


def table(header: list[str], rows: list[list]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def summarise(folder: Path, top: int, wall: float | None) -> tuple[str, dict]:
    phases, fixtures, processes = (read_lines(folder, kind) for kind in ("phases", "fixtures", "processes"))
    tests: dict[str, dict] = collections.defaultdict(lambda: collections.Counter())
    for phase in phases:
        test = tests[phase["test"]]
        for key in ("wall", "cpu", "children_cpu"):
            test[key] += phase[key]
        test[phase["phase"]] += phase["wall"]
    jobs_of: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for process in processes:
        test = process["test"].rsplit(" (", 1)[0]
        if process["kind"] == "job":
            jobs_of[test]["jobs"] += 1
            jobs_of[test]["job_cpu"] += process["cpu"]

    files: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for nodeid, test in tests.items():
        entry = files[test_file(nodeid)]
        entry["tests"] += 1
        for key in ("wall", "cpu", "children_cpu"):
            entry[key] += test[key]
        entry["jobs"] += jobs_of[nodeid]["jobs"]
    workers = {phase["worker"] for phase in phases}
    total_wall = sum(test["wall"] for test in tests.values())
    total_cpu = sum(test["cpu"] + test["children_cpu"] for test in tests.values())
    jobs = [process for process in processes if process["kind"] == "job"]

    out = ["## The session", ""]
    out.append(table(["tests", "workers", "session wall s", "test wall s (summed over workers)", "CPU s",
                      "Snakemake runs", "jobs", "job CPU s"],
                     [[len(tests), len(workers), seconds(wall) if wall else "-", seconds(total_wall),
                       seconds(total_cpu), sum(1 for p in processes if p["kind"] == "snakemake"), len(jobs),
                       seconds(sum(p["cpu"] for p in jobs))]]))
    out += ["", "## Test files by wall time", ""]
    ranked = sorted(files.items(), key=lambda item: -item[1]["wall"])
    out.append(table(["file", "tests", "wall s", "CPU s", "jobs"],
                     [[name, entry["tests"], seconds(entry["wall"]), seconds(entry["cpu"] + entry["children_cpu"]),
                       entry["jobs"]] for name, entry in ranked[:top]]))
    out += ["", f"## The {top} slowest tests", ""]
    slowest = sorted(tests.items(), key=lambda item: -item[1]["wall"])[:top]
    out.append(table(["test", "wall s", "of it set-up s", "CPU s", "jobs"],
                     [[nodeid, seconds(test["wall"]), seconds(test["setup"]),
                       seconds(test["cpu"] + test["children_cpu"]), jobs_of[nodeid]["jobs"]]
                      for nodeid, test in slowest]))
    out += ["", f"## The {top} slowest fixture set-ups (each includes the fixtures it asks for)", ""]
    slow_fixtures = sorted(fixtures, key=lambda f: -f["wall"])[:top]
    out.append(table(["fixture", "scope", "first asked by", "wall s", "CPU s"],
                     [[f["fixture"], f["scope"], f["test"], seconds(f["wall"]), seconds(f["cpu"] + f["children_cpu"])]
                      for f in slow_fixtures]))
    out += ["", "## Snakemake jobs by script", ""]
    scripts: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for job in jobs:
        entry = scripts[job["name"]]
        entry["jobs"] += 1
        entry["cpu"] += job["cpu"]
        entry["wall"] += job["wall"]
        entry["torch"] += job["torch"]
        entry["transformers"] += job["transformers"]
    out.append(table(["script", "jobs", "CPU s", "CPU s a job", "wall s a job", "imported torch", "imported transformers"],
                     [[name, e["jobs"], seconds(e["cpu"]), f"{e['cpu'] / e['jobs']:.2f}", f"{e['wall'] / e['jobs']:.2f}",
                       e["torch"], e["transformers"]]
                      for name, e in sorted(scripts.items(), key=lambda item: -item[1]["cpu"])]))
    others = collections.defaultdict(collections.Counter)
    for process in processes:
        if process["kind"] != "job":
            entry = others[{"snakemake": "snakemake", "cli": f"hardneg {process['name']}"}.get(process["kind"],
                                                                                             process["name"])]
            entry["n"] += 1
            entry["cpu"] += process["cpu"]
    out += ["", "## The other Python processes (their own CPU, that of their jobs not included)", ""]
    out.append(table(["process", "count", "CPU s", "CPU s each"],
                     [[name, e["n"], seconds(e["cpu"]), f"{e['cpu'] / e['n']:.2f}"]
                      for name, e in sorted(others.items(), key=lambda item: -item[1]["cpu"])[:top]]))
    record = {"tests": len(tests), "session_wall_s": wall, "test_wall_s": round(total_wall, 1),
              "cpu_s": round(total_cpu, 1), "jobs": len(jobs),
              "files": {name: {"tests": e["tests"], "wall_s": round(e["wall"], 1),
                               "cpu_s": round(e["cpu"] + e["children_cpu"], 1), "jobs": e["jobs"]}
                        for name, e in ranked}}
    return "\n".join(out), record


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, help="where the records go (default: a new temporary folder)")
    parser.add_argument("--read", type=Path, help="print the tables of an earlier run's records; run nothing")
    parser.add_argument("--top", type=int, default=40, help="rows of the per-file, per-test and fixture tables")
    parser.add_argument("--save-durations", action="store_true",
                        help="write each test file's CPU seconds to tests/durations.json (a whole-suite profile)")
    parser.add_argument("pytest_args", nargs="*", help=f"pytest's arguments (default: {' '.join(MAKE_TEST)})")
    args = parser.parse_args()
    wall = None
    if args.read:
        folder = args.read
        if (folder / "session.json").exists():
            wall = json.loads((folder / "session.json").read_text())["wall_s"]
    else:
        folder = args.out or Path(tempfile.mkdtemp(prefix="hardneg-test-profile-"))
        started = time.monotonic()
        env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}  # as make test
        result = subprocess.run([sys.executable, "-m", "pytest", *(args.pytest_args or MAKE_TEST),
                                 "-p", "tests.support.profile", "--profile-dir", str(folder)], cwd=REPO, env=env)
        wall = round(time.monotonic() - started, 1)
        (folder / "session.json").write_text(json.dumps({"wall_s": wall, "exit": result.returncode}))
        print(f"records in {folder}; pytest exited with {result.returncode}", file=sys.stderr)
    text, record = summarise(folder, args.top, wall)
    print(text)
    save("test_profile", record)
    if args.save_durations:
        seconds = {name.removeprefix("tests/"): entry["cpu_s"] for name, entry in record["files"].items()}
        DURATIONS.write_text(json.dumps({"about": "each test file's CPU seconds in the last profile of the whole "
                                                  "suite (benchmarks/test_profile.py --save-durations): make test "
                                                  "starts them longest first (tests/conftest.py)",
                                         "seconds": dict(sorted(seconds.items()))}, indent=1) + "\n")


if __name__ == "__main__":
    main()
