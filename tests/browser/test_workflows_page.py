"""The workflows page's filters and counts, and a failed workflow's Failure panel, in
Chromium with axe-core: the failure is the one the runtime recorded at its terminal write."""

from __future__ import annotations

import re

from playwright.sync_api import expect

from claims.fleet_clock import fleet_clock
from claims.protocol import ClaimRegistry, ClaimTiming
from claims.runtime import WorkflowContext, WorkflowDriver, workflow
from claims.services.workflows import workflow_start
from claims.store import OrmClaimStore

from . import scene
from .pages import SERIOUS, axe_violations, describe

ENGINE = "e-fail-1"


class CardDeclinedError(Exception):
    pass


def _charge() -> None:
    raise CardDeclinedError("card declined: insufficient funds")


@workflow("browser-test-failing")
def failing(ctx: WorkflowContext) -> None:
    ctx.step("reserve", lambda: {"reserved": True})
    ctx.step("charge", _charge)


def failed_by_the_runtime() -> str:
    """A workflow that an engine drove until a step raised; its id."""
    clock = fleet_clock()
    timing = ClaimTiming(ttl_ms=scene.TTL_MS, renew_interval_ms=scene.RENEW_MS)
    registry = ClaimRegistry(OrmClaimStore(), engine_id=ENGINE, clock=clock, timing=timing)
    started = workflow_start(
        workflow_type="browser-test-failing", workflow_id="order-failed-1", engine_id=ENGINE
    )
    assert registry.adopt(started.workflow_id, 1).status == "adopted"
    assert WorkflowDriver(registry, clock=clock).drive(started.workflow_id) == "failed"
    return started.workflow_id


def assert_accessible(page, axe_source) -> None:
    serious = [v for v in axe_violations(page, axe_source) if v["impact"] in SERIOUS]
    assert not serious, describe(serious)


def open_page(page, path: str) -> None:
    page.goto(path, wait_until="load")
    page.wait_for_function(
        "() => window.htmx !== undefined && !document.getElementById('refresh-interval').hidden"
    )


def test_workflows_page_filters_by_status_and_type_in_the_url(page, operator, sign_in, axe_source):
    scene.make_workflow("order-run-1")
    scene.make_workflow("order-done-1", status="completed")
    scene.make_workflow("ledger-done-1", status="completed", workflow_type="ledger")
    failed = failed_by_the_runtime()
    sign_in(operator)
    open_page(page, "/workflows/")
    table = page.locator("#workflows-live")
    expect(table.get_by_role("link", name=failed, exact=True)).to_be_visible()
    expect(table.locator('[data-count="all"]')).to_have_text("4")
    expect(table.locator('[data-count="completed"]')).to_have_text("2")
    assert_accessible(page, axe_source)

    page.select_option("select[name=status]", "completed")

    expect(page).to_have_url(re.compile(r"status=completed"))
    expect(table.get_by_role("link", name="order-done-1", exact=True)).to_be_visible()
    expect(table.get_by_role("link", name="order-run-1", exact=True)).to_have_count(0)
    expect(table.get_by_role("link", name=failed, exact=True)).to_have_count(0)

    page.fill("input[name=type]", "ledger")
    page.locator("input[name=type]").dispatch_event("change")

    expect(page).to_have_url(re.compile(r"type=ledger"))
    expect(table.get_by_role("link", name="ledger-done-1", exact=True)).to_be_visible()
    expect(table.get_by_role("link", name="order-done-1", exact=True)).to_have_count(0)
    expect(table.locator('[data-count="all"]')).to_have_text("1")

    open_page(page, "/workflows/?status=failed")
    row = page.locator("tr", has=page.get_by_role("link", name=failed, exact=True))
    expect(row).to_contain_text("CardDeclinedError in charge")
    row.get_by_role("link", name=failed, exact=True).click()
    expect(page.locator("h1")).to_have_text(failed)


def test_a_failed_workflow_shows_why_in_its_failure_panel(page, operator, sign_in, axe_source):
    failed = failed_by_the_runtime()
    sign_in(operator)

    open_page(page, f"/workflows/{failed}/")

    panel = page.get_by_role("region", name="Failure")
    expect(panel).to_be_visible()
    expect(panel.locator('[data-failure="type"]')).to_have_text("CardDeclinedError")
    expect(panel.locator('[data-failure="message"]')).to_have_text(
        "card declined: insufficient funds"
    )
    expect(panel.locator('[data-failure="step"]')).to_have_text("charge")
    expect(panel.locator('[data-failure="epoch"]')).to_have_text("1")
    expect(panel.get_by_role("link", name=ENGINE)).to_be_visible()
    traceback = panel.get_by_label("Traceback")
    expect(traceback).to_contain_text("Traceback (most recent call last)")
    expect(traceback).to_contain_text("in _charge")
    history = page.locator("#workflow-history")
    expect(history.get_by_role("table", name="Drives", exact=True)).to_contain_text(ENGINE)
    expect(history.get_by_role("table", name="Step retries and pending re-drives")).to_contain_text(
        "CardDeclinedError: card declined"
    )
    assert_accessible(page, axe_source)
