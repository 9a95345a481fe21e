"""Suspend and resume from the workflow page: the confirmation of cancel (reason, the epoch
seen, the permission), a compare-and-swap on that epoch, 409 with the fresh state."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from claims.models import ClaimEvent, Workflow, WorkflowClaim, WorkflowStatus

from .conftest import htmx, make_claim, make_workflow

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def world():
    make_workflow("wf-1")
    make_claim("wf-1", epoch=41, engine="e-7f3")


def claim() -> tuple[int, str | None]:
    row = WorkflowClaim.objects.get(workflow_id="wf-1")
    return row.epoch, row.holder_engine_id


def status() -> str:
    return Workflow.objects.get(workflow_id="wf-1").status


def suspended_at(epoch: int) -> None:
    Workflow.objects.filter(workflow_id="wf-1").update(status=WorkflowStatus.SUSPENDED)
    WorkflowClaim.objects.filter(workflow_id="wf-1").update(
        epoch=epoch,
        holder_engine_id=None,
        holder_epoch=None,
        holder_expires_at_ms=None,
        holder_claimed_at_ms=None,
    )


def post(client: Client, action: str, *, reason: str, expected_epoch: str) -> Any:
    """The form of ``action`` (suspend, resume) on wf-1, posted."""
    return client.post(f"/{action}/wf-1", {"reason": reason, "expected_epoch": expected_epoch})


def test_a_running_workflow_offers_suspend_not_resume(operator_client):
    html = operator_client.get("/workflows/wf-1/").content.decode()

    assert 'href="/suspend/wf-1"' in html
    assert "Suspend workflow…" in html
    assert "/resume/wf-1" not in html


def test_a_suspended_workflow_offers_resume_and_cancel(operator_client):
    suspended_at(42)

    html = operator_client.get("/workflows/wf-1/").content.decode()

    assert 'href="/resume/wf-1"' in html
    assert 'href="/cancel/wf-1"' in html
    assert "/suspend/wf-1" not in html


def test_the_suspend_confirmation_names_the_effect_and_carries_the_epoch(operator_client):
    html = operator_client.get("/suspend/wf-1").content.decode()

    assert "status running → suspended; epoch 41 → 42, no holder" in html
    assert "engine e-7f3 is deposed on its next write" in html
    assert 'name="expected_epoch" value="41"' in html
    assert 'action="/suspend/wf-1"' in html
    assert 'name="reason"' in html


def test_suspend_deposes_the_holder_and_records_the_actor(operator_client):
    response = post(operator_client, "suspend", reason="INC-9", expected_epoch="41")

    assert response.status_code == 303
    assert response["Location"] == "/workflows/wf-1/"
    assert status() == "suspended"
    assert claim() == (42, None)
    event = ClaimEvent.objects.get(workflow_id="wf-1", kind="rotated")
    assert (event.actor, event.reason) == ("alice", "INC-9")


def test_suspend_over_htmx_answers_in_place(operator_client):
    response = operator_client.post(
        "/suspend/wf-1", {"reason": "INC-9", "expected_epoch": "41"}, **htmx("action-panel")
    )

    assert response.status_code == 200
    assert "Suspended; its claim moved to the next epoch with no holder; engine e-7f3" in (
        response.content.decode()
    )
    assert "claimChanged" in response["HX-Trigger"]


def test_resume_makes_it_running_and_ownerless(operator_client):
    suspended_at(42)

    confirm = operator_client.get("/resume/wf-1").content.decode()
    response = post(operator_client, "resume", reason="fixed", expected_epoch="42")

    assert "status suspended → running; epoch 42 → 43, no holder" in confirm
    assert response.status_code == 303
    assert status() == "running"
    assert claim() == (43, None)
    event = ClaimEvent.objects.get(workflow_id="wf-1", kind="rotated")
    assert (event.actor, event.reason) == ("alice", "fixed")


@pytest.fixture(params=["suspend", "resume"])
def action_it_awaits(request: pytest.FixtureRequest) -> str:
    """Suspend, or resume with wf-1 first suspended: each with wf-1 in the status it applies
    to, the claim at epoch 41."""
    if request.param == "resume":
        suspended_at(41)
    return str(request.param)


def test_an_epoch_that_moved_is_a_409_with_the_fresh_state(operator_client, action_it_awaits):
    before = status()

    response = post(operator_client, action_it_awaits, reason="x", expected_epoch="40")

    assert response.status_code == 409
    assert "The claim changed since you looked" in response.content.decode()
    assert 'name="expected_epoch" value="41"' in response.content.decode()
    assert (status(), claim()[0]) == (before, 41)


@pytest.mark.parametrize(
    ("action", "wrong", "message"),
    [
        ("suspend", "suspended", "only a running workflow can be suspended"),
        ("suspend", "completed", "only a running workflow can be suspended"),
        ("resume", "running", "only a suspended workflow can be resumed"),
    ],
)
def test_the_wrong_status_is_a_409_that_says_why(operator_client, action, wrong, message):
    Workflow.objects.filter(workflow_id="wf-1").update(status=wrong)

    response = post(operator_client, action, reason="x", expected_epoch="41")

    assert response.status_code == 409
    assert f"the workflow is {wrong}: {message}" in response.content.decode()
    assert claim()[0] == 41


def test_missing_reason_is_a_400_and_changes_nothing(operator_client, action_it_awaits):
    before = status()

    response = post(operator_client, action_it_awaits, reason=" ", expected_epoch="41")

    assert response.status_code == 400
    assert (status(), claim()[0]) == (before, 41)


def test_suspend_and_resume_need_their_own_permission(signed_in_as):
    """claims.cancel_workflow does not grant them; the button is disabled with the reason."""
    client = signed_in_as("bob", "force_claim", "cancel_workflow")

    page = client.get("/workflows/wf-1/").content.decode()
    response = post(client, "suspend", reason="x", expected_epoch="41")

    assert 'disabled title="you need the permission claims.suspend_workflow">Suspend' in page
    assert "Suspend and resume: you need the permission claims.suspend_workflow." in page
    assert response.status_code == 403
    assert "claims.suspend_workflow" in response.content.decode()
    assert status() == "running"


def test_read_only_mode_refuses_suspend_and_resume(operator_client, settings):
    settings.WEFTBOARD_READ_ONLY = "database migration"

    response = post(operator_client, "suspend", reason="x", expected_epoch="41")

    assert response.status_code == 403
    assert "read-only mode: database migration" in response.content.decode()
    assert status() == "running"


def test_a_suspended_workflow_offers_no_takeover_and_refuses_one(operator_client, adopt_send):
    """No engine drives a suspended workflow: a forced takeover would only grow the epoch."""
    suspended_at(42)
    form = {"expected_epoch": "42", "target_engine_id": "e-7f3", "reason": "x"}

    response = operator_client.post("/takeover/wf-1", form)

    assert response.status_code == 409
    assert "the workflow is suspended: no engine needs to drive it" in response.content.decode()
    assert claim() == (42, None)
    adopt_send.assert_not_called()
