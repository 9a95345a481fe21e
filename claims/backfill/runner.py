"""The backfill run: walk Workflow by keyset and repair the visibility index batch by batch.

Each batch is one transaction that locks the job row, reads the next ``batch_size``
workflows after the cursor, repairs their index rows (see ``repair``) and saves the cursor
and counters with those writes. A crash loses at most the batch in flight and a re-run
resumes from the cursor; a cancel (which waits for the job row) is seen before the next
batch. One runner works at a time: a fleet-wide lease (a PostgreSQL advisory lock, or a
lock file beside the SQLite database) turns a second runner away at once, and the per-batch
row lock keeps even two leased runners from processing the same keys.
"""

from __future__ import annotations

import enum
import logging
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass

from django.db import DatabaseError, connection, transaction
from django.db.models import F, Q

from claims.models import BackfillJob, BackfillStatus, VisibilityWatermark, Workflow
from claims.protocol import Clock

from .jobs import datetime_to_ms, ms_to_datetime, now_ms
from .lease import runner_lease
from .repair import RepairCounts, WorkflowRow, read_index_range, read_workflows, repair

logger = logging.getLogger("weftboard.claims")

DEFAULT_BATCH_SIZE = 500
MAX_BATCH_SIZE = 5_000
# A run sent "now" by another process may reach a worker whose clock reads a hair earlier.
DUE_TOLERANCE_MS = 2_000
# SQLite only: the idle gap between batches (see yield_to_other_writers).
SQLITE_PAUSE_MIN_S = 0.02
SQLITE_PAUSE_MAX_S = 0.25


class _Step(enum.Enum):
    CONTINUE = "continue"
    DONE = "done"
    STOPPED = "stopped"


def yield_to_other_writers(batch_seconds: float) -> None:
    """SQLite has one writer at a time and its waiting writers poll, sleeping up to 100 ms
    between tries: back-to-back batches would starve the engines' renewals and an
    operator's cancel. Stay off the lock about as long as the batch held it (bounded)."""
    if connection.vendor == "sqlite":
        time.sleep(min(max(batch_seconds, SQLITE_PAUSE_MIN_S), SQLITE_PAUSE_MAX_S))


def _nothing(*args: object) -> None:
    pass


@dataclass(frozen=True)
class BackfillHooks:
    """Where a caller steps into a run (the tests do, to interleave other writers, crash a
    batch or pace the run); the defaults are what a real run does.

    - ``after_read(job, batch_number, rows)``: between a batch's reads and its writes,
      inside its transaction (a concurrent write lands here); default nothing;
    - ``before_commit(job, batch_number)``: after a batch's writes, before it commits (a
      crash lands here, and rolls the batch back); default nothing;
    - ``between_batches(batch_seconds)``: after a batch committed, when another follows;
      default ``yield_to_other_writers`` (a pause on SQLite);
    - ``lease()``: the runner lease, a context manager yielding whether it was had;
      default ``runner_lease`` (one runner in the fleet).

    Batches are numbered from 1 in each call of ``backfill_run``.
    """

    after_read: Callable[[BackfillJob, int, Sequence[WorkflowRow]], None] = _nothing
    before_commit: Callable[[BackfillJob, int], None] = _nothing
    between_batches: Callable[[float], None] = yield_to_other_writers
    lease: Callable[[], AbstractContextManager[bool]] = runner_lease


NO_HOOKS = BackfillHooks()


def backfill_run(
    job_id: int,
    *,
    batch_size: int = DEFAULT_BATCH_SIZE,
    clock: Clock | None = None,
    hooks: BackfillHooks = NO_HOOKS,
) -> BackfillJob:
    """Run (or resume) backfill ``job_id``; returns the job as it stands afterwards.

    Idempotent: a job that is not due, already finished or cancelled is returned
    untouched, and so is one whose lease another runner holds. An exception marks the
    job failed with its error; the watermark is written only when the job ends with no
    conflicts (with conflicts it ends ``failed``: "N conflicts; run it again").
    ``hooks`` are the points where a caller steps in (``BackfillHooks``).
    """
    if not 1 <= batch_size <= MAX_BATCH_SIZE:
        raise ValueError(f"batch_size must be between 1 and {MAX_BATCH_SIZE}, not {batch_size}")
    with hooks.lease() as leased:
        if not leased:
            logger.info("backfill #%s: another runner holds the backfill lease", job_id)
            return BackfillJob.objects.get(pk=job_id)
        job = _start(job_id, clock)
        if job.status != BackfillStatus.RUNNING:
            return job
        batch_number = 0
        try:
            while True:
                batch_number += 1
                began = time.monotonic()
                step = _run_batch(job_id, batch_size, batch_number, clock, hooks)
                if step is not _Step.CONTINUE:
                    break
                hooks.between_batches(time.monotonic() - began)
        except Exception as error:
            _fail(job_id, error, clock)
        job = BackfillJob.objects.get(pk=job_id)
    logger.info(
        "backfill #%s %s: processed=%s inserted=%s fixed=%s conflicts=%s",
        job.pk,
        job.status,
        job.processed,
        job.inserted,
        job.fixed,
        job.conflicts,
    )
    return job


