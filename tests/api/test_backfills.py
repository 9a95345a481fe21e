"""POST /backfills, GET /backfills/{id}, POST /backfills/{id}/cancel."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.utils import timezone

from claims.models import BackfillJob, BackfillStatus

from .conftest import post, url

pytestmark = pytest.mark.django_db


def job(status=BackfillStatus.SCHEDULED, **fields):
    return BackfillJob.objects.create(status=status, run_at=timezone.now(), **fields)


def test_schedule_now_answers_201_with_the_job(operator_client):
    """Scheduling with no run_at creates a scheduled job due now, requested by the caller."""
    response = post(operator_client, url("/backfills"), {})

    assert response.status_code == 201, response.content
    body = response.json()
    assert body["status"] == "scheduled"
    assert body["requested_by"] == "operator"
    created = BackfillJob.objects.get()
    assert body["id"] == created.pk


def test_schedule_at_a_time(operator_client):
    """run_at with a timezone schedules the job for that moment."""
    response = post(operator_client, url("/backfills"), {"run_at": "2031-05-01T02:00:00+02:00"})

    assert response.status_code == 201, response.content
    assert BackfillJob.objects.get().run_at == datetime(2031, 5, 1, 0, 0, tzinfo=UTC)


@pytest.mark.parametrize("run_at", ["2031-05-01T02:00:00", "tomorrow", 12])
def test_schedule_needs_a_time_with_a_timezone(operator_client, run_at):
    """A naive or unreadable run_at is refused with 422."""
    response = post(operator_client, url("/backfills"), {"run_at": run_at})

    assert response.status_code == 422
    assert not BackfillJob.objects.exists()


def test_a_time_in_the_past_is_refused_as_the_admin_refuses_it(operator_client):
    response = post(operator_client, url("/backfills"), {"run_at": "2001-01-01T00:00:00Z"})

    assert response.status_code == 422
    assert "in the past" in response.json()["detail"]
    assert not BackfillJob.objects.exists()


def test_a_second_backfill_while_one_is_active_gets_409(operator_client):
    """Only one backfill may be scheduled or running: the second answers 409."""
    active = job(BackfillStatus.RUNNING)

    response = post(operator_client, url("/backfills"), {})

    assert response.status_code == 409
    assert f"#{active.pk}" in response.json()["detail"]
    assert BackfillJob.objects.count() == 1


def test_read_a_job_with_its_progress(viewer_client):
    """A job reads with its counters and progress as a fraction."""
    running = job(BackfillStatus.RUNNING, processed=250, total_estimate=1_000, inserted=7)

    body = viewer_client.get(url(f"/backfills/{running.pk}")).json()

    assert (body["status"], body["processed"], body["inserted"]) == ("running", 250, 7)
    assert body["progress"] == 0.25


def test_unknown_job_gets_404(viewer_client):
    """A job id that does not exist answers 404."""
    response = viewer_client.get(url("/backfills/999999"))

    assert response.status_code == 404
    assert response.json() == {"detail": "not found"}


@pytest.mark.parametrize("job_id", ["0", "-1", "abc", "1.5", str(2**53)])
def test_bad_job_ids_get_422(viewer_client, operator_client, job_id):
    """Job ids that are not positive integers below 2**53 are refused with 422."""
    assert viewer_client.get(url(f"/backfills/{job_id}")).status_code == 422
    assert post(operator_client, url(f"/backfills/{job_id}/cancel")).status_code == 422


def test_cancel_an_active_job(operator_client):
    """Cancelling a scheduled job marks it cancelled."""
    scheduled = job()

    response = post(operator_client, url(f"/backfills/{scheduled.pk}/cancel"))

    assert response.status_code == 200, response.content
    assert response.json()["status"] == "cancelled"
    scheduled.refresh_from_db()
    assert scheduled.status == "cancelled"


def test_cancel_of_a_finished_job_gets_409(operator_client):
    """A job that has ended cannot be cancelled: 409, its status stays."""
    done = job(BackfillStatus.SUCCEEDED)

    response = post(operator_client, url(f"/backfills/{done.pk}/cancel"))

    assert response.status_code == 409
    done.refresh_from_db()
    assert done.status == "succeeded"


def test_cancel_of_an_unknown_job_gets_404(operator_client):
    """Cancelling a job id that does not exist answers 404."""
    assert post(operator_client, url("/backfills/999999/cancel")).status_code == 404
