"""One rule for every operator write, whichever surface asks: the services enforce the
read-only switch, the operator's reason and a registered workflow type, and the API and
the pages only map what they raise (API 422 / page 400 for bad input, 403 for read-only).

No page starts a workflow, so the registered-type rule is asked of the API and the service.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from unittest import mock

import pytest
from django.test import Client

from claims.models import ClaimEvent, Workflow, WorkflowClaim
from claims.protocol.errors import InvalidInputError, WorkflowNotFoundError
from claims.services.backfills import backfill_schedule
from claims.services.claims import claim_force_release, claim_force_takeover_and_notify
from claims.services.errors import ReadOnlyError
from claims.services.workflows import (
    workflow_cancel,
    workflow_resume,
    workflow_start,
    workflow_suspend,
)
from claims.workflow_types import UnknownWorkflowTypeError

from .conftest import EPOCH, WORLD

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures(*WORLD)]

ACTIONS = ("cancel", "suspend", "release", "takeover")
API_PATHS = {
    "cancel": "/cancel",
    "suspend": "/suspend",
    "release": "/claim/release",
    "takeover": "/claim/takeover",
}


def via_api(client: Client, action: str, reason: str) -> Any:
    body: dict[str, Any] = {"expected_epoch": EPOCH, "reason": reason}
    if action == "takeover":
        body["target_engine_id"] = "e-2"
    path = f"/api/v1/workflows/wf-1{API_PATHS[action]}"
    return client.post(path, body, content_type="application/json")


def via_page(client: Client, action: str, reason: str) -> Any:
    form = {"expected_epoch": str(EPOCH), "reason": reason}
    if action == "takeover":
        form["target_engine_id"] = "e-2"
    return client.post(f"/{action}/wf-1", form)


# Each surface: how it asks, and the status it gives bad input.
SURFACES: dict[str, tuple[Callable[[Client, str, str], Any], int]] = {
    "api": (via_api, 422),
    "page": (via_page, 400),
}


def state() -> tuple[Any, ...]:
    claim = WorkflowClaim.objects.get(workflow_id="wf-1")
    status = Workflow.objects.get(workflow_id="wf-1").status
    return claim.epoch, claim.holder_engine_id, status, ClaimEvent.objects.count()


UNCHANGED = (EPOCH, "e-1", "running", 0)


def assert_refused(response: Any, status: int, saying: str) -> None:
    """The write was answered ``status`` with a body naming ``saying``, and changed nothing."""
    assert response.status_code == status, response.content
    assert saying in response.content.decode()
    assert state() == UNCHANGED


# A reason no operator write takes, and what the refusal names: none at all, or one with
# control characters in it.
BAD_REASONS = [
    pytest.param("", "reason", id="missing-empty"),
    pytest.param("   ", "reason", id="missing-spaces"),
    pytest.param("\n\t", "reason", id="missing-whitespace"),
    pytest.param("nul\x00byte", "control characters", id="control-nul"),
    pytest.param("escape \x1b[31mred", "control characters", id="control-escape"),
    pytest.param("bell\x07", "control characters", id="control-bell"),
    pytest.param("del\x7f", "control characters", id="control-del"),
]


@pytest.mark.parametrize("surface", SURFACES)
@pytest.mark.parametrize("action", ACTIONS)
@pytest.mark.parametrize(("reason", "refusal"), BAD_REASONS)
def test_every_surface_refuses_a_missing_reason_or_one_with_control_characters(
    operator_client, surface, action, reason, refusal
):
    send, bad_input = SURFACES[surface]

    assert_refused(send(operator_client, action, reason), bad_input, refusal)


@pytest.mark.parametrize("surface", SURFACES)
@pytest.mark.parametrize("action", ACTIONS)
def test_read_only_refuses_every_action_on_every_surface(
    operator_client, settings, surface, action
):
    settings.WEFTBOARD_READ_ONLY = "database migration"
    send, _ = SURFACES[surface]

    assert_refused(send(operator_client, action, "a good reason"), 403, "database migration")


@pytest.mark.parametrize("action", ACTIONS)
def test_read_only_holds_on_the_api_without_its_early_check(operator_client, settings, action):
    """The API asks early for a quick answer; switch that off and the service still refuses."""
    settings.WEFTBOARD_READ_ONLY = "database migration"

    with mock.patch("claims.api.access.refuse_if_read_only"):
        response = via_api(operator_client, action, "a good reason")

    assert response.status_code == 403, response.content
    assert response.json() == {"detail": "weftboard is in read-only mode: database migration"}
    assert state() == UNCHANGED


@pytest.mark.parametrize("action", ACTIONS)
def test_read_only_holds_on_the_pages_when_switched_on_after_the_form_was_drawn(
    operator_client, settings, action
):
    """The page's own refusal (drawn with the button) is bypassed: the service refuses."""
    settings.WEFTBOARD_READ_ONLY = "database migration"

    with mock.patch("claims.views.actions.action_refusal", return_value=None):
        response = via_page(operator_client, action, "a good reason")

    assert_refused(response, 403, "database migration")


