"""Operator actions in the browser: force release, a stale force takeover, and refusals."""

from __future__ import annotations

import re

from playwright.sync_api import expect

from claims.models import ClaimEvent, WorkflowClaim

from . import scene


def open_workflow(page, workflow_id):
    page.goto(f"/workflows/{workflow_id}/")
    expect(page.locator("h1")).to_have_text(workflow_id)


def test_force_release_moves_the_epoch_and_the_page_shows_it(page, operator, sign_in):
    fleet = scene.small_fleet()
    sign_in(operator)
    open_workflow(page, fleet.workflow_id)
    epoch_shown = page.locator("#workflow-summary .facts dd strong").first
    expect(epoch_shown).to_have_text("41")

    page.get_by_role("link", name="Force release…").click()
    panel = page.locator("#action-panel")
    expect(panel.locator(".confirm__effect")).to_contain_text(
        f"epoch 41 → 42, no holder; engine {fleet.holder} is deposed on its next write"
    )
    panel.get_by_label(re.compile("^Reason")).fill("INC-2291: holder wedged on a payment call")
    panel.get_by_role("button", name="Confirm force release at epoch 41").click()

    expect(panel.get_by_role("status")).to_contain_text(
        f"Released: epoch 41 → 42; engine {fleet.holder} is deposed on its next write"
    )
    # The summary fragment refreshes on the claimChanged event, without a reload.
    expect(epoch_shown).to_have_text("42")
    expect(page.locator("#workflow-summary")).to_contain_text("ownerless")
    claim = WorkflowClaim.objects.get(workflow_id=fleet.workflow_id)
    assert (claim.epoch, claim.holder_engine_id) == (42, None)
    event = ClaimEvent.objects.get(workflow_id=fleet.workflow_id, kind="forced_release")
    assert (event.epoch_before, event.epoch_after, event.actor) == (41, 42, "alice")
    assert event.reason == "INC-2291: holder wedged on a payment call"


def test_stale_force_takeover_answers_409_with_the_fresh_state(
    page, operator, sign_in, sent_messages
):
    fleet = scene.small_fleet()
    sign_in(operator)
    open_workflow(page, fleet.workflow_id)
    page.get_by_role("link", name="Force takeover…").click()
    panel = page.locator("#action-panel")
    panel.get_by_label("Give the claim to").select_option(scene.OTHER)
    panel.get_by_label(re.compile("^Reason")).fill("move it off the wedged engine")

    # Behind the form's back, another engine takes the claim over: epoch 41 → 42.
    assert scene.move_claim(fleet.workflow_id, to_engine=scene.THIRD) == 42
    with page.expect_response(re.compile(r"/takeover/")) as answer:
        panel.get_by_role("button", name="Confirm force takeover at epoch 41").click()

    assert answer.value.status == 409
    warning = panel.get_by_role("alert")
    expect(warning).to_contain_text("The claim changed since you looked.")
    expect(warning).to_contain_text(
        f"You saw epoch 41; it is now at epoch 42, held by {scene.THIRD}"
    )
    expect(panel.locator(".facts")).to_contain_text(f"epoch 42, held by {scene.THIRD}")
    # A fresh form, on the fresh epoch, keeping what the operator typed.
    expect(panel.get_by_role("button", name="Confirm force takeover at epoch 42")).to_be_enabled()
    expect(panel.get_by_label(re.compile("^Reason"))).to_have_value("move it off the wedged engine")
    claim = WorkflowClaim.objects.get(workflow_id=fleet.workflow_id)
    assert (claim.epoch, claim.holder_engine_id) == (42, scene.THIRD)
    assert not ClaimEvent.objects.filter(kind="forced_takeover").exists()
    assert sent_messages == []


def test_user_without_the_permission_sees_the_actions_disabled_with_the_reason(
    page, viewer, sign_in
):
    fleet = scene.small_fleet()
    sign_in(viewer)
    reason = "you need the permission claims.force_claim"

    open_workflow(page, fleet.workflow_id)
    for name in ("Force release…", "Force takeover…"):
        button = page.get_by_role("button", name=name)
        expect(button).to_be_disabled()
        expect(button).to_have_attribute("title", reason)
    expect(page.get_by_role("link", name=re.compile("^Force"))).to_have_count(0)
    expect(page.locator(".refusal").first).to_have_text(f"Claim actions: {reason}.")

    page.goto("/claims/")
    expect(page.locator(".refusal")).to_have_text(f"Row actions are disabled: {reason}.")
    row = page.locator("tr", has=page.get_by_role("link", name=fleet.workflow_id, exact=True))
    for name in ("Release", "Take over"):
        button = row.get_by_role("button", name=name)
        expect(button).to_be_disabled()
        expect(button).to_have_attribute("title", reason)


def test_read_only_mode_disables_the_actions_with_its_reason(page, operator, sign_in, settings):
    settings.WEFTBOARD_READ_ONLY = "database failover in progress"
    fleet = scene.small_fleet()
    sign_in(operator)
    reason = "weftboard is in read-only mode: database failover in progress"

    open_workflow(page, fleet.workflow_id)

    for name in ("Force release…", "Force takeover…", "Cancel workflow…"):
        button = page.get_by_role("button", name=name)
        expect(button).to_be_disabled()
        expect(button).to_have_attribute("title", reason)
    expect(page.locator(".refusal").first).to_have_text(f"Claim actions: {reason}.")
