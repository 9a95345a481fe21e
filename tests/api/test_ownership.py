"""GET /workflows/{id}/ownership: the diagnostic read, and what bad ids get."""

from __future__ import annotations

import pytest

from claims.models import ClaimEvent, PendingRedrive, WorkflowStatus

from .conftest import make_claim, make_workflow, now_ms, wf_url

pytestmark = pytest.mark.django_db


def test_reads_status_claim_expiry_redrives_and_recent_events(viewer_client):
    """One read answers who holds the workflow, when takeover is allowed and what happened."""
    make_workflow("wf-1", workflow_type="invoice")
    claim = make_claim("wf-1", epoch=7, engine="e-1", expires_in_ms=-2_000)
    PendingRedrive.objects.create(
        engine_id="e-1", workflow_id="wf-1", epoch=7, attempts=2, last_error="boom",
        first_failed_at_ms=now_ms() - 5_000, last_failed_at_ms=now_ms(),
    )  # fmt: skip
    ClaimEvent.objects.bulk_create(
        ClaimEvent(workflow_id="wf-1", kind="acquired", epoch_after=n, engine_id="e-1", at_ms=n)
        for n in range(1, 26)
    )

    body = viewer_client.get(wf_url("wf-1", "/ownership")).json()

    assert body["workflow"]["status"] == "running"
    assert body["workflow"]["workflow_type"] == "invoice"
    assert body["claim"]["epoch"] == 7
    assert body["claim"]["holder_engine_id"] == "e-1"
    assert body["claim"]["state"] == "in-grace"
    expiry = body["claim"]["expiry"]
    assert expiry["expires_at_ms"] == claim.holder_expires_at_ms
    assert expiry["takeover_allowed_at_ms"] == claim.holder_expires_at_ms + 10_000
    assert expiry["expired"] is False
    assert 0 < expiry["ms_until_takeover"] <= 8_000
    assert expiry["takeover_allowed_at"].endswith("Z")
    assert [r["attempts"] for r in body["pending_redrives"]] == [2]
    assert [e["epoch_after"] for e in body["recent_events"]] == list(range(25, 5, -1))


def test_an_expired_claim_may_be_taken_over_now(viewer_client):
    """Past expiry plus grace the judgement says expired with nothing left to wait."""
    make_workflow("wf-1")
    make_claim("wf-1", engine="e-1", expires_in_ms=-60_000)

    expiry = viewer_client.get(wf_url("wf-1", "/ownership")).json()["claim"]["expiry"]

    assert expiry == expiry | {"expired": True, "ms_until_takeover": 0}


def test_a_never_claimed_workflow_reads_as_ownerless(viewer_client):
    """A workflow without a claim row has no epoch and no holder."""
    make_workflow("wf-new")

    claim = viewer_client.get(wf_url("wf-new", "/ownership")).json()["claim"]

    assert claim | {"as_of_ms": 0, "as_of": None} == {
        "workflow_id": "wf-new",
        "epoch": None,
        "holder_engine_id": None,
        "holder_epoch": None,
        "state": "ownerless",
        "claimed_at_ms": None,
        "claimed_at": None,
        "expiry": None,
        "as_of_ms": 0,
        "as_of": None,
    }


def test_a_claim_without_a_workflow_row_still_shows(viewer_client):
    """The claim row outlives a deleted workflow row: the read shows it with no workflow."""
    make_claim("wf-gone", epoch=9, engine=None)

    body = viewer_client.get(wf_url("wf-gone", "/ownership")).json()

    assert body["workflow"] is None
    assert body["claim"]["epoch"] == 9


def test_ids_with_slashes_are_reachable(viewer_client):
    """A workflow id may contain slashes; its routes still find it."""
    make_workflow("tenant/42/order", status=WorkflowStatus.COMPLETED)

    response = viewer_client.get(wf_url("tenant/42/order", "/ownership"))

    assert response.status_code == 200
    assert response.json()["workflow"]["workflow_id"] == "tenant/42/order"


def test_unknown_workflow_gets_404(viewer_client):
    """An id with neither a workflow nor a claim answers 404 naming it."""
    response = viewer_client.get(wf_url("nope", "/ownership"))

    assert response.status_code == 404
    assert response.json() == {"detail": "no workflow with id 'nope'"}


@pytest.mark.parametrize(
    "workflow_id", ["x" * 256, "bad\x01id", "bad\nid", "tab\tid", "del\x7fid", "zw\u200bid"]
)
def test_ids_too_long_or_with_control_characters_get_422(viewer_client, workflow_id):
    """An id over 255 characters or holding a control character is refused with 422."""
    response = viewer_client.get(wf_url(workflow_id, "/ownership"))

    assert response.status_code == 422
    assert "workflow id" in response.json()["detail"]


def test_an_id_of_255_characters_is_fine(viewer_client):
    """255 characters is the limit, not past it."""
    assert viewer_client.get(wf_url("x" * 255, "/ownership")).status_code == 404


def test_the_read_costs_a_fixed_number_of_queries(viewer_client, django_assert_max_num_queries):
    """Workflow, claim, re-drives and events: four queries however long the history."""
    make_workflow("wf-1")
    make_claim("wf-1")
    ClaimEvent.objects.bulk_create(
        ClaimEvent(workflow_id="wf-1", kind="acquired", epoch_after=n, at_ms=n) for n in range(50)
    )
    viewer_client.get(wf_url("wf-1", "/ownership"))

    with django_assert_max_num_queries(6):  # the session and the user, then four
        assert viewer_client.get(wf_url("wf-1", "/ownership")).status_code == 200