def test_an_unregistered_type_is_refused_by_the_api(operator_client):
    body = {"workflow_type": "no-such-type", "workflow_id": "wf-new"}

    response = operator_client.post("/api/v1/workflows", body, content_type="application/json")

    assert response.status_code == 422, response.content
    assert "no-such-type" in response.json()["detail"]
    assert not Workflow.objects.filter(workflow_id="wf-new").exists()


def test_the_services_refuse_an_unregistered_type_themselves():
    with pytest.raises(UnknownWorkflowTypeError):
        workflow_start(workflow_type="no-such-type", workflow_id="wf-new")
    assert not Workflow.objects.filter(workflow_id="wf-new").exists()


def _cancel(reason: str) -> object:
    return workflow_cancel("wf-1", actor="operator", reason=reason, expected_epoch=EPOCH)


def _suspend(reason: str) -> object:
    return workflow_suspend("wf-1", actor="operator", reason=reason, expected_epoch=EPOCH)


def _release(reason: str) -> object:
    return claim_force_release("wf-1", expected_epoch=EPOCH, actor="operator", reason=reason)


def _takeover(reason: str) -> object:
    return claim_force_takeover_and_notify(
        "wf-1", expected_epoch=EPOCH, target_engine_id="e-2", actor="operator", reason=reason
    )


SERVICES = {"cancel": _cancel, "suspend": _suspend, "release": _release, "takeover": _takeover}


@pytest.mark.parametrize("action", SERVICES)
@pytest.mark.parametrize("reason", ["", "  ", "nul\x00byte", "bell\x07"])
def test_the_services_apply_the_reason_rule_themselves(action, reason):
    """Whatever an interface checked before (the admin, a script), the service checks again."""
    with pytest.raises(InvalidInputError):
        SERVICES[action](reason)
    assert state() == UNCHANGED


@pytest.mark.parametrize("action", SERVICES)
def test_the_services_refuse_writes_while_read_only(settings, action):
    settings.WEFTBOARD_READ_ONLY = "yes"

    with pytest.raises(ReadOnlyError, match="read-only mode"):
        SERVICES[action]("a good reason")
    assert state() == UNCHANGED


def test_starting_resuming_and_scheduling_are_refused_while_read_only(settings):
    settings.WEFTBOARD_READ_ONLY = "yes"

    with pytest.raises(ReadOnlyError):
        workflow_start(workflow_type="order", workflow_id="wf-new", actor="operator")
    with pytest.raises(ReadOnlyError):
        workflow_resume("wf-1", actor="operator", reason="back on", expected_epoch=EPOCH)
    with pytest.raises(ReadOnlyError):
        backfill_schedule(requested_by="operator")
    assert not Workflow.objects.filter(workflow_id="wf-new").exists()
    assert state() == UNCHANGED


def test_the_fleets_own_programs_still_start_workflows_while_read_only(settings):
    """The switch stops people, not the fleet: the demo seed and trickle keep starting."""
    settings.WEFTBOARD_READ_ONLY = "yes"

    workflow_start(workflow_type="order", workflow_id="wf-new")

    assert Workflow.objects.get(workflow_id="wf-new").status == "running"


def test_a_program_ending_its_own_workflow_owes_no_reason():
    """Only an operator (an actor) owes the audit log a reason."""
    assert workflow_cancel("wf-1", expected_epoch=EPOCH).status == "cancelled"


@pytest.mark.parametrize("action", SERVICES)
def test_the_services_refuse_a_claim_whose_workflow_row_is_gone(action):
    """The claim row outlives a deleted workflow row; no action applies to it, release
    included, whatever the interface asked (the API answers 404, the pages 409)."""
    Workflow.objects.filter(workflow_id="wf-1").delete()

    with pytest.raises(WorkflowNotFoundError, match="no workflow with id 'wf-1'"):
        SERVICES[action]("a good reason")
    claim = WorkflowClaim.objects.get(workflow_id="wf-1")
    assert (claim.epoch, claim.holder_engine_id) == (EPOCH, "e-1")
    assert ClaimEvent.objects.count() == 0
