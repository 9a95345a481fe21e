"""backfill_schedule / backfill_cancel: one active job (DB-enforced), read-only, the run's send."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from django.db import IntegrityError, connection, transaction

from claims.backfill import backfill_progress, backfill_run
from claims.backfill.jobs import ms_to_datetime
from claims.models import BackfillJob
from claims.protocol.errors import ClaimConfigError, ClaimError
from claims.services.backfills import backfill_cancel, backfill_schedule
from claims.services.errors import (
    BackfillAlreadyActiveError,
    BackfillInThePastError,
    BackfillNotActiveError,
    ReadOnlyError,
)

from ._data import START_AT, START_MS, clock, import_workflows, running_job, workflow_ids

pytestmark = pytest.mark.django_db


def test_schedule_now_records_the_job_and_sends_the_run_on_commit(
    sent_runs, django_capture_on_commit_callbacks
):
    import_workflows(workflow_ids(6))

    with django_capture_on_commit_callbacks(execute=True):
        job = backfill_schedule(run_at=None, requested_by="alice", clock=clock())
        assert sent_runs == []  # not before the job row is committed

    assert (job.status, job.kind, job.requested_by, job.total_estimate) == (
        "scheduled",
        "visibility",
        "alice",
        6,
    )
    assert job.run_at == START_AT
    assert (job.processed, job.inserted, job.fixed, job.conflicts, job.cursor) == (0, 0, 0, 0, None)
    assert sent_runs == [(job.pk, None)]


def test_schedule_later_sends_with_an_eta_within_the_horizon(
    sent_runs, django_capture_on_commit_callbacks
):
    run_at = ms_to_datetime(START_MS + 5 * 60_000)
    with django_capture_on_commit_callbacks(execute=True):
        job = backfill_schedule(run_at=run_at, requested_by="alice", clock=clock())
    assert sent_runs == [(job.pk, run_at)]


def test_schedule_far_ahead_leaves_the_start_to_beat(sent_runs, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        job = backfill_schedule(
            run_at=ms_to_datetime(START_MS + 3_600_000), requested_by="alice", clock=clock()
        )
    assert job.status == "scheduled"
    assert sent_runs == []


def test_a_naive_run_at_is_read_as_utc():
    job = backfill_schedule(run_at=datetime(2031, 5, 1, 12, 30), requested_by="a", clock=clock())
    job.refresh_from_db()
    assert job.run_at.isoformat() == "2031-05-01T12:30:00+00:00"


def test_a_second_schedule_is_refused_while_one_is_active():
    first = backfill_schedule(run_at=None, requested_by="alice", clock=clock())

    with pytest.raises(BackfillAlreadyActiveError) as refused:
        backfill_schedule(run_at=None, requested_by="bob", clock=clock())

    assert refused.value.active_job_id == first.pk
    assert f"#{first.pk}" in str(refused.value)
    assert isinstance(refused.value, ClaimError)
    assert list(BackfillJob.objects.values_list("pk", "status")) == [(first.pk, "scheduled")]


def test_a_running_job_also_blocks_a_new_one():
    job = running_job()
    with pytest.raises(BackfillAlreadyActiveError):
        backfill_schedule(run_at=None, requested_by="bob", clock=clock())
    assert BackfillJob.objects.filter(status__in=["scheduled", "running"]).count() == 1
    assert BackfillJob.objects.get().pk == job.pk


def test_the_database_itself_refuses_a_second_active_row():
    """Not the service's check: a raw INSERT of a second active row breaks the constraint."""
    running_job()
    table = connection.ops.quote_name(BackfillJob._meta.db_table)
    insert = (
        f"INSERT INTO {table} (kind, status, requested_by, run_at, processed, inserted, fixed, "
        "conflicts, error) VALUES (%s, %s, %s, %s, 0, 0, 0, 0, '')"
    )
    with pytest.raises(IntegrityError), transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(insert, ["visibility", "scheduled", "mallory", START_AT])
    # Finished jobs are not limited.
    with connection.cursor() as cursor:
        cursor.execute(insert, ["visibility", "succeeded", "x", START_AT])
        cursor.execute(insert, ["visibility", "cancelled", "y", START_AT])
    assert BackfillJob.objects.filter(status__in=["scheduled", "running"]).count() == 1


