"""A visibility backfill scheduled from the admin, its progress bars followed live to 100 %."""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from django.db import connections
from playwright.sync_api import expect

from claims.backfill import backfill_run
from claims.backfill.runner import BackfillHooks
from claims.models import BackfillJob, VisibilityWatermark, Workflow, WorkflowVisibility

from . import scene
from .conftest import mark_document, set_refresh_interval, still_same_document

WORKFLOWS = 120
BATCH = 20  # six batches
GATE_TIMEOUT_S = 30


class Runner:
    """Stands in for the Celery worker: runs the task body on its own thread (and its own
    database connection), one batch per permit, so the test decides when progress happens."""

    def __init__(self) -> None:
        self.gate = threading.Semaphore(0)
        self.threads: list[threading.Thread] = []
        self.results: list[Any] = []

    def enqueue(self, job_id: int, eta: Any) -> None:
        thread = threading.Thread(target=self._run, args=(job_id,), name=f"backfill-{job_id}")
        self.threads.append(thread)
        thread.start()

    def _run(self, job_id: int) -> None:
        try:
            # The pause the runner takes between batches becomes the test's gate.
            hooks = BackfillHooks(between_batches=self.between_batches)
            self.results.append(backfill_run(job_id, batch_size=BATCH, hooks=hooks))
        finally:
            connections.close_all()

    def between_batches(self, batch_seconds: float) -> None:
        self.gate.acquire(timeout=GATE_TIMEOUT_S)

    def allow(self, batches: int) -> None:
        for _ in range(batches):
            self.gate.release()

    def finish(self) -> None:
        self.allow(1_000)
        for thread in self.threads:
            thread.join(timeout=GATE_TIMEOUT_S)


@pytest.fixture
def runner(monkeypatch: pytest.MonkeyPatch) -> Iterator[Runner]:
    runner = Runner()
    monkeypatch.setattr("claims.services.backfills._enqueue", runner.enqueue)
    try:
        yield runner
    finally:
        runner.finish()


def percent(value: int) -> re.Pattern[str]:
    """aria-valuenow as the page writes it: 50 or 50.0."""
    return re.compile(rf"^{value}(\.0+)?$")


def unindexed_workflows(count: int) -> None:
    now = scene.now_ms()
    Workflow.objects.bulk_create(
        Workflow(
            workflow_id=f"imported-{n:05d}",
            workflow_type="order",
            status="running" if n % 3 else "completed",
            state={"input": {}},
            created_at_ms=now - 86_400_000,
            updated_at_ms=now - 86_400_000,
        )
        for n in range(count)
    )


def test_backfill_scheduled_in_the_admin_shows_live_progress_to_100(
    page, operator, sign_in, runner
):
    unindexed_workflows(WORKFLOWS)
    sign_in(operator)
    page.goto("/admin/claims/backfilljob/")
    page.get_by_role("link", name="Schedule visibility backfill").click()
    expect(page.locator("#content-main")).to_contain_text(f"all {WORKFLOWS} workflows")
    page.get_by_role("button", name="Schedule backfill").click()

    expect(page.locator(".messagelist")).to_contain_text("Visibility backfill #")
    job = BackfillJob.objects.get()
    bar = page.locator(f'progress[data-backfill-job="{job.pk}"]')
    expect(bar).to_be_visible()
    mark_document(page)

    # The admin's bar follows the job while it runs (it polls every 2 s, no reload).
    runner.allow(2)  # batches 2 and 3 of 6: 60 of 120 rows
    expect(bar).to_have_attribute("value", "50")
    expect(page.locator(f'[data-backfill-label="{job.pk}"]')).to_have_text("50% · 60 / 120")
    assert still_same_document(page)

    # So does the Backfills page's HTMX fragment, up to the end.
    page.goto("/backfills/")
    set_refresh_interval(page, "2")
    progress = page.get_by_role("progressbar", name=f"Backfill {job.pk} progress")
    expect(progress).to_have_attribute("aria-valuenow", percent(50))
    mark_document(page)
    runner.allow(10)
    expect(progress).to_have_attribute("aria-valuenow", percent(100))
    row = page.locator("tr", has=progress)
    expect(row.locator(".badge")).to_have_text("succeeded")
    expect(row).to_contain_text(f"{WORKFLOWS} / {WORKFLOWS}")
    expect(page.locator("#backfills-live .notice")).to_contain_text("Visibility index trusted")
    assert still_same_document(page)

    runner.finish()
    assert [job.status for job in runner.results] == ["succeeded"]
    assert WorkflowVisibility.objects.count() == WORKFLOWS
    assert VisibilityWatermark.objects.get().version == 1
