"""Checks of tests/slurm/cluster.sh after its two pipeline runs, from SLURM's accounting and the results:

* every job Snakemake ran on the cluster is a SLURM job of the run's name (the plugin names each sbatch job after
  the Snakemake run), in the test's partition and account, COMPLETED with exit code 0:0, and its step 0 (the job
  run with srun inside the allocation) COMPLETED too;
* the SLURM job ids are those Snakemake logged at submission, one per job of the run's job table (``Job stats``),
  and the rules recorded in the jobs' comments match that table rule by rule;
* each target's metrics.json is byte-identical in the cluster run and the local run.

Prints SLURM's lines for the run; exits 1 with the reasons when a check fails. Standard library only.

    python check_accounting.py --log cluster.log --partition P --account A --cluster-dir C --local-dir L TARGET...
"""

import argparse
import collections
import json
import re
import subprocess
import sys
from pathlib import Path

FIELDS = ["JobID", "State", "ExitCode", "Partition", "Account", "AllocCPUS", "ReqMem", "Elapsed", "Comment"]


def run_log(text: str) -> tuple[str, dict[int, str], collections.Counter, int]:
    """The Snakemake log of the cluster run → (SLURM run id, Snakemake job id → SLURM job id, rule → jobs of the
    job table, steps reported done)."""
    run_id = re.search(r"SLURM run ID: (\S+)", text)
    if not run_id:
        sys.exit("no 'SLURM run ID' in the cluster run's log: did it run with the slurm executor?")
    submitted = {int(job): slurm for job, slurm in
                 re.findall(r"Job (\d+) has been submitted with SLURM jobid (\d+)", text)}
    table = re.search(r"Job stats:\n.*?\n-+\s+-+\n(.*?)\ntotal\s+(\d+)", text, re.S)
    if not table:
        sys.exit("no 'Job stats' table in the cluster run's log")
    rules = collections.Counter({line.split()[0]: int(line.split()[1]) for line in table.group(1).splitlines()})
    if sum(rules.values()) != int(table.group(2)):
        sys.exit(f"unreadable job table: {dict(rules)} against a total of {table.group(2)}")
    done = re.findall(r"(\d+) of (\d+) steps \(100%\) done", text)
    return run_id.group(1), submitted, rules, int(done[-1][0]) if done else 0


def sacct(*args: str) -> list[dict[str, str]]:
    out = subprocess.run(["sacct", "--allusers", "--parsable2", "--noheader", "--starttime", "2000-01-01",
                          "--format", ",".join(FIELDS), *args], check=True, capture_output=True, text=True).stdout
    return [dict(zip(FIELDS, line.split("|"))) for line in out.splitlines() if line]


def print_table(rows: list[dict[str, str]]) -> None:
    widths = {f: max(len(f), *(len(r[f]) for r in rows)) for f in FIELDS}
    for row in [dict(zip(FIELDS, FIELDS)), *rows]:
        print("    " + "  ".join(row[f].ljust(widths[f]) for f in FIELDS).rstrip())


def check_jobs(args: argparse.Namespace, errors: list[str]) -> None:
    run_id, submitted, rules, done = run_log(Path(args.log).read_text())
    jobs = sacct("--allocations", "--name", run_id)
    print(f"  SLURM jobs named {run_id} (sacct --allocations --name {run_id}):")
    print_table(jobs)
    ids = [job["JobID"] for job in jobs]
    completed = [job for job in jobs if job["State"] == "COMPLETED" and job["ExitCode"] == "0:0"]
    total = sum(rules.values())
    print(f"  Snakemake: {total} jobs in its job table, {len(submitted)} submitted with sbatch, {done} done; "
          f"SLURM: {len(jobs)} jobs, {len(completed)} COMPLETED with exit code 0:0")
    if not total or not (total == len(submitted) == done == len(jobs) == len(completed)):
        errors.append(f"job counts differ: table {total}, submitted {len(submitted)}, done {done}, "
                      f"in sacct {len(jobs)}, completed {len(completed)}")
    if sorted(ids, key=int) != sorted(submitted.values(), key=int):
        errors.append(f"SLURM job ids {sorted(ids)} are not those Snakemake submitted {sorted(submitted.values())}")
    for job in jobs:
        if job["State"] != "COMPLETED" or job["ExitCode"] != "0:0":
            errors.append(f"SLURM job {job['JobID']} ({job['Comment']}) is {job['State']}, exit code {job['ExitCode']}")
        if job["Partition"] != args.partition or job["Account"] != args.account:
            errors.append(f"SLURM job {job['JobID']} ran in partition {job['Partition']!r} with account "
                          f"{job['Account']!r}, not the profile's {args.partition!r} and {args.account!r}")
    ran = collections.Counter(re.sub(r"^rule_(.*?)(_wildcards_.*)?$", r"\1", job["Comment"]) for job in jobs)
    if ran != rules:
        errors.append(f"rules of the SLURM jobs {dict(ran)} differ from Snakemake's job table {dict(rules)}")
    if ids:
        steps = [row for row in sacct("--jobs", ",".join(ids)) if "." in row["JobID"]]
        print("  their steps (the batch script, and step 0: the job run with srun in the allocation):")
        print_table(steps)
        for job_id in ids:
            step = next((row for row in steps if row["JobID"] == f"{job_id}.0"), None)
            if step is None or step["State"] != "COMPLETED":
                errors.append(f"SLURM job {job_id} has no COMPLETED step 0 (srun): {step}")


def check_metrics(args: argparse.Namespace, errors: list[str]) -> None:
    for target in args.targets:
        cluster, local = Path(args.cluster_dir, target), Path(args.local_dir, target)
        if not cluster.exists() or not local.exists():
            errors.append(f"{target}: missing in the {'cluster' if not cluster.exists() else 'local'} run")
        elif cluster.read_bytes() == local.read_bytes():
            measures = json.loads(cluster.read_text())["measures"]
            print(f"  {target}: identical in both runs; " + ", ".join(f"{k} {v:.4f}" for k, v in measures.items()))
        else:
            ours, theirs = json.loads(cluster.read_text()), json.loads(local.read_text())
            differing = sorted(k for k in ours.keys() | theirs.keys() if ours.get(k) != theirs.get(k))
            errors.append(f"{target} differs between the cluster and the local run, in {differing}: "
                          f"measures {ours.get('measures')} against {theirs.get('measures')}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--log", required=True, help="Snakemake's output of the cluster run")
    parser.add_argument("--partition", required=True)
    parser.add_argument("--account", required=True)
    parser.add_argument("--cluster-dir", required=True, help="working directory of the cluster run")
    parser.add_argument("--local-dir", required=True, help="working directory of the local run")
    parser.add_argument("targets", nargs="+", help="metrics.json files, relative to the working directories")
    args = parser.parse_args()
    errors: list[str] = []
    check_jobs(args, errors)
    check_metrics(args, errors)
    if errors:
        print("\n".join(["SLURM test failed:", *(f"  - {e}" for e in errors)]), file=sys.stderr)
        sys.exit(1)
    print("  every job ran through sbatch and completed; the metrics agree")


if __name__ == "__main__":
    main()
