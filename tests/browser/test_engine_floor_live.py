"""A page left open says "No engine is running" within one refresh once the last engine
stops, and drops the alert once one runs again, without a reload."""

from __future__ import annotations

from typing import Any

from playwright.sync_api import expect

from claims.models import Engine, EngineStatus

from . import scene
from .conftest import mark_document, set_refresh_interval, still_same_document
from .pages import MainPage, visit

AUDIT = MainPage("audit-floor", "/audit/", "Audit log")


def test_the_floor_alert_comes_and_goes_while_the_page_stays(
    page: Any, operator: Any, sign_in: Any
) -> None:
    scene.make_engine("e-only")
    sign_in(operator)
    visit(page, AUDIT)
    mark_document(page)
    set_refresh_interval(page)
    alert = page.locator("#engine-floor-alert [role=alert]")
    expect(alert).to_have_count(0)

    Engine.objects.filter(engine_id="e-only").update(status=EngineStatus.STOPPED)
    expect(alert).to_contain_text("No engine is running", timeout=10_000)

    Engine.objects.filter(engine_id="e-only").update(status=EngineStatus.ACTIVE)
    expect(alert).to_have_count(0, timeout=10_000)
    assert still_same_document(page)
