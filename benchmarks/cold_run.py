"""Wall time of a cold run of the main target on the default config (nothing built yet).

    python benchmarks/cold_run.py [--target results/adore_star/metrics.json] [--cores 2]

Runs Snakemake on the repository's Snakefile and config/config.yaml in an empty temporary working directory,
so every job of the target runs, and prints one JSON line (also written to benchmarks/out/cold_run.json) with
the seconds taken, the number of jobs and, for a metrics.json target, its measures (those of a fresh
`make run`, which README's results table must show).
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from report import save

REPO = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--target", default="results/adore_star/metrics.json")
    parser.add_argument("--cores", default="2")
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="hardneg-cold-"))
    try:
        (workdir / "config").mkdir()
        shutil.copy(REPO / "config" / "config.yaml", workdir / "config" / "config.yaml")
        started = time.perf_counter()
        result = subprocess.run([str(Path(sys.executable).with_name("snakemake")), "--snakefile", str(REPO / "Snakefile"),
                                 "--directory", str(workdir), "--cores", args.cores, args.target],
                                capture_output=True, text=True)
        seconds = time.perf_counter() - started
        if result.returncode != 0:
            sys.exit(result.stderr[-3000:])
        done = re.findall(r"(\d+) of (\d+) steps \(100%\) done", result.stdout + result.stderr)
        record = {"target": args.target, "cores": args.cores, "seconds": round(seconds, 1),
                  "jobs": int(done[-1][1]) if done else None}
        if args.target.endswith("metrics.json"):  # what README's results table shows for this run, from nothing
            measures = json.loads((workdir / args.target).read_text())["measures"]
            record["measures"] = {name: round(value, 3) for name, value in measures.items()}
        save("cold_run", record)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
