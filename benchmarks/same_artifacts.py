"""Whether a restructuring changed what the workflow builds: the main target built from nothing by an earlier
revision of the project and by this checkout, every artifact compared by SHA-256.

    python benchmarks/same_artifacts.py --before <git revision> [--target results/adore_star/metrics.json]
                                        [--rename runs=rankings] [--cores 2]

The earlier revision is taken with ``git archive`` into a temporary folder and runs from there (its own
Snakefile, rules, scripts and package); both build the default config (config/config.yaml of each revision) in
empty working directories. Left out, as the reliability tests leave them out of their byte-for-byte checks:
job logs, Snakemake's benchmark records (the per-step training timings too) and TensorBoard's event files, which
hold wall-clock times; the BM25 index, whose files Lucene stamps with a random segment id and the time (the
rankings searched from it are compared); Snakemake's timestamp files. ``--rename old=new`` maps a path part of
the earlier layout onto this one's (a folder renamed by the restructuring: its files are still compared). Prints
the counts, writes benchmarks/out/same_artifacts.md with every path that differs or exists on one side only, and
exits 1 when any does. A file that differs only where its text names a renamed folder (a card recording the
paths it read) counts as the same, paths aside, and is listed as such. The earlier revision's build is kept in
benchmarks/out/same_artifacts_<revision>/ (it is deterministic), so a second comparison against it builds this
checkout only.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LEFT_OUT = {"logs", "benchmarks", "tensorboard", "bm25_index"}  # folders not reproducible by design
LEFT_OUT_NAMES = {".snakemake_timestamp"}


def build(source: Path, workdir: Path, target: str, cores: str) -> Path:
    """``target`` built by the project at ``source`` in the empty ``workdir`` (its default config); the
    results folder."""
    (workdir / "config").mkdir(parents=True)
    shutil.copy(source / "config" / "config.yaml", workdir / "config" / "config.yaml")
    env = {**os.environ, "PYTHONPATH": str(source / "src")}
    result = subprocess.run([str(Path(sys.executable).with_name("snakemake")), "--snakefile", str(source / "Snakefile"),
                             "--directory", str(workdir), "--cores", cores, target],
                            env=env, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"the build at {source} failed:\n{result.stderr[-3000:]}")
    return workdir / "results"


def files(results: Path, renames: dict[str, str]) -> dict[str, Path]:
    """Relative path (folder names mapped by ``renames``) → every artifact under ``results`` (``LEFT_OUT``
    aside)."""
    found = {}
    for path in sorted(results.rglob("*")):
        parts = path.relative_to(results).parts
        if path.is_file() and not LEFT_OUT.intersection(parts) and path.name not in LEFT_OUT_NAMES:
            found["/".join(renames.get(part, part) for part in parts)] = path
    return found


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def same_but_paths(before: Path, after: Path, renames: dict[str, str]) -> bool:
    """Whether ``before`` is ``after`` once every ``/<old>/`` its text names reads ``/<new>/``."""
    if not renames:
        return False
    try:
        text = before.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        return False
    for old, new in renames.items():
        text = text.replace(f"/{old}/", f"/{new}/")
    return text.encode("utf-8") == after.read_bytes()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", required=True, help="the earlier git revision")
    parser.add_argument("--target", default="results/adore_star/metrics.json")
    parser.add_argument("--rename", action="append", default=[], help="old=new: a folder renamed since")
    parser.add_argument("--cores", default="2")
    args = parser.parse_args()
    renames = dict(item.split("=", 1) for item in args.rename)
    out = REPO / "benchmarks" / "out"
    out.mkdir(parents=True, exist_ok=True)
    revision = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", args.before], capture_output=True,
                              text=True, check=True).stdout.strip()
    kept = out / f"same_artifacts_{revision}"
    temp = Path(tempfile.mkdtemp(prefix="hardneg-same-"))
    try:
        if not (kept / "target.txt").is_file() or (kept / "target.txt").read_text() != args.target:
            shutil.rmtree(kept, ignore_errors=True)
            before_src = temp / "before-source"
            before_src.mkdir()
            archive = subprocess.run(["git", "-C", str(REPO), "archive", revision], capture_output=True, check=True)
            subprocess.run(["tar", "-x", "-C", str(before_src)], input=archive.stdout, check=True)
            shutil.copytree(build(before_src, temp / "before", args.target, args.cores), kept / "results",
                            symlinks=True)
            (kept / "target.txt").write_text(args.target)
        before_files = files(kept / "results", renames)
        after_files = files(build(REPO, temp / "after", args.target, args.cores), {})
        before = {path: digest(file) for path, file in before_files.items()}
        after = {path: digest(file) for path, file in after_files.items()}
        renamed = sorted(path for path in before.keys() & after.keys() if before[path] != after[path]
                         and same_but_paths(before_files[path], after_files[path], renames))
        for path in renamed:
            before[path] = after[path]
    finally:
        shutil.rmtree(temp, ignore_errors=True)
    differ = sorted(path for path in before.keys() & after.keys() if before[path] != after[path])
    only_before, only_after = sorted(before.keys() - after.keys()), sorted(after.keys() - before.keys())
    same = len(before.keys() & after.keys()) - len(differ)
    lines = [f"# Artifacts of `{args.target}`: revision {revision} against this checkout", "",
             f"- identical: {same - len(renamed)}", f"- identical but for the renamed folders their text names: "
             f"{len(renamed)}", f"- different: {len(differ)}", f"- only before: {len(only_before)}",
             f"- only after: {len(only_after)}", ""]
    sections = (("Paths aside", renamed), ("Different", differ), ("Only before", only_before),
                ("Only after", only_after))
    for title, paths in sections:
        if paths:
            lines += [f"## {title}", "", *[f"- `{path}`" for path in paths], ""]
    (out / "same_artifacts.md").write_text("\n".join(lines))
    print("\n".join(lines))
    sys.exit(1 if differ or only_before or only_after else 0)


if __name__ == "__main__":
    main()
