"""The workflow page: status, claim with expiry, epoch timeline, checkpoints, re-drives."""

from __future__ import annotations

import pytest

from claims.models import PendingRedrive, WorkflowClaim

from .conftest import htmx, make_claim, make_engine, make_event, make_workflow, now_ms

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def world():
    make_engine("e-1")
    make_engine("e-2")
    make_workflow(
        "wf-1",
        state={
            "input": {},
            "steps": {
                "charge": {"result": {"ok": True}, "epoch": 2, "engine_id": "e-1", "at_ms": 1},
                "ship": {"result": "boxed", "epoch": 3, "engine_id": "e-2", "at_ms": 2},
            },
        },
    )
    make_claim("wf-1", epoch=3, engine="e-2")
    make_event("wf-1", "acquired", engine_id="e-1", epoch_before=1, epoch_after=2)
    make_event("wf-1", "takeover", engine_id="e-2", epoch_before=2, epoch_after=3)


def test_page_shows_status_claim_and_expiry(operator_client):
    """Status, type, epoch, holder and the countdown with the takeover time are there."""
    html = operator_client.get("/workflows/wf-1/").content.decode()

    assert "status--running" in html
    assert "order" in html
    assert "<strong>3</strong>" in html
    assert 'href="/engines/e-2/"' in html
    assert "data-expires-at=" in html
    assert "Takeover from" in html


def test_timeline_has_one_lane_per_engine_with_epoch_labels(operator_client):
    """e-1 held epoch 2, e-2 holds epoch 3 until now."""
    html = operator_client.get("/workflows/wf-1/", **htmx("workflow-history")).content.decode()

    assert html.count('class="timeline__track"') == 2
    assert ">e2</span>" in html
    assert "timeline__segment timeline__segment--open" in html
    assert ">e3</span>" in html
    assert "timeline__mark--takeover" in html


def test_checkpoints_come_from_the_state_steps(operator_client):
    """Each recorded step shows its epoch, engine and a preview of its result."""
    html = operator_client.get("/workflows/wf-1/").content.decode()

    assert ">charge<" in html
    assert ">ship<" in html
    assert "{&quot;ok&quot;:true}" in html


def test_pending_redrive_is_shown(operator_client):
    """A re-drive pending for this workflow appears with its attempts and error."""
    now = now_ms()
    PendingRedrive.objects.create(
        engine_id="e-2",
        workflow_id="wf-1",
        epoch=3,
        attempts=4,
        last_error="boom: payment API down",
        first_failed_at_ms=now - 60_000,
        last_failed_at_ms=now,
    )

    html = operator_client.get("/workflows/wf-1/").content.decode()

    assert "Pending re-drive" in html
    assert "4 attempts" in html
    assert "payment API down" in html


def test_a_claim_without_a_workflow_row_still_shows(operator_client):
    """The claim row outlives a deleted workflow row; its page still opens."""
    make_claim("wf-gone", epoch=9, engine=None)

    response = operator_client.get("/workflows/wf-gone/")

    assert response.status_code == 200
    assert "no workflow row: only its claim row is kept" in response.content.decode()


def test_ids_with_slashes_and_spaces_round_trip(operator_client):
    """Workflow ids may hold slashes and spaces; links and lookups agree."""
    make_workflow("orders/2025 07")
    make_claim("orders/2025 07", epoch=1, engine="e-1")

    listing = operator_client.get("/claims/").content.decode()
    page = operator_client.get("/workflows/orders/2025%2007/")

    assert 'href="/workflows/orders/2025%2007/"' in listing
    assert page.status_code == 200


def test_page_query_count_is_fixed(operator_client, django_assert_num_queries):
    """Many events cost no more queries than two."""
    for n in range(40):
        make_event("wf-1", "released", engine_id="e-2", epoch_before=3, epoch_after=3, at_ms=n)
    WorkflowClaim.objects.filter(workflow_id="wf-1").update(holder_engine_id="e-2")

    # session, user, two permission lookups, workflow, claim, events, holder engine, re-drives,
    # the engines' names beside their ids, and the frame's engine-floor alert
    with django_assert_num_queries(11):
        operator_client.get("/workflows/wf-1/")


@pytest.mark.parametrize(
    "workflow_id", ["plain", "a/b c", "100%?#&=+", "ünïcødé", "x;y@z:~!$'()*,"]
)
@pytest.mark.parametrize("name", ["claims:workflow", "claims:release", "claims:engine"])
def test_row_urls_match_reverse(workflow_id, name):
    """The per-row URL shortcut builds exactly what reverse() builds."""
    from django.urls import reverse

    from claims.templatetags.weftboard import id_url

    assert id_url(name, workflow_id) == reverse(name, args=[workflow_id])
