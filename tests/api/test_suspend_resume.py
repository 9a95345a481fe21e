"""POST /workflows/{id}/suspend and /resume: the answers and error mapping of cancel, with
the epoch the caller saw required."""

from __future__ import annotations

import pytest

from claims.models import ClaimEvent, Workflow, WorkflowStatus, WorkflowVisibility

from .conftest import (
    assert_rotated,
    bearer,
    claim_values,
    make_claim,
    make_workflow,
    post,
    wf_url,
)

pytestmark = pytest.mark.django_db


def test_suspend_deposes_the_holder_and_answers_the_fresh_claim(operator_client):
    make_workflow("wf-1")
    make_claim("wf-1", epoch=5, engine="e-1")

    response = post(
        operator_client, wf_url("wf-1", "/suspend"), {"expected_epoch": 5, "reason": "INC-9"}
    )

    assert_rotated(response, status="suspended", epoch=6, reason="INC-9")
    assert claim_values("wf-1") == (6, None, None, None, None)


def test_resume_makes_it_running_and_ownerless(operator_client):
    make_workflow("wf-1", status=WorkflowStatus.SUSPENDED)
    make_claim("wf-1", epoch=6, engine=None)

    response = post(
        operator_client, wf_url("wf-1", "/resume"), {"expected_epoch": 6, "reason": "fixed"}
    )

    assert_rotated(response, status="running", epoch=7, reason="fixed")
    assert WorkflowVisibility.objects.get(workflow_id="wf-1").status == "running"


@pytest.mark.parametrize("action", ["/suspend", "/resume"])
def test_a_moved_epoch_gets_409_with_the_fresh_claim(operator_client, action):
    status = WorkflowStatus.RUNNING if action == "/suspend" else WorkflowStatus.SUSPENDED
    make_workflow("wf-1", status=status)
    make_claim("wf-1", epoch=6, engine=None)

    response = post(operator_client, wf_url("wf-1", action), {"expected_epoch": 5, "reason": "r"})

    assert response.status_code == 409
    assert response.json()["current"]["epoch"] == 6
    assert Workflow.objects.get().status == status
    assert claim_values("wf-1")[0] == 6


@pytest.mark.parametrize(
    ("action", "status", "detail"),
    [
        ("/suspend", WorkflowStatus.SUSPENDED, "cannot suspend workflow 'wf-1': it is suspended"),
        ("/suspend", WorkflowStatus.COMPLETED, "cannot suspend workflow 'wf-1': it is completed"),
        ("/resume", WorkflowStatus.RUNNING, "cannot resume workflow 'wf-1': it is running"),
        ("/resume", WorkflowStatus.CANCELLED, "cannot resume workflow 'wf-1': it is cancelled"),
    ],
)
def test_a_workflow_in_the_wrong_status_gets_409(operator_client, action, status, detail):
    make_workflow("wf-1", status=status)
    make_claim("wf-1", epoch=5, engine=None)

    response = post(operator_client, wf_url("wf-1", action), {"expected_epoch": 5, "reason": "r"})

    assert response.status_code == 409
    assert response.json() == {"detail": detail}
    assert claim_values("wf-1")[0] == 5


@pytest.mark.parametrize("action", ["/suspend", "/resume"])
@pytest.mark.parametrize(
    "body",
    [
        {"reason": "no epoch"},
        {"expected_epoch": 5},
        {"expected_epoch": 5, "reason": "   "},
        {"expected_epoch": -1, "reason": "r"},
        {"expected_epoch": 5, "reason": "r" * 2001},
    ],
)
def test_bad_input_gets_422_and_changes_nothing(operator_client, action, body):
    make_workflow("wf-1")
    make_claim("wf-1", epoch=5, engine="e-1")

    response = post(operator_client, wf_url("wf-1", action), body)

    assert response.status_code == 422, response.content
    assert Workflow.objects.get().status == "running"
    assert claim_values("wf-1")[:2] == (5, "e-1")


@pytest.mark.parametrize("action", ["/suspend", "/resume"])
def test_an_unknown_workflow_gets_404(operator_client, action):
    response = post(operator_client, wf_url("nope", action), {"expected_epoch": 0, "reason": "r"})

    assert response.status_code == 404


@pytest.mark.parametrize("action", ["/suspend", "/resume"])
def test_the_cancel_permission_alone_is_not_enough(django_user_model, client, action):
    """Suspend and resume need claims.suspend_workflow, whatever else the user may do."""
    from tests import factories

    user = factories.make_user("canceller", ("cancel_workflow", "force_claim"))
    client.force_login(user)
    make_workflow("wf-1")

    response = post(client, wf_url("wf-1", action), {"expected_epoch": 0, "reason": "r"})

    assert response.status_code == 403
    assert response.json() == {"detail": "this needs the permission claims.suspend_workflow"}
    assert Workflow.objects.get().status == "running"


def test_a_write_token_suspends_in_its_users_name(operator, token_for, client):
    make_workflow("wf-1")
    secret = token_for(operator, "write")

    response = post(
        client, wf_url("wf-1", "/suspend"), {"expected_epoch": 0, "reason": "r"}, bearer(secret)
    )

    assert response.status_code == 200, response.content
    assert ClaimEvent.objects.get().actor.startswith("operator (token ")
