"""POST /workflows (start) and POST /workflows/{id}/cancel."""

from __future__ import annotations

import pytest

from claims.models import Workflow, WorkflowStatus, WorkflowVisibility

from .conftest import assert_rotated, claim_values, make_claim, make_workflow, post, url, wf_url

pytestmark = pytest.mark.django_db


def test_start_creates_a_running_ownerless_workflow(operator_client):
    """A start answers 201 with the new workflow, indexed for listing and waiting for reclaim."""
    response = post(
        operator_client,
        url("/workflows"),
        {"workflow_type": "order", "input": {"sku": "A-1", "qty": 2}, "workflow_id": "order-1"},
    )

    assert response.status_code == 201, response.content
    body = response.json()
    assert (body["workflow_id"], body["workflow_type"], body["status"]) == (
        "order-1",
        "order",
        "running",
    )
    assert body["created_at"].endswith("Z")
    workflow = Workflow.objects.get()
    assert workflow.state["input"] == {"sku": "A-1", "qty": 2}
    assert WorkflowVisibility.objects.filter(workflow_id="order-1", status="running").exists()


def test_start_without_an_id_mints_one(operator_client):
    """Without workflow_id the service picks a fresh id."""
    response = post(operator_client, url("/workflows"), {"workflow_type": "invoice"})

    assert response.status_code == 201
    assert Workflow.objects.get().workflow_id == response.json()["workflow_id"]


def test_start_with_an_id_in_use_gets_409(operator_client):
    """Starting an id that already exists answers 409 and leaves the workflow alone."""
    make_workflow("order-1", status=WorkflowStatus.COMPLETED)

    response = post(
        operator_client, url("/workflows"), {"workflow_type": "order", "workflow_id": "order-1"}
    )

    assert response.status_code == 409
    assert "already started" in response.json()["detail"]
    assert Workflow.objects.get().status == "completed"


@pytest.mark.parametrize(
    "body",
    [
        pytest.param({"workflow_type": "no-such-type"}, id="unknown-type"),
        pytest.param({"workflow_type": ""}, id="empty-type"),
        pytest.param({"workflow_type": "t" * 101}, id="long-type"),
        pytest.param({}, id="missing-type"),
        pytest.param({"workflow_type": 7}, id="number-type"),
        pytest.param({"workflow_type": "order", "workflow_id": "x" * 256}, id="long-id"),
        pytest.param({"workflow_type": "order", "workflow_id": "a\x1bb"}, id="control-id"),
        pytest.param({"workflow_type": "order", "workflow_id": ""}, id="empty-id"),
        pytest.param({"workflow_type": "order", "workflow_id": 5}, id="number-id"),
    ],
)
def test_bad_starts_get_422_and_create_nothing(operator_client, body):
    """Unknown types and malformed ids are refused with 422; no workflow is created."""
    response = post(operator_client, url("/workflows"), body)

    assert response.status_code == 422, response.content
    assert "detail" in response.json()
    assert not Workflow.objects.exists()


def test_unknown_type_names_it(operator_client):
    """The 422 for an unknown type says which type."""
    response = post(operator_client, url("/workflows"), {"workflow_type": "no-such-type"})

    assert response.json() == {
        "detail": "no workflow function is registered for type 'no-such-type'"
    }


def test_cancel_ends_the_workflow_and_rotates_its_claim(operator_client):
    """Cancel marks the workflow cancelled and moves its claim to epoch + 1 with no holder."""
    make_workflow("wf-1")
    make_claim("wf-1", epoch=5, engine="e-1")

    response = post(operator_client, wf_url("wf-1", "/cancel"), {"reason": "customer asked"})

    assert_rotated(response, status="cancelled", epoch=6, reason="customer asked")
    assert claim_values("wf-1") == (6, None, None, None, None)


@pytest.mark.parametrize("body", [None, {}, {"reason": "   "}])
def test_cancel_needs_a_reason_as_every_operator_action_does(operator_client, body):
    """The same rule as the pages': the reason goes into the audit log with the actor."""
    make_workflow("wf-1")

    if body is None:
        response = operator_client.post(
            wf_url("wf-1", "/cancel"), "", content_type="application/json"
        )
    else:
        response = post(operator_client, wf_url("wf-1", "/cancel"), body)

    assert response.status_code == 422, response.content
    assert Workflow.objects.get().status == "running"


def test_cancel_of_a_finished_workflow_gets_409(operator_client):
    """A workflow that has already ended cannot be cancelled: 409, nothing rotates."""
    make_workflow("wf-1", status=WorkflowStatus.COMPLETED)
    make_claim("wf-1", epoch=5, engine=None)

    response = post(operator_client, wf_url("wf-1", "/cancel"), {"reason": "r"})

    assert response.status_code == 409
    assert response.json() == {"detail": "cannot cancel workflow 'wf-1': it is completed"}
    assert claim_values("wf-1")[0] == 5


def test_cancel_of_an_unknown_workflow_gets_404(operator_client):
    """Cancelling an id with no workflow answers 404."""
    response = post(operator_client, wf_url("nope", "/cancel"), {"reason": "r"})

    assert response.status_code == 404


@pytest.mark.parametrize("workflow_id", ["x" * 256, "a\x01b"])
def test_cancel_of_a_bad_id_gets_422(operator_client, workflow_id):
    """A malformed id is refused with 422."""
    assert post(operator_client, wf_url(workflow_id, "/cancel"), {"reason": "r"}).status_code == 422


def test_cancel_reason_has_a_limit(operator_client):
    """A reason over 2000 characters is refused with 422 and the workflow keeps running."""
    make_workflow("wf-1")

    response = post(operator_client, wf_url("wf-1", "/cancel"), {"reason": "r" * 2001})

    assert response.status_code == 422
    assert Workflow.objects.get().status == "running"


def test_cancel_with_the_epoch_seen_is_a_compare_and_swap(operator_client):
    """expected_epoch that moved: 409 with the fresh claim, and nothing cancelled."""
    make_workflow("wf-1")
    make_claim("wf-1", epoch=6, engine="e-1")
    seen = 5

    cancel = wf_url("wf-1", "/cancel")
    stale = post(operator_client, cancel, {"expected_epoch": seen, "reason": "r"})
    current = post(operator_client, cancel, {"expected_epoch": seen + 1, "reason": "r"})

    assert stale.status_code == 409
    assert stale.json()["current"]["epoch"] == seen + 1
    assert current.status_code == 200
    assert Workflow.objects.get(workflow_id="wf-1").status == "cancelled"
