"""A Snakemake logger plugin for the tests: every job Snakemake plans or runs, as one JSON line in a file.

A job with a ``message:`` shows only that message on the terminal; the tests read each job's rule, wildcards and
resources from the records Snakemake's logger receives instead (``--logger jobs --logger-jobs-path FILE``, with
``tests/support/plugins`` on ``PYTHONPATH``)."""

import json
import logging
from dataclasses import dataclass, field
from typing import Optional

from snakemake_interface_logger_plugins.base import LogHandlerBase
from snakemake_interface_logger_plugins.common import LogEvent
from snakemake_interface_logger_plugins.settings import LogHandlerSettingsBase


@dataclass
class LogHandlerSettings(LogHandlerSettingsBase):
    path: Optional[str] = field(  # a real type, not a string: Snakemake makes its option from it
        default=None, metadata={"help": "the JSON Lines file to append the jobs to",
                                                      "required": True})


class LogHandler(LogHandlerBase):
    """Appends ``{"rule", "wildcards", "resources", "message", "input", "output", "log", "benchmark"}`` for each
    job-info record (the files as Snakemake prints them: ``path (update)``)."""

    def emit(self, record: logging.LogRecord) -> None:
        if getattr(record, "event", None) != LogEvent.JOB_INFO:
            return
        resources = {key: value for key, value in dict(getattr(record, "resources", {}) or {}).items()
                     if not key.startswith("_")}
        line = {"rule": record.rule_name, "wildcards": dict(getattr(record, "wildcards", {}) or {}),
                "resources": {key: str(value) for key, value in resources.items()},
                "message": getattr(record, "rule_msg", None),
                "input": list(getattr(record, "input", None) or []),
                "output": list(getattr(record, "output", None) or []),
                "log": list(getattr(record, "log", None) or []),
                "benchmark": getattr(record, "benchmark", None)}
        with open(self.settings.path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(line) + "\n")

    @property
    def writes_to_stream(self) -> bool:
        return False

    @property
    def writes_to_file(self) -> bool:
        return False

    @property
    def has_filter(self) -> bool:
        return False

    @property
    def has_formatter(self) -> bool:
        return False

    @property
    def needs_rulegraph(self) -> bool:
        return False
