"""Runners, cancels and schedules from several connections at once (committed data, threads)."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection

from claims.backfill import backfill_run
from claims.backfill.runner import BackfillHooks
from claims.models import BackfillJob, WorkflowVisibility
from claims.services.backfills import backfill_cancel, backfill_schedule
from claims.services.errors import BackfillAlreadyActiveError

from ._data import import_workflows, index_snapshot, workflow_ids, workflow_snapshot

pytestmark = pytest.mark.django_db(transaction=True)


def in_threads(*targets: Callable[[], Any]) -> list[Any]:
    """Run each target on its own thread (its own connection); re-raise the first error."""
    results: list[Any] = [None] * len(targets)
    errors: list[BaseException] = []

    def wrap(i: int, target: Callable[[], Any]) -> None:
        try:
            results[i] = target()
        except BaseException as error:
            errors.append(error)
        finally:
            connection.close()

    threads = [threading.Thread(target=wrap, args=(i, t)) for i, t in enumerate(targets)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
        assert not thread.is_alive(), "a thread hung"
    if errors:
        raise errors[0]
    return results


def test_two_runners_without_the_lease_still_process_each_batch_once():
    """The per-batch row lock (PostgreSQL) / write lock (SQLite) alone keeps them apart."""
    import_workflows(workflow_ids(60))
    job = backfill_schedule(run_at=None, requested_by="alice")

    @contextlib.contextmanager
    def always_leased():
        yield True

    batches: list[tuple[str, str | None]] = []
    guard = threading.Lock()

    def slow_read(job, n, rows):
        time.sleep(0.01)  # widen the window in which the other runner could slip in

    def record(job, n):
        with guard:
            batches.append((threading.current_thread().name, job.cursor))

    hooks = BackfillHooks(after_read=slow_read, before_commit=record, lease=always_leased)

    in_threads(
        lambda: backfill_run(job.pk, batch_size=4, hooks=hooks),
        lambda: backfill_run(job.pk, batch_size=4, hooks=hooks),
    )

    job.refresh_from_db()
    assert (job.status, job.processed, job.inserted, job.fixed, job.conflicts) == (
        "succeeded",
        60,
        60,
        0,
        0,
    )
    starts = [cursor for _, cursor in batches]
    assert len(starts) == len(set(starts)) == 16  # 15 full batches + the empty last one
    assert index_snapshot() == workflow_snapshot()


def test_a_second_runner_is_turned_away_while_the_first_holds_the_lease():
    import_workflows(workflow_ids(12))
    job = backfill_schedule(run_at=None, requested_by="alice")
    first_in_batch = threading.Event()
    second_done = threading.Event()
    runners: set[str] = set()

    def hold_first_batch(job, n):
        runners.add(threading.current_thread().name)
        if n == 1:
            first_in_batch.set()
            # Outside any lock the second runner could wait on: only the lease stands between.
            assert second_done.wait(timeout=30)

    hooks = BackfillHooks(before_commit=hold_first_batch)

    def first():
        return backfill_run(job.pk, batch_size=5, hooks=hooks)

    def second():
        assert first_in_batch.wait(timeout=30)
        try:
            return backfill_run(job.pk, batch_size=5, hooks=hooks)
        finally:
            second_done.set()

    done_first, done_second = in_threads(first, second)

    assert done_first.status == "succeeded"
    assert done_second.status == "running"  # returned at once, untouched
    assert len(runners) == 1
    job.refresh_from_db()
    assert (job.processed, job.inserted) == (12, 12)
    assert WorkflowVisibility.objects.count() == 12


def test_a_cancel_from_another_connection_waits_for_the_batch_and_stops_the_run():
    import_workflows(workflow_ids(60))
    job = backfill_schedule(run_at=None, requested_by="alice")
    second_batch_started = threading.Event()

    def slow_second_batch(job, n, rows):
        if n == 2:
            second_batch_started.set()
            time.sleep(0.3)

    hooks = BackfillHooks(after_read=slow_second_batch)

    def operator():
        assert second_batch_started.wait(timeout=30)
        return backfill_cancel(job_id=job.pk, actor="bob")

    ran, cancelled = in_threads(lambda: backfill_run(job.pk, batch_size=5, hooks=hooks), operator)

    # The cancel waited for the batch in flight (it read the job after batch 2 committed)...
    assert cancelled.status == "cancelled"
    assert cancelled.processed >= 10
    # ...and the run stopped at the next batch boundary, long before the end.
    assert ran.status == "cancelled"
    assert ran.processed == cancelled.processed < 60
    assert ran.processed % 5 == 0
    assert ran.cursor == f"wf-{ran.processed - 1:05d}"
    assert WorkflowVisibility.objects.count() == ran.inserted == ran.processed


def test_racing_schedules_create_exactly_one_job():
    barrier = threading.Barrier(4)

    def schedule():
        barrier.wait(timeout=30)
        try:
            return backfill_schedule(run_at=None, requested_by=threading.current_thread().name)
        except BackfillAlreadyActiveError as error:
            return error

    outcomes = in_threads(schedule, schedule, schedule, schedule)

    jobs = [o for o in outcomes if isinstance(o, BackfillJob)]
    refusals = [o for o in outcomes if isinstance(o, BackfillAlreadyActiveError)]
    assert (len(jobs), len(refusals)) == (1, 3)
    assert BackfillJob.objects.filter(status__in=["scheduled", "running"]).count() == 1
