"""Fault injection for the reliability tests, loaded at interpreter start when this folder is on PYTHONPATH.

With ``HARDNEG_PAUSE_AT`` set, a stage process that renames one of its temporaries (``.<name>.<random>.tmp``,
see ``hardneg.io.atomic``) onto a path containing that text writes its process id to the file
``HARDNEG_PAUSE_MARK`` and sleeps ``HARDNEG_PAUSE_SECONDS`` (default 600): just before the rename, or just after
it with ``HARDNEG_PAUSE_AFTER=1``. The test then kills the process at that known point, or lets it go on at once
with SIGUSR1. Without the variable nothing changes.
"""

import os

_AT = os.environ.get("HARDNEG_PAUSE_AT")

if _AT:
    import signal
    import time

    _rename = os.replace

    class _Resume(Exception):
        pass

    def _resume(signum, frame):
        raise _Resume

    def _pause() -> None:
        previous = signal.signal(signal.SIGUSR1, _resume)
        mark = os.environ["HARDNEG_PAUSE_MARK"]
        with open(mark + ".part", "w") as handle:
            handle.write(str(os.getpid()))
        _rename(mark + ".part", mark)
        try:
            time.sleep(float(os.environ.get("HARDNEG_PAUSE_SECONDS", "600")))
        except _Resume:
            pass
        finally:
            signal.signal(signal.SIGUSR1, previous)

    def replace(src, dst, *args, **kwargs):
        name = os.path.basename(os.fspath(src))
        hit = name.startswith(".") and name.endswith(".tmp") and _AT in os.fspath(dst)
        after = os.environ.get("HARDNEG_PAUSE_AFTER") == "1"
        if hit and not after:
            _pause()
        result = _rename(src, dst, *args, **kwargs)
        if hit and after:
            _pause()
        return result

    os.replace = replace
