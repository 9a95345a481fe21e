"""Every link and form built from a workflow id leads to that workflow and nowhere else, in
a real browser, which resolves "." and ".." segments (escaped or not) before it sends.

The ids are written straight into the tables, as a bulk import would: "." and ".." are
refused at creation, but a row another program wrote must still be reachable."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from claims.models import Workflow, WorkflowClaim, WorkflowStatus

from . import scene

HOSTILE_IDS = (
    "..",
    ".",
    "../../admin/auth/user/add/",
    "a/./b/../c",
    "~..",
    "x?y#z&q=1",
    "50%2F%2e%2e",
    "back\\slash/..\\..",
    "sp ace/",
)
# The ids every action is taken on, through its form.
ACTED_ON = ("..", "../../admin/auth/user/add/", "x?y#z&q=1")


def hostile_fleet() -> None:
    for engine_id in scene.LIVE_ENGINES:
        scene.make_engine(engine_id)
    for workflow_id in HOSTILE_IDS:
        scene.make_workflow(workflow_id, state={"input": {}, "steps": {}})
        scene.make_claim(workflow_id, epoch=3, engine=scene.HOLDER)


def open_from_the_list(page, workflow_id):
    page.goto("/workflows/?sort=id")
    page.get_by_role("link", name=workflow_id, exact=True).click()
    expect(page.locator("h1")).to_have_text(workflow_id)


def act(page, link, *, engine=None):
    page.get_by_role("link", name=link).click()
    panel = page.locator("#action-panel")
    if engine is not None:
        panel.get_by_label("Give the claim to").select_option(engine)
    panel.get_by_label(re.compile("^Reason")).fill("checking hostile ids")
    panel.get_by_role("button", name=re.compile("^Confirm")).click()
    expect(panel.get_by_role("status")).to_be_visible()


def test_every_hostile_id_links_to_its_own_page(page, operator, sign_in):
    hostile_fleet()
    sign_in(operator)

    for workflow_id in HOSTILE_IDS:
        open_from_the_list(page, workflow_id)
        expect(page.locator("#workflow-summary")).to_contain_text("Epoch3")


@pytest.mark.parametrize("workflow_id", ACTED_ON)
def test_every_action_form_acts_on_the_hostile_id_it_was_opened_for(
    page, operator, sign_in, sent_messages, workflow_id
):
    hostile_fleet()
    sign_in(operator)
    open_from_the_list(page, workflow_id)

    act(page, "Force release…")
    assert WorkflowClaim.objects.get(workflow_id=workflow_id).holder_engine_id is None

    page.reload()
    act(page, "Force takeover…", engine=scene.OTHER)
    assert WorkflowClaim.objects.get(workflow_id=workflow_id).holder_engine_id == scene.OTHER

    page.reload()
    act(page, "Suspend workflow…")
    assert Workflow.objects.get(workflow_id=workflow_id).status == WorkflowStatus.SUSPENDED

    page.reload()
    act(page, "Resume workflow…")
    assert Workflow.objects.get(workflow_id=workflow_id).status == WorkflowStatus.RUNNING

    page.reload()
    act(page, "Cancel workflow…")
    assert Workflow.objects.get(workflow_id=workflow_id).status == WorkflowStatus.CANCELLED
    # Nothing else was touched: every other hostile workflow still runs under its holder.
    others = Workflow.objects.exclude(workflow_id=workflow_id)
    assert set(others.values_list("status", flat=True)) == {WorkflowStatus.RUNNING}
    assert (
        WorkflowClaim.objects.exclude(workflow_id=workflow_id).filter(epoch=3).count()
        == len(HOSTILE_IDS) - 1
    )
    # The back link of the last form still leads to this workflow.
    page.get_by_role("link", name="Open the workflow").click()
    expect(page.locator("h1")).to_have_text(workflow_id)


def test_the_jump_box_opens_a_dot_segment_id(page, operator, sign_in):
    hostile_fleet()
    sign_in(operator)

    page.goto("/claims/")
    page.locator("input[name=jump]").fill("..")
    page.locator("input[name=jump]").press("Enter")

    expect(page.locator("h1")).to_have_text("..")
