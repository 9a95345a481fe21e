"""The bulk job run: walk the job's pending items in id order, a chunk per transaction.

Each chunk locks the job row (a pause or an abort waits for it, and is seen before the
next chunk), reads the next pending items after the cursor, acts on them (claims.bulk.chunk)
and saves their outcomes, the job's counts and its cursor with those writes. A crash loses
at most the chunk in flight, which rolls back whole: a re-run resumes from the cursor and
acts on every item exactly once. Items another writer had locked stay pending; when the walk
reaches the end it sweeps again from the start for those. One runner works at a time: the
fleet-wide "bulk" runner lease (claims.backfill.lease).
"""

from __future__ import annotations

import enum
import logging
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from functools import partial
from typing import TypeVar

from django.db import DatabaseError, OperationalError, connection, transaction
from django.db.models import F

from claims.backfill.lease import runner_lease
from claims.backfill.runner import describe_error, yield_to_other_writers
from claims.fleet_clock import fleet_now
from claims.models import (
    RUNNABLE_BULK_STATUSES,
    BulkItemOutcome,
    BulkJob,
    BulkJobItem,
    BulkJobStatus,
)

from .chunk import CHUNK_ITEM_FIELDS, ChunkItem, ChunkResult, act_on_chunk

logger = logging.getLogger("weftboard.claims")
T = TypeVar("T")

DEFAULT_CHUNK_SIZE = 250
MAX_CHUNK_SIZE = 1_000
# Items an engine had locked are tried again on a later sweep; after this many sweeps that
# still left some, the job pauses with a note instead of spinning.
MAX_SWEEPS = 20
SWEEP_PAUSE_S = 0.5
# A chunk that met a busy database (SQLite's lock wait ran out, a PostgreSQL failover, a
# connection cut) is tried again, its transaction having rolled back whole, before the job
# is failed; so is the end-of-walk sweep. The pauses grow, 7.5 s in all at 0.5 s: a few
# seconds of lost connections are outlasted.
CHUNK_TRIES = 6
RETRY_PAUSE_S = 0.5


class _Step(enum.Enum):
    CONTINUE = "continue"
    DONE = "done"
    STOPPED = "stopped"


def _nothing(*args: object) -> None:
    pass


def _pace(job: BulkJob, chunk_seconds: float, acted: int) -> None:
    """Between chunks: the operator's rate cap, else SQLite's yield to other writers."""
    if job.rate_per_s:
        time.sleep(max(0.0, acted / job.rate_per_s - chunk_seconds))
    else:
        yield_to_other_writers(chunk_seconds)


@dataclass(frozen=True)
class BulkHooks:
    """Where a caller steps into a run (the tests do); the defaults are a real run's.

    - ``after_lock(job, chunk_number, items)``: inside a chunk's transaction, after its rows
      are locked and before it acts (a concurrent writer lands here);
    - ``before_commit(job, chunk_number)``: after a chunk's writes, before it commits (a
      crash lands here, and rolls the chunk back);
    - ``between_chunks(job, chunk_seconds, acted)``: after a chunk committed; default the
      rate cap, or on SQLite a pause as long as the chunk held the write lock;
    - ``send_adopts(adopt)``: the adopt messages of a takeover chunk, once committed (the
      Celery tasks send them; without it, each engine's reclaim pass takes its claims up);
    - ``lease()``: the bulk runner lease."""

    after_lock: Callable[[BulkJob, int, Sequence[ChunkItem]], None] = _nothing
    before_commit: Callable[[BulkJob, int], None] = _nothing
    between_chunks: Callable[[BulkJob, float, int], None] = _pace
    send_adopts: Callable[[dict[str, list[tuple[str, int]]]], None] | None = None
    lease: Callable[[], AbstractContextManager[bool]] = lambda: runner_lease("bulk")


NO_HOOKS = BulkHooks()


def bulk_run(
    job_id: int, *, chunk_size: int = DEFAULT_CHUNK_SIZE, hooks: BulkHooks = NO_HOOKS
) -> BulkJob:
    """Run (or resume) bulk job ``job_id``; returns the job as it stands afterwards.

    Idempotent: a job that is paused or over is returned untouched, and so is one whose
    lease another runner holds. An unexpected error marks the job failed with it."""
    if not 1 <= chunk_size <= MAX_CHUNK_SIZE:
        raise ValueError(f"chunk_size must be between 1 and {MAX_CHUNK_SIZE}, not {chunk_size}")
    with hooks.lease() as leased:
        if not leased:
            logger.info("bulk job #%s: another runner holds the bulk lease", job_id)
            return BulkJob.objects.get(pk=job_id)
        job = _start(job_id)
        if job.status != BulkJobStatus.RUNNING:
            return job
        size = min(chunk_size, job.rate_per_s or chunk_size)
        chunk_number, sweeps = 0, 0
        try:
            while True:
                chunk_number += 1
                began = time.monotonic()
                step, acted = _retrying(
                    job_id,
                    f"chunk {chunk_number}",
                    partial(_run_chunk, job_id, size, chunk_number, hooks),
                )
                if step is _Step.DONE and _retrying(
                    job_id, "the sweep", partial(_sweep_again, job_id, sweeps)
                ):
                    sweeps += 1
                    time.sleep(SWEEP_PAUSE_S)
                    continue
                if step is not _Step.CONTINUE:
                    break
                hooks.between_chunks(job, time.monotonic() - began, acted)
        except Exception as error:
            _fail(job_id, error)
        job = BulkJob.objects.get(pk=job_id)
    logger.info(
        "bulk job #%s %s %s: done=%s moved=%s refused=%s of %s",
        job.pk,
        job.action,
        job.status,
        job.done_count,
        job.moved_count,
        job.refused_count,
        job.frozen_count,
    )
    return job


