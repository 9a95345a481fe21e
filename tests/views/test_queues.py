"""Pending re-drives and visibility backfills."""

from __future__ import annotations

import datetime as dt

import pytest

from claims.models import BackfillJob, PendingRedrive, VisibilityWatermark

from .conftest import TTL_MS, htmx, now_ms

pytestmark = pytest.mark.django_db


def redrive(workflow_id: str, *, age_ms: int, engine: str = "e-1") -> PendingRedrive:
    now = now_ms()
    return PendingRedrive.objects.create(
        engine_id=engine,
        workflow_id=workflow_id,
        epoch=2,
        attempts=3,
        last_error="ConnectionError: ledger down",
        first_failed_at_ms=now - age_ms,
        last_failed_at_ms=now,
    )


def test_redrives_oldest_first_with_ageing_flag(operator_client):
    """The oldest re-drive comes first; one pending longer than the TTL is flagged."""
    redrive("wf-new", age_ms=1_000)
    redrive("wf-old", age_ms=TTL_MS + 1_000)

    html = operator_client.get("/redrives/", **htmx()).content.decode()

    assert html.index("/workflows/wf-old/") < html.index("/workflows/wf-new/")
    assert "1 older than the TTL" in html
    assert "ledger down" in html


def test_redrives_filter_by_engine(operator_client):
    """?engine= narrows the list to one engine."""
    redrive("wf-a", age_ms=1, engine="e-1")
    redrive("wf-b", age_ms=1, engine="e-2")

    html = operator_client.get("/redrives/?engine=e-2", **htmx()).content.decode()

    assert "/workflows/wf-b/" in html
    assert "/workflows/wf-a/" not in html


@pytest.mark.parametrize("rows", [3, 30])
def test_redrives_query_count_is_fixed(operator_client, rows, django_assert_num_queries):
    """Totals, the page and the engines' names: three reads whatever the number of re-drives."""
    for n in range(rows):
        redrive(f"wf-{n}", age_ms=n)

    with django_assert_num_queries(5):
        operator_client.get("/redrives/", **htmx())


def job(status: str, processed: int, total: int | None) -> BackfillJob:
    return BackfillJob.objects.create(
        status=status,
        run_at=dt.datetime(2025, 1, 1, tzinfo=dt.UTC),
        processed=processed,
        total_estimate=total,
        requested_by="alice",
    )


def test_backfills_show_progress_bars_and_poll_while_active(operator_client):
    """An active job's bar shows processed / estimate, and the list keeps polling."""
    job("succeeded", 1000, 1000)
    job("running", 250, 1000)

    html = operator_client.get("/backfills/", **htmx()).content.decode()

    assert 'aria-valuenow="25.0"' in html
    assert "250 / 1000" in html
    assert 'aria-valuenow="100.0"' in html
    assert "data-live" in html
    assert "Refreshing while a job is active" in html


def test_backfills_stop_polling_when_nothing_is_active(operator_client):
    """With every job finished the fragment comes back without its poll trigger."""
    job("failed", 10, 1000)

    html = operator_client.get("/backfills/", **htmx()).content.decode()

    assert "data-live" not in html
    assert "hx-trigger" not in html


def test_backfills_show_the_watermark_and_link_to_the_admin(operator, operator_client):
    """The page says whether the index is trusted and links a job to its admin page."""
    VisibilityWatermark.objects.create(version=2, built_at_ms=now_ms())
    created = job("succeeded", 5, 5)

    html = operator_client.get("/backfills/").content.decode()

    assert "watermark v2" in html
    assert f'href="/admin/claims/backfilljob/{created.pk}/change/"' in html


@pytest.mark.parametrize("rows", [3, 30])
def test_backfills_query_count_is_fixed(operator_client, rows, django_assert_num_queries):
    """Jobs and the watermark: two reads (plus the permission lookups of the header)."""
    for _ in range(rows):
        job("failed", 1, 2)

    with django_assert_num_queries(4):
        operator_client.get("/backfills/", **htmx())
