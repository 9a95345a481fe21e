"""backfill_run: keyset batches that insert, fix and delete index rows, resumable and idempotent."""

from __future__ import annotations

import pytest

from claims.backfill import backfill_run, backfill_run_due
from claims.backfill.runner import NO_HOOKS, BackfillHooks
from claims.models import BackfillJob, VisibilityWatermark, Workflow, WorkflowVisibility
from claims.services.backfills import backfill_cancel, backfill_schedule

from ._data import (
    START_MS,
    clock,
    import_workflows,
    index_snapshot,
    running_job,
    workflow_ids,
    workflow_snapshot,
)

pytestmark = pytest.mark.django_db


class SimulatedCrash(BaseException):
    """A process dying mid-batch: not an Exception, so nothing records it as a failure."""


def schedule_and_run(*, batch_size: int = 5, fake=None, hooks: BackfillHooks = NO_HOOKS):
    fake = fake or clock()
    job = backfill_schedule(run_at=None, requested_by="alice", clock=fake)
    return backfill_run(job.pk, batch_size=batch_size, clock=fake, hooks=hooks)


def test_inserts_every_missing_row_and_writes_the_watermark():
    import_workflows(workflow_ids(12))
    fake = clock()

    job = schedule_and_run(batch_size=5, fake=fake)

    assert job.status == "succeeded"
    assert (job.processed, job.inserted, job.fixed, job.conflicts) == (12, 12, 0, 0)
    assert job.total_estimate == 12
    assert job.cursor == "wf-00011"
    assert job.error == ""
    assert job.started_at is not None
    assert job.finished_at is not None
    assert index_snapshot() == workflow_snapshot()
    watermark = VisibilityWatermark.objects.get()
    assert (watermark.version, watermark.built_at_ms) == (1, START_MS)


def test_fixes_stale_rows_from_the_workflow():
    import_workflows(workflow_ids(9), indexed=True)
    WorkflowVisibility.objects.filter(workflow_id="wf-00002").update(status="running")
    WorkflowVisibility.objects.filter(workflow_id="wf-00006").update(workflow_type="nope")
    WorkflowVisibility.objects.filter(workflow_id="wf-00007").update(
        status="cancelled", updated_at_ms=1
    )

    job = schedule_and_run(batch_size=4)

    assert (job.status, job.processed, job.inserted, job.fixed, job.conflicts) == (
        "succeeded",
        9,
        0,
        3,
        0,
    )
    assert index_snapshot() == workflow_snapshot()


def test_a_row_differing_only_in_updated_at_is_not_stale():
    """Checkpoints move Workflow.updated_at_ms without the index; that drift is by design."""
    import_workflows(workflow_ids(3), indexed=True)
    Workflow.objects.filter(workflow_id="wf-00001").update(updated_at_ms=START_MS + 99)
    before = index_snapshot()

    job = schedule_and_run()

    assert (job.status, job.fixed, job.conflicts) == ("succeeded", 0, 0)
    assert index_snapshot() == before


def test_deletes_rows_of_deleted_workflows_anywhere_in_the_keyspace():
    import_workflows(["b-1", "d-1", "d-2", "f-1", "h-1"])
    # Orphans before the first key, between batches, inside a batch, and past the last key.
    for orphan in ("a-0", "c-0", "d-15", "g-0", "z-9"):
        WorkflowVisibility.objects.create(
            workflow_id=orphan, status="running", workflow_type="order", updated_at_ms=1
        )

    job = schedule_and_run(batch_size=2)

    assert (job.status, job.processed, job.inserted, job.fixed, job.conflicts) == (
        "succeeded",
        5,
        5,
        5,
        0,
    )
    assert index_snapshot() == workflow_snapshot()


def test_an_empty_table_with_orphans_only():
    WorkflowVisibility.objects.create(
        workflow_id="gone", status="running", workflow_type="order", updated_at_ms=1
    )

    job = schedule_and_run()

    assert (job.status, job.processed, job.fixed) == ("succeeded", 0, 1)
    assert not WorkflowVisibility.objects.exists()
    assert VisibilityWatermark.objects.get().version == 1


