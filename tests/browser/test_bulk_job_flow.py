"""A bulk job from start to end in the browser: a query on the claims list, "Act on all…",
the preview, the confirmation with a reason and the typed count, the run (the task body,
here in the test), the job page's progress reaching done, and its items by outcome."""

from __future__ import annotations

import re
from contextlib import nullcontext
from typing import Any

import pytest
from playwright.sync_api import expect

from claims.bulk import BulkHooks, bulk_run
from claims.models import BulkJob, ClaimEvent, WorkflowClaim

from . import scene
from .conftest import OPERATOR_PERMISSIONS, _user
from .pages import SERIOUS, axe_violations, describe
from .test_screenshots import screenshot_folder

ENGINE = "e-b01"
# Above 100 workflows the operator types the count to confirm.
COUNT = 102
WORKFLOWS = [f"order-{n:03d}" for n in range(COUNT)]
MOVED = "order-007"  # taken over by another engine between the confirmation and the run
# The Celery worker's run, in the test's thread: no pause between chunks, no shared lease.
RUN_HERE = BulkHooks(between_chunks=lambda *args: None, lease=lambda: nullcontext(True))


@pytest.fixture
def fleet() -> None:
    scene.make_engine(ENGINE, held=COUNT)
    scene.make_engine(scene.OTHER)
    for n, workflow_id in enumerate(WORKFLOWS):
        scene.make_workflow(workflow_id)
        scene.make_claim(workflow_id, epoch=10 + n % 5, engine=ENGINE)


@pytest.fixture
def bulk_operator(django_user_model: Any) -> Any:
    return _user(django_user_model, "bea", (*OPERATOR_PERMISSIONS, "bulk_operate"))


@pytest.fixture
def sent_runs(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The broker boundary: the job's run is recorded; the test runs it."""
    sent: list[int] = []
    monkeypatch.setattr("claims.services.bulk._start_run", sent.append)
    return sent


def assert_accessible(page: Any, axe_source: str) -> None:
    serious = [v for v in axe_violations(page, axe_source) if v["impact"] in SERIOUS]
    assert not serious, describe(serious)


def test_a_bulk_release_from_the_claims_list_to_its_items(
    page, bulk_operator, sign_in, fleet, sent_runs, axe_source
):
    sign_in(bulk_operator)
    page.goto(f"/claims/?query=engine+%3D+%22{ENGINE}%22")
    page.get_by_role("link", name="Act on all…").click()

    expect(page).to_have_url(re.compile(r"/bulk/new\?"))
    page.locator("#bulk-pick select[name=action]").select_option("release")
    page.get_by_role("button", name="Preview").click()
    expect(page.locator("#preview-count")).to_have_text(str(COUNT))
    expect(page.locator("#bulk-preview tbody tr")).to_have_count(20)
    assert_accessible(page, axe_source)

    page.get_by_label(re.compile("^Reason")).fill("INC-4411: engine b01 is wedged")
    page.get_by_label(re.compile("^Type the number")).fill(str(COUNT))
    page.get_by_role("button", name=f"Start the bulk release of {COUNT} workflows").click()

    expect(page).to_have_url(re.compile(r"/bulk/\d+/$"))
    job = BulkJob.objects.get()
    assert page.url.endswith(f"/bulk/{job.pk}/")
    assert (job.frozen_count, job.reason) == (COUNT, "INC-4411: engine b01 is wedged")
    assert sent_runs == [job.pk]

    # Between the freeze and the run another engine takes one workflow over.
    assert scene.move_claim(MOVED, to_engine=scene.OTHER) > 0
    assert bulk_run(job.pk, hooks=RUN_HERE).status == "done"

    page.reload()
    live = page.locator("#bulk-job-live")
    expect(live).to_contain_text("done")
    expect(live).to_contain_text("100")
    assert_accessible(page, axe_source)
    folder = screenshot_folder()
    folder.mkdir(parents=True, exist_ok=True)
    # The top of the page (the progress, the counts, the first items): the README's picture.
    page.screenshot(path=str(folder / "bulk-job.png"))

    page.get_by_role("link", name=re.compile("^Next page")).click()
    expect(page.locator("#bulk-items tbody tr")).to_have_count(COUNT - 100)

    page.get_by_role("navigation", name="Filter items by outcome").get_by_role(
        "link", name="moved"
    ).click()
    rows = page.locator("#bulk-items tbody tr")
    expect(rows).to_have_count(1)
    expect(rows).to_contain_text(MOVED)
    expect(page).to_have_url(re.compile(r"outcome=moved"))

    held = WorkflowClaim.objects.exclude(holder_engine_id=None)
    assert list(held.values_list("workflow_id", "holder_engine_id")) == [(MOVED, scene.OTHER)]
    events = ClaimEvent.objects.filter(bulk_job_id=job.pk)
    assert events.count() == COUNT - 1
