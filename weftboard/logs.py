"""Logging filters: the routine, once-per-tick lines Celery would log at INFO.

Beat sends a tick to every engine, a fleet snapshot and a few checks every renew interval;
at INFO Celery logs "Sending due task", "received" and "succeeded" for each, about 200
lines a minute from three engines, which buries the lines an operator needs (the
``event=…`` lines, docs/design.md §10). Failures of these tasks still log: they are
not INFO records of these three kinds.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

# Tasks beat runs on a fixed cadence, whose success is the normal state of things.
ROUTINE_TASKS = frozenset(
    {
        "claims.engine_tick",
        "claims.fan_out_ticks",
        "claims.fleet_snapshot",
        "claims.mark_silent_engines_dead",
        "claims.prune_engine_history",
        "claims.backfill_run_due",
        "claims.demo_start_workflows",
    }
)


def _task_name(record: logging.LogRecord) -> object:
    """The task a Celery INFO record is about: ``{"name": ...}`` for a worker's received
    and succeeded lines, ``(entry, task)`` for beat's "Sending due task"."""
    args = record.args
    if isinstance(args, Mapping):
        return args.get("name")
    if isinstance(args, tuple) and len(args) == 2:
        return args[1]
    return None


class QuietRoutineTasks(logging.Filter):
    """Drops INFO (and lower) lines about a routine task; keeps everything else."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno > logging.INFO or _task_name(record) not in ROUTINE_TASKS