def test_idempotent_a_second_run_changes_nothing():
    import_workflows(workflow_ids(11))
    WorkflowVisibility.objects.create(
        workflow_id="wf-00003x", status="running", workflow_type="order", updated_at_ms=1
    )
    first = schedule_and_run(batch_size=3)
    assert (first.inserted, first.fixed) == (11, 1)
    after_first = index_snapshot()
    ids_after_first = set(WorkflowVisibility.objects.values_list("pk", flat=True))

    second = schedule_and_run(batch_size=3)

    assert (second.status, second.processed, second.inserted, second.fixed, second.conflicts) == (
        "succeeded",
        11,
        0,
        0,
        0,
    )
    assert index_snapshot() == after_first
    assert set(WorkflowVisibility.objects.values_list("pk", flat=True)) == ids_after_first
    assert VisibilityWatermark.objects.get().version == 2
    # Running a finished job again does nothing at all.
    again = backfill_run(second.pk, batch_size=3, clock=clock())
    assert (again.status, again.processed, again.finished_at) == (
        "succeeded",
        11,
        second.finished_at,
    )
    assert VisibilityWatermark.objects.get().version == 2


def test_resumes_from_its_cursor_after_a_crash():
    import_workflows(workflow_ids(23))
    fake = clock()
    job = backfill_schedule(run_at=None, requested_by="alice", clock=fake)
    batches = []

    def crash_in_third_batch(job, n):
        batches.append((n, job.cursor))
        if n == 3:
            raise SimulatedCrash

    with pytest.raises(SimulatedCrash):
        backfill_run(
            job.pk,
            batch_size=5,
            clock=fake,
            hooks=BackfillHooks(before_commit=crash_in_third_batch),
        )

    job.refresh_from_db()
    # Two batches committed with their cursor and counters; the third rolled back whole.
    assert (job.status, job.cursor, job.processed, job.inserted) == ("running", "wf-00009", 10, 10)
    assert WorkflowVisibility.objects.count() == 10
    assert not VisibilityWatermark.objects.exists()

    record = BackfillHooks(before_commit=lambda job, n: batches.append((n, job.cursor)))
    job = backfill_run(job.pk, batch_size=5, clock=fake, hooks=record)

    assert (job.status, job.processed, job.inserted, job.fixed, job.conflicts) == (
        "succeeded",
        23,
        23,
        0,
        0,
    )
    assert index_snapshot() == workflow_snapshot()
    assert VisibilityWatermark.objects.get().version == 1
    # The re-run started at the saved cursor: no batch before it was redone.
    assert batches == [
        (1, None),
        (2, "wf-00004"),
        (3, "wf-00009"),
        (1, "wf-00009"),
        (2, "wf-00014"),
        (3, "wf-00019"),
    ]


def test_an_error_fails_the_job_with_its_message_and_no_watermark():
    import_workflows(workflow_ids(12))

    def fail_in_second_batch(job, n):
        if n == 2:
            raise RuntimeError("disk full\nsecond line with details")

    job = schedule_and_run(batch_size=5, hooks=BackfillHooks(before_commit=fail_in_second_batch))

    assert job.status == "failed"
    assert job.error == "RuntimeError: disk full"
    assert (job.processed, job.inserted, job.cursor) == (5, 5, "wf-00004")
    assert job.finished_at is not None
    assert not VisibilityWatermark.objects.exists()
    # A failed job is over: running it again does nothing (schedule a new one).
    assert backfill_run(job.pk, batch_size=5, clock=clock()).processed == 5


