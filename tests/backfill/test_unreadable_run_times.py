"""A backfill stored with a run time past year 9999 (possible on PostgreSQL before the
time rule) is cancelled by migration 0020, and the pages and the API read again."""

from __future__ import annotations

import importlib

import pytest
from django.db import DataError, connection

from claims.models import BackfillJob, BackfillStatus

pytestmark = pytest.mark.django_db

repair = importlib.import_module("claims.migrations.0020_backfill_run_times_in_range")


@pytest.fixture
def unreadable_job() -> int:
    if connection.vendor != "postgresql":
        pytest.skip("only PostgreSQL could store a timestamp past year 9999")
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO claims_backfilljob (kind, status, run_at, cursor, processed, inserted,"
            " fixed, conflicts, error, requested_by) VALUES ('visibility', 'scheduled',"
            " '10000-01-01 13:59:59+00', NULL, 0, 0, 0, 0, '', 'api') RETURNING id"
        )
        return int(cursor.fetchone()[0])


def test_the_repair_cancels_it_and_every_reader_reads_again(unreadable_job, admin_client):
    with pytest.raises(DataError, match="after year 10K"):  # what the repair is for
        BackfillJob.objects.get(pk=unreadable_job)

    with connection.schema_editor() as editor:
        repair.cancel_unreadable_runs(None, editor)

    job = BackfillJob.objects.get(pk=unreadable_job)
    assert job.status == BackfillStatus.CANCELLED
    assert job.run_at.year == 9999
    assert "past year 9999" in job.error
    assert admin_client.get("/backfills/").status_code == 200
    assert admin_client.get(f"/api/v1/backfills/{unreadable_job}").status_code == 200
    assert (
        admin_client.post("/api/v1/backfills", {}, content_type="application/json").status_code
        == 201
    )


def test_the_repair_leaves_readable_jobs_alone(unreadable_job):
    readable = BackfillJob.objects.create(
        status=BackfillStatus.SUCCEEDED, run_at="2026-12-04T10:00Z"
    )

    with connection.schema_editor() as editor:
        repair.cancel_unreadable_runs(None, editor)

    readable.refresh_from_db()
    assert readable.status == BackfillStatus.SUCCEEDED
    assert readable.run_at.year == 2026