def test_after_a_job_ends_a_new_one_can_be_scheduled():
    first = backfill_schedule(run_at=None, requested_by="alice", clock=clock())
    backfill_run(first.pk, clock=clock())
    second = backfill_schedule(run_at=None, requested_by="alice", clock=clock())
    assert second.status == "scheduled"
    assert second.pk != first.pk


def test_cancel_a_scheduled_job():
    job = backfill_schedule(run_at=None, requested_by="alice", clock=clock())
    fake = clock()
    fake.advance(1_000)

    cancelled = backfill_cancel(job_id=job.pk, actor="bob", clock=fake)

    assert (cancelled.status, cancelled.error) == ("cancelled", "cancelled by bob")
    assert cancelled.finished_at == ms_to_datetime(START_MS + 1_000)
    # Its run does nothing, and the slot is free again.
    assert backfill_run(job.pk, clock=clock()).status == "cancelled"
    assert backfill_schedule(run_at=None, requested_by="carol", clock=clock()).status == (
        "scheduled"
    )


def test_cancel_refuses_finished_and_unknown_jobs():
    done = running_job(status="succeeded")
    with pytest.raises(BackfillNotActiveError) as refused:
        backfill_cancel(job_id=done.pk, actor="bob")
    assert refused.value.status == "succeeded"
    assert isinstance(refused.value, ClaimError)
    with pytest.raises(BackfillJob.DoesNotExist):
        backfill_cancel(job_id=done.pk + 100, actor="bob")


def test_read_only_refuses_schedule_and_cancel_with_the_reason(settings):
    job = running_job()
    settings.WEFTBOARD_READ_ONLY = "database migration until 14:00"

    with pytest.raises(ReadOnlyError, match="database migration until 14:00") as refused:
        backfill_schedule(run_at=None, requested_by="alice")
    assert isinstance(refused.value, ClaimConfigError)
    with pytest.raises(ReadOnlyError, match="read-only"):
        backfill_cancel(job_id=job.pk, actor="alice")

    assert list(BackfillJob.objects.values_list("status", flat=True)) == ["running"]


def test_requested_by_is_kept_within_its_column():
    job = backfill_schedule(run_at=None, requested_by="u" * 300, clock=clock())
    job.refresh_from_db()
    assert job.requested_by == "u" * 150


@pytest.mark.parametrize(
    ("status", "processed", "total", "expected"),
    [
        ("running", 50, 200, 0.25),
        ("running", 300, 200, 1.0),
        ("running", 0, None, 0.0),
        ("scheduled", 0, 0, 0.0),
        ("succeeded", 0, 0, 1.0),
        ("succeeded", 180, 200, 1.0),
        ("cancelled", 20, 200, 0.1),
    ],
)
def test_progress(status, processed, total, expected):
    job = BackfillJob(status=status, processed=processed, total_estimate=total)
    assert backfill_progress(job) == pytest.approx(expected)


def test_run_at_a_moment_ago_runs_now(sent_runs, django_capture_on_commit_callbacks):
    """A form filled in slowly: a time within the last minute still means now."""
    with django_capture_on_commit_callbacks(execute=True):
        job = backfill_schedule(
            run_at=START_AT - timedelta(seconds=30), requested_by="alice", clock=clock()
        )
    assert sent_runs == [(job.pk, None)]
    assert backfill_run(job.pk, clock=clock()).status == "succeeded"


def test_run_at_further_in_the_past_is_refused(sent_runs):
    with pytest.raises(BackfillInThePastError, match="in the past"):
        backfill_schedule(run_at=START_AT - timedelta(days=1), requested_by="alice", clock=clock())
    assert sent_runs == []
    assert not BackfillJob.objects.exists()