def test_conflicts_fail_the_job_without_a_watermark_and_a_rerun_is_clean():
    import_workflows(workflow_ids(8), indexed=True)
    WorkflowVisibility.objects.filter(workflow_id="wf-00001").update(status="running")
    WorkflowVisibility.objects.filter(workflow_id="wf-00005").delete()
    VisibilityWatermark.objects.create(version=4, built_at_ms=1)

    def concurrent_writes(job, n, rows):
        if n != 1:
            return
        # Between the batch's reads and its writes another transaction commits:
        # the stale row's workflow moves on, and the missing row gets indexed.
        Workflow.objects.filter(workflow_id="wf-00001").update(
            status="completed", updated_at_ms=START_MS + 1
        )
        WorkflowVisibility.objects.create(
            workflow_id="wf-00005", status="completed", workflow_type="refund", updated_at_ms=1
        )

    job = schedule_and_run(batch_size=10, hooks=BackfillHooks(after_read=concurrent_writes))

    assert (job.status, job.processed, job.inserted, job.fixed, job.conflicts) == (
        "failed",
        8,
        0,
        0,
        2,
    )
    assert job.error.startswith("2 conflicts")
    assert "run it again" in job.error
    # Nothing was overwritten: the rows stay as the concurrent writes left them.
    assert WorkflowVisibility.objects.get(workflow_id="wf-00001").status == "running"
    assert WorkflowVisibility.objects.get(workflow_id="wf-00005").updated_at_ms == 1
    assert VisibilityWatermark.objects.get().version == 4

    rerun = schedule_and_run(batch_size=10)
    assert (rerun.status, rerun.fixed, rerun.conflicts) == ("succeeded", 1, 0)
    assert VisibilityWatermark.objects.get().version == 5
    assert WorkflowVisibility.objects.get(workflow_id="wf-00001").status == "completed"


def test_a_cancel_stops_the_run_before_its_next_batch():
    import_workflows(workflow_ids(20))

    def cancel_during_second_batch(job, n):
        if n == 2:
            backfill_cancel(job_id=job.pk, actor="bob")

    job = schedule_and_run(
        batch_size=5, hooks=BackfillHooks(before_commit=cancel_during_second_batch)
    )

    assert job.status == "cancelled"
    assert job.error == "cancelled by bob"
    assert (job.processed, job.inserted, job.cursor) == (10, 10, "wf-00009")
    assert WorkflowVisibility.objects.count() == 10
    assert not VisibilityWatermark.objects.exists()


def test_a_scheduled_job_that_is_not_due_is_left_alone():
    import_workflows(workflow_ids(3))
    fake = clock()
    job = backfill_schedule(run_at=clock_at(START_MS + 60_000), requested_by="alice", clock=fake)

    assert backfill_run(job.pk, clock=fake).status == "scheduled"
    assert backfill_run_due(clock=fake) is None

    fake.advance(60_000)
    ran = backfill_run_due(clock=fake)
    assert ran is not None
    assert ran.status == "succeeded"
    assert WorkflowVisibility.objects.count() == 3


def test_run_due_resumes_a_running_job_whose_runner_died():
    import_workflows(workflow_ids(7))
    job = running_job(cursor="wf-00002", processed=3, inserted=0, total_estimate=7)

    resumed = backfill_run_due(batch_size=2, clock=clock())

    assert resumed is not None
    assert resumed.pk == job.pk
    assert (resumed.status, resumed.processed, resumed.inserted) == ("succeeded", 7, 4)
    # Only the keys after the cursor were walked.
    assert set(WorkflowVisibility.objects.values_list("workflow_id", flat=True)) == set(
        workflow_ids(7)[3:]
    )


def test_the_estimate_is_refreshed_when_the_run_starts():
    import_workflows(workflow_ids(4))
    fake = clock()
    job = backfill_schedule(run_at=None, requested_by="alice", clock=fake)
    import_workflows(workflow_ids(3, prefix="late-"))

    job = backfill_run(job.pk, clock=fake)

    assert (job.total_estimate, job.processed, job.inserted) == (7, 7, 7)


@pytest.mark.parametrize("batch_size", [0, -1, 5_001])
def test_batch_size_is_bounded(batch_size):
    job = running_job()
    with pytest.raises(ValueError, match="batch_size"):
        backfill_run(job.pk, batch_size=batch_size)


def test_unknown_job():
    with pytest.raises(BackfillJob.DoesNotExist):
        backfill_run(999_999)


def clock_at(ms):
    from claims.backfill.jobs import ms_to_datetime

    return ms_to_datetime(ms)