def backfill_run_due(
    *,
    batch_size: int = DEFAULT_BATCH_SIZE,
    clock: Clock | None = None,
    hooks: BackfillHooks = NO_HOOKS,
) -> BackfillJob | None:
    """Beat's entry: run the job that is running (resume) or scheduled and due, if any."""
    due = ms_to_datetime(now_ms(clock) + DUE_TOLERANCE_MS)
    job_id = (
        BackfillJob.objects.filter(
            Q(status=BackfillStatus.RUNNING) | Q(status=BackfillStatus.SCHEDULED, run_at__lte=due)
        )
        .order_by("pk")
        .values_list("pk", flat=True)
        .first()
    )
    if job_id is None:
        return None
    return backfill_run(job_id, batch_size=batch_size, clock=clock, hooks=hooks)


def _start(job_id: int, clock: Clock | None) -> BackfillJob:
    """Flip a due scheduled job to running (one conditional UPDATE) and return the job."""
    now = now_ms(clock)
    started = BackfillJob.objects.filter(
        pk=job_id,
        status=BackfillStatus.SCHEDULED,
        run_at__lte=ms_to_datetime(now + DUE_TOLERANCE_MS),
    ).update(status=BackfillStatus.RUNNING, started_at=ms_to_datetime(now))
    if started:
        # The table may have grown since it was scheduled; the bar should measure this run.
        BackfillJob.objects.filter(pk=job_id).update(total_estimate=Workflow.objects.count())
    return BackfillJob.objects.get(pk=job_id)


def _run_batch(
    job_id: int, batch_size: int, batch_number: int, clock: Clock | None, hooks: BackfillHooks
) -> _Step:
    with transaction.atomic():
        # PostgreSQL: a row lock (a cancel waits for it); SQLite: IMMEDIATE holds the write lock.
        job = BackfillJob.objects.select_for_update().get(pk=job_id)
        if job.status != BackfillStatus.RUNNING:
            return _Step.STOPPED
        rows = read_workflows(after=job.cursor, limit=batch_size)
        complete = len(rows) < batch_size
        # The last batch also owns every index key past the last workflow (orphans).
        upper = None if complete else rows[-1].workflow_id
        index = read_index_range(after=job.cursor, through=upper)
        hooks.after_read(job, batch_number, rows)
        counts = repair(rows, index)
        hooks.before_commit(job, batch_number)
        _add_counts(job, rows, counts)
        fields = ["cursor", "processed", "inserted", "fixed", "conflicts"]
        if complete:
            _finish(job, clock)
            fields += ["status", "finished_at", "error"]
        job.save(update_fields=fields)
    return _Step.DONE if complete else _Step.CONTINUE


def _add_counts(job: BackfillJob, rows: Sequence[WorkflowRow], counts: RepairCounts) -> None:
    if rows:
        job.cursor = rows[-1].workflow_id
    job.processed += len(rows)
    job.inserted += counts.inserted
    job.fixed += counts.fixed
    job.conflicts += counts.conflicts


def _finish(job: BackfillJob, clock: Clock | None) -> None:
    """End the job in its last batch's transaction; only a clean run moves the watermark."""
    now = now_ms(clock)
    job.finished_at = ms_to_datetime(now)
    if job.conflicts:
        job.status = BackfillStatus.FAILED
        job.error = (
            f"{job.conflicts} conflicts (index rows changed while the backfill ran); "
            "the watermark was not written: run it again"
        )
        return
    job.status = BackfillStatus.SUCCEEDED
    job.error = ""
    # The index is complete for every workflow that existed when this run started.
    built_at_ms = datetime_to_ms(job.started_at) if job.started_at else now
    if not VisibilityWatermark.objects.filter(pk=1).update(
        version=F("version") + 1, built_at_ms=built_at_ms
    ):
        VisibilityWatermark.objects.create(pk=1, version=1, built_at_ms=built_at_ms)


def describe_error(error: BaseException) -> str:
    """The error's type and first line: enough to act on, no tracebacks or parameters."""
    first_line = (str(error).strip().splitlines() or [""])[0]
    text = f"{type(error).__name__}: {first_line}" if first_line else type(error).__name__
    return text[:500]


def _fail(job_id: int, error: Exception, clock: Clock | None) -> None:
    logger.error("backfill #%s failed", job_id, exc_info=error)
    try:
        BackfillJob.objects.filter(pk=job_id, status=BackfillStatus.RUNNING).update(
            status=BackfillStatus.FAILED,
            finished_at=ms_to_datetime(now_ms(clock)),
            error=describe_error(error),
        )
    except DatabaseError:
        # It stays running; a re-run (beat's backfill_run_due) resumes it from its cursor.
        logger.exception("backfill #%s: could not record the failure", job_id)