def bulk_run_due(*, hooks: BulkHooks = NO_HOOKS) -> BulkJob | None:
    """Beat's entry: run the oldest queued or running job (one whose runner died resumes)."""
    job_id = (
        BulkJob.objects.filter(status__in=RUNNABLE_BULK_STATUSES)
        .order_by("pk")
        .values_list("pk", flat=True)
        .first()
    )
    return None if job_id is None else bulk_run(job_id, hooks=hooks)


def _start(job_id: int) -> BulkJob:
    now_ms, _ = fleet_now()
    BulkJob.objects.filter(pk=job_id, status=BulkJobStatus.QUEUED).update(
        status=BulkJobStatus.RUNNING, started_at_ms=now_ms
    )
    return BulkJob.objects.get(pk=job_id)


def _retrying(job_id: int, what: str, step: Callable[[], T]) -> T:
    """``step``, one transaction, again after an OperationalError, CHUNK_TRIES in all."""
    for attempt in range(1, CHUNK_TRIES + 1):
        try:
            return step()
        except OperationalError as error:
            if attempt == CHUNK_TRIES:
                raise
            logger.warning(
                "bulk job #%s: %s failed (%s); trying it again",
                job_id,
                what,
                describe_error(error),
            )
            # The connection may be gone (its commit's answer with it): the next try opens
            # another. Rolled back, the chunk's items are pending and are tried again;
            # committed, they are not pending any more, and the next try moves on.
            connection.close()
            time.sleep(RETRY_PAUSE_S * attempt)
    raise AssertionError("unreachable")


def _run_chunk(job_id: int, size: int, chunk_number: int, hooks: BulkHooks) -> tuple[_Step, int]:
    with transaction.atomic():
        job = BulkJob.objects.select_for_update().get(pk=job_id)
        if job.status != BulkJobStatus.RUNNING:
            return _Step.STOPPED, 0
        items = [
            ChunkItem(*row)
            for row in BulkJobItem.objects.filter(
                job_id=job_id, outcome=BulkItemOutcome.PENDING, id__gt=job.cursor
            )
            .order_by("id")
            .values_list(*CHUNK_ITEM_FIELDS)[:size]
        ]
        if not items:
            return _Step.DONE, 0
        now_ms, timing = fleet_now()
        hooks.after_lock(job, chunk_number, items)
        result = act_on_chunk(job, items, now_ms=now_ms, timing=timing)
        hooks.before_commit(job, chunk_number)
        _save_progress(job_id, items[-1].id, result)
        if result.adopt and hooks.send_adopts is not None:
            transaction.on_commit(partial(hooks.send_adopts, result.adopt))
    return _Step.CONTINUE, result.done + result.moved + result.refused


def _save_progress(job_id: int, cursor: int, result: ChunkResult) -> None:
    BulkJob.objects.filter(pk=job_id).update(
        cursor=cursor,
        done_count=F("done_count") + result.done,
        moved_count=F("moved_count") + result.moved,
        refused_count=F("refused_count") + result.refused,
    )


def _sweep_again(job_id: int, sweeps: int) -> bool:
    """At the end of the walk: go round again for items that were locked (False when none
    are left, and the job is finished here)."""
    now_ms, _ = fleet_now()
    with transaction.atomic():
        job = BulkJob.objects.select_for_update().get(pk=job_id)
        if job.status != BulkJobStatus.RUNNING:
            return False
        left = BulkJobItem.objects.filter(job_id=job_id, outcome=BulkItemOutcome.PENDING).count()
        if not left:
            job.status, job.finished_at_ms = BulkJobStatus.DONE, now_ms
            job.save(update_fields=["status", "finished_at_ms"])
            return False
        if sweeps >= MAX_SWEEPS:
            job.status = BulkJobStatus.PAUSED
            job.error = f"{left} items stayed locked by other writers; resume to try them again"
            job.save(update_fields=["status", "error"])
            return False
        job.cursor = 0
        job.save(update_fields=["cursor"])
        return True


def _fail(job_id: int, error: Exception) -> None:
    logger.error("bulk job #%s failed", job_id, exc_info=error)
    now_ms, _ = fleet_now()
    try:
        BulkJob.objects.filter(pk=job_id, status=BulkJobStatus.RUNNING).update(
            status=BulkJobStatus.FAILED, finished_at_ms=now_ms, error=describe_error(error)
        )
    except DatabaseError:
        # It stays running; beat's bulk_run_due resumes it from its cursor.
        logger.exception("bulk job #%s: could not record the failure", job_id)
