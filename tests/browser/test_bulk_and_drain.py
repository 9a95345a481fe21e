"""Actions on a whole engine in the browser: release every claim of a silent engine while
one of them moves on (its row answers 409), and drain then undrain a live engine; each
page passes axe-core."""

from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.sync_api import expect

from claims.models import ClaimEvent, Engine, EngineEvent, WorkflowClaim

from . import scene
from .conftest import OPERATOR_PERMISSIONS, _user
from .pages import SERIOUS, axe_violations, describe

SILENT = "e-5ad"
HELD = ("order-001", "order-002", "order-003")


@pytest.fixture
def fleet() -> None:
    scene.make_engine(SILENT, heartbeat_ago_ms=120_000, held=3)
    scene.make_engine(scene.OTHER)
    for n, workflow_id in enumerate(HELD):
        scene.make_workflow(workflow_id)
        scene.make_claim(workflow_id, epoch=10 + n, engine=SILENT, expires_in_ms=-60_000)


@pytest.fixture
def drainer(django_user_model: Any) -> Any:
    return _user(django_user_model, "dana", (*OPERATOR_PERMISSIONS, "drain_engine"))


@pytest.fixture
def drain_messages(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, Any]]:
    """The broker boundary for claims.drain / claims.undrain: recorded, never sent."""
    sent: list[tuple[str, Any]] = []
    for name in ("drain", "undrain"):
        monkeypatch.setattr(
            f"claims.tasks.{name}.apply_async",
            lambda *args, _name=name, **kwargs: sent.append((_name, kwargs.get("queue"))),
        )
    return sent


def assert_accessible(page: Any, axe_source: str) -> None:
    serious = [v for v in axe_violations(page, axe_source) if v["impact"] in SERIOUS]
    assert not serious, describe(serious)


def test_bulk_release_of_a_silent_engine_shows_the_claim_that_moved_on_as_409(
    page, operator, sign_in, fleet, axe_source
):
    sign_in(operator)
    page.goto(f"/engines/{SILENT}/")
    page.get_by_role("link", name="Release all claims of this engine…").click()

    rows = page.locator("#release-claims tbody tr")
    expect(rows).to_have_count(3)
    expect(rows.nth(1)).to_contain_text("11")  # the epoch the operator sees
    assert_accessible(page, axe_source)

    # Behind the confirmation's back, another engine takes order-002 over: 11 → 12.
    assert scene.move_claim("order-002", to_engine=scene.OTHER) == 12
    page.get_by_label(re.compile("^Reason")).fill("INC-3107: engine silent since 09:12")
    page.get_by_role("button", name="Release 3 claims").click()

    expect(page.locator("#result-title")).to_have_text("Result: 2 released, 3 asked")
    moved = page.locator('#release-results tr[data-status="409"]')
    expect(moved).to_have_count(1)
    expect(moved).to_contain_text("order-002")
    expect(moved).to_contain_text("409")
    expect(moved).to_contain_text("moved on: now at epoch 12; left alone")
    expect(page.locator('#release-results tr[data-status="200"]')).to_have_count(2)
    assert_accessible(page, axe_source)

    claims = dict(WorkflowClaim.objects.values_list("workflow_id", "holder_engine_id"))
    assert claims == {"order-001": None, "order-002": scene.OTHER, "order-003": None}
    released = ClaimEvent.objects.filter(kind="forced_release", actor="alice")
    assert sorted(released.values_list("workflow_id", flat=True)) == ["order-001", "order-003"]


def test_drain_shows_progress_on_the_engine_page_and_undrain_puts_it_back(
    page, drainer, sign_in, fleet, axe_source, drain_messages
):
    Engine.objects.filter(engine_id=SILENT).update(heartbeat_at_ms=scene.now_ms())
    sign_in(drainer)
    page.goto(f"/engines/{SILENT}/")
    page.get_by_role("link", name="Drain…").click()
    expect(page.locator(".confirm__effect")).to_contain_text("stops acquiring and taking over")
    assert_accessible(page, axe_source)
    page.get_by_label(re.compile("^Reason")).fill("rolling restart of host 5")
    page.get_by_role("button", name="Confirm drain engine").click()

    expect(page).to_have_url(re.compile(f"/engines/{SILENT}/$"))
    expect(page.locator("#drain-progress")).to_have_text("draining: 3 claims left")
    expect(page.locator("#engine-live")).to_contain_text("rolling restart of host 5")
    assert_accessible(page, axe_source)
    assert drain_messages == [("drain", f"engine.{SILENT}")]

    page.get_by_role("link", name="Undrain…").click()
    page.get_by_label(re.compile("^Reason")).fill("host 5 is back")
    page.get_by_role("button", name="Confirm undrain engine").click()

    expect(page).to_have_url(re.compile(f"/engines/{SILENT}/$"))
    expect(page.locator("#drain-progress")).to_have_count(0)
    expect(page.get_by_role("link", name="Drain…")).to_be_visible()
    assert list(EngineEvent.objects.order_by("id").values_list("kind", "actor")) == [
        ("drain", "dana"),
        ("undrain", "dana"),
    ]
