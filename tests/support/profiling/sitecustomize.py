"""Process records for the test-suite profile (``benchmarks/test_profile.py``), loaded at interpreter start when
this folder is on PYTHONPATH and ``HARDNEG_TEST_PROFILE`` names a folder.

Every Python process the tests start (Snakemake, each of its jobs, the ``hardneg`` command, helper scripts) appends
one JSON line there when it exits: the test that was running (pytest's ``PYTEST_CURRENT_TEST``, which the process
inherits, with its phase), what the process was (``kind``: snakemake, job and the job's script, cli, other),
its wall and CPU seconds (and its waited-for children's), and whether torch and transformers were loaded. A
process killed outright writes nothing. Without the variable nothing changes."""

import os

_FOLDER = os.environ.get("HARDNEG_TEST_PROFILE")

if _FOLDER:
    import atexit
    import json
    import sys
    import time

    _START_WALL = time.monotonic()

    def _kind() -> tuple[str, str]:
        argv = [os.path.basename(word) for word in sys.argv]
        if "snakemake" in argv[:1] or (len(sys.argv) > 2 and sys.argv[1:3] == ["-m", "snakemake"]):
            return "snakemake", ""
        for word in sys.argv[:2]:
            if f"{os.sep}.snakemake{os.sep}scripts{os.sep}" in word:
                # Snakemake writes a job's script as .snakemake/scripts/tmp<random>.<script name>.py
                return "job", os.path.basename(word).split(".", 1)[-1].removesuffix(".py")
        if argv[:1] == ["hardneg"]:
            return "cli", " ".join(sys.argv[1:2])
        return "other", " ".join(argv[:2])[:80]

    def _write() -> None:
        times = os.times()
        kind, name = _kind()
        line = {"test": os.environ.get("PYTEST_CURRENT_TEST", ""), "kind": kind, "name": name,
                "pid": os.getpid(), "wall": round(time.monotonic() - _START_WALL, 3),
                "cpu": round(times.user + times.system, 3),
                "children_cpu": round(times.children_user + times.children_system, 3),
                "torch": "torch" in sys.modules, "transformers": "transformers" in sys.modules}
        try:
            with open(os.path.join(_FOLDER, f"processes-{os.getpid()}.jsonl"), "a", encoding="utf-8") as handle:
                handle.write(json.dumps(line) + "\n")
        except OSError:  # a test that fills the disk or removes the folder: the record is lost, nothing else
            pass

    atexit.register(_write)
