"""Force release, force takeover and cancel from the pages: compare-and-swap on the epoch the
operator saw, 409 with the fresh state, permissions, read-only mode and bad input."""

from __future__ import annotations

import pytest
from django.test import Client

from claims.models import ClaimEvent, Workflow, WorkflowClaim

from .conftest import htmx, make_claim, make_engine, make_workflow

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def world():
    make_engine("e-7f3")
    make_engine("e-2")
    make_workflow("wf-1")
    make_claim("wf-1", epoch=41, engine="e-7f3")


def claim() -> WorkflowClaim:
    return WorkflowClaim.objects.get(workflow_id="wf-1")


def release(client, epoch="41", reason="stuck engine", **extra):
    return client.post("/release/wf-1", {"expected_epoch": epoch, "reason": reason}, **extra)


def test_confirmation_names_the_precondition_and_the_effect(operator_client):
    """The confirm step shows the epoch it will assert and what the write does."""
    html = operator_client.get("/release/wf-1?epoch=41").content.decode()

    assert "epoch <strong>41</strong>, held by" in html
    assert "epoch 41 → 42, no holder; engine e-7f3 is deposed on its next write" in html
    assert 'name="expected_epoch" value="41"' in html
    assert "Confirm force release at epoch 41" in html


def test_force_release_moves_the_epoch_and_audits_the_actor(operator_client):
    """Release: epoch + 1, no holder, a forced_release event naming the user and the reason;
    without HTMX the browser is sent back to the workflow page."""
    response = release(operator_client)

    assert response.status_code == 303
    assert response["Location"] == "/workflows/wf-1/"
    row = claim()
    assert (row.epoch, row.holder_engine_id) == (42, None)
    event = ClaimEvent.objects.get(workflow_id="wf-1", kind="forced_release")
    assert (event.epoch_before, event.epoch_after) == (41, 42)
    assert (event.actor, event.reason) == ("alice", "stuck engine")


def test_force_release_over_htmx_answers_in_place_and_refreshes_the_live_parts(operator_client):
    """HTMX gets a success fragment and a claimChanged event for the live fragments."""
    response = release(operator_client, **htmx("action-panel"))

    assert response.status_code == 200
    assert "Released: epoch 41 → 42; engine e-7f3 is deposed on its next write" in (
        response.content.decode()
    )
    assert "claimChanged" in response["HX-Trigger"]


def test_force_takeover_grants_the_engine_and_sends_adopt_after_commit(
    operator_client, adopt_send, django_capture_on_commit_callbacks
):
    """Takeover: epoch + 1 held by the chosen engine, then adopt goes to that engine's queue."""
    with django_capture_on_commit_callbacks(execute=True):
        response = operator_client.post(
            "/takeover/wf-1",
            {"expected_epoch": "41", "target_engine_id": "e-2", "reason": "drain e-7f3"},
        )

    assert response.status_code == 303
    row = claim()
    assert (row.epoch, row.holder_engine_id, row.holder_epoch) == (42, "e-2", 42)
    adopt_send.assert_called_once_with(args=("wf-1", 42), queue="engine.e-2", retry=False)
    event = ClaimEvent.objects.get(workflow_id="wf-1", kind="forced_takeover")
    assert (event.actor, event.engine_id, event.epoch_after) == ("alice", "e-2", 42)


def test_takeover_form_lists_live_engines_only(operator_client):
    """The target choices are the active engines; a dead one is not offered."""
    make_engine("e-dead", status="dead")

    html = operator_client.get("/takeover/wf-1?epoch=41").content.decode()

    assert '<option value="e-2">' in html
    assert "e-dead" not in html


def test_stale_epoch_is_a_409_with_the_fresh_state_and_nothing_changes(operator_client):
    """The claim moved since the operator looked: 409, the fresh epoch and holder are shown
    with a new form at that epoch, and the claim is untouched."""
    WorkflowClaim.objects.filter(workflow_id="wf-1").update(
        epoch=43, holder_epoch=43, holder_engine_id="e-2"
    )

    response = release(operator_client, **htmx("action-panel"))

    assert response.status_code == 409
    assert response["HX-Retarget"] == "#action-panel"
    assert "claimChanged" in response["HX-Trigger"]  # the live parts refresh too
    html = response.content.decode()
    assert "The claim changed since you looked" in html
    assert "You saw epoch 41; it is now at epoch 43, held by e-2" in html
    assert 'name="expected_epoch" value="43"' in html
    assert (claim().epoch, claim().holder_engine_id) == (43, "e-2")
    assert not ClaimEvent.objects.filter(kind="forced_release").exists()


def test_stale_epoch_takeover_is_a_409_too(operator_client, adopt_send):
    """A stale takeover changes nothing and sends no adopt message."""
    response = operator_client.post(
        "/takeover/wf-1", {"expected_epoch": "40", "target_engine_id": "e-2", "reason": "x"}
    )

    assert response.status_code == 409
    assert claim().epoch == 41
    adopt_send.assert_not_called()


def test_confirm_step_with_a_stale_epoch_already_answers_409(operator_client):
    """Opening the form from a stale row shows the fresh state before anything is typed."""
    response = operator_client.get("/release/wf-1?epoch=39")

    assert response.status_code == 409
    assert "You saw epoch 39; it is now at epoch 41" in response.content.decode()


def test_without_permission_the_write_is_refused_with_403(viewer_client):
    """A user without claims.force_claim gets 403 and the claim does not move."""
    response = release(viewer_client)

    assert response.status_code == 403
    assert "you need the permission claims.force_claim" in response.content.decode()
    assert claim().epoch == 41


def test_without_permission_the_buttons_are_disabled_with_the_reason(viewer_client):
    """The workflow page shows the actions disabled, the reason in a title and in text."""
    html = viewer_client.get("/workflows/wf-1/").content.decode()

    assert 'disabled title="you need the permission claims.force_claim">Force release' in html
    assert "Claim actions: you need the permission claims.force_claim." in html
    assert 'href="/release/wf-1' not in html


def test_read_only_mode_refuses_every_action_and_says_why(operator_client, settings):
    """With WEFTBOARD_READ_ONLY set, even a permitted user is refused and sees the reason."""
    settings.WEFTBOARD_READ_ONLY = "database migration"

    response = release(operator_client)
    page = operator_client.get("/workflows/wf-1/").content.decode()
    cancel = operator_client.post("/cancel/wf-1", {"reason": "x"})

    assert response.status_code == 403
    assert "read-only mode: database migration" in response.content.decode()
    assert "read-only mode: database migration" in page
    assert "disabled" in page
    assert cancel.status_code == 403
    assert claim().epoch == 41
    assert Workflow.objects.get(workflow_id="wf-1").status == "running"


def test_missing_reason_is_a_400_with_the_form_kept(operator_client):
    """No reason: 400, the form comes back with the message, nothing changes."""
    response = release(operator_client, reason="   ", **htmx("action-panel"))

    assert response.status_code == 400
    assert "a reason is required" in response.content.decode()
    assert 'name="expected_epoch" value="41"' in response.content.decode()
    assert claim().epoch == 41


@pytest.mark.parametrize("epoch", ["abc", "-1", "0", "4.5", "", "99999999999999999999"])
def test_malformed_epoch_is_a_400(operator_client, epoch):
    """Only whole numbers from 1 to 2^53 - 1 are epochs; anything else changes nothing."""
    response = release(operator_client, epoch=epoch)

    assert response.status_code == 400
    assert "expected_epoch must be" in response.content.decode()
    assert claim().epoch == 41


def test_malformed_epoch_in_the_confirm_link_is_a_400(operator_client):
    """The epoch in a confirm link is checked the same way."""
    assert operator_client.get("/release/wf-1?epoch=-3").status_code == 400


@pytest.mark.parametrize("target", ["", "e-unknown", "e-dead"])
def test_takeover_to_an_engine_that_is_not_live_is_a_400(operator_client, adopt_send, target):
    """The target must be an active engine; otherwise nothing moves and nothing is sent."""
    make_engine("e-dead", status="dead")

    response = operator_client.post(
        "/takeover/wf-1", {"expected_epoch": "41", "target_engine_id": target, "reason": "x"}
    )

    assert response.status_code == 400
    assert claim().epoch == 41
    adopt_send.assert_not_called()


@pytest.mark.parametrize(
    "path", ["/release/nope", "/takeover/nope", "/cancel/nope", "/workflows/nope/"]
)
def test_unknown_workflow_is_a_404(operator_client, path):
    """An id with neither a workflow nor a claim row is not found."""
    response = operator_client.get(path)

    assert response.status_code == 404
    assert "no workflow and no claim with id &#x27;nope&#x27;" in response.content.decode()


@pytest.mark.parametrize(
    ("workflow_id", "message"),
    [("w" * 256, "at most 255 characters"), ("wf%07bell", "control characters")],
)
@pytest.mark.parametrize("verb", ["release", "takeover", "cancel"])
def test_bad_workflow_ids_are_a_400(operator_client, workflow_id, message, verb):
    """Overlong ids and ids with control characters are refused before any query."""
    response = operator_client.post(
        f"/{verb}/{workflow_id}", {"expected_epoch": "1", "reason": "x"}
    )

    assert response.status_code == 400
    assert message in response.content.decode()


def test_bad_workflow_id_on_the_detail_page_is_a_400(operator_client):
    """The workflow page checks its id with the same rule."""
    response = operator_client.get("/workflows/" + "w" * 256 + "/")

    assert response.status_code == 400


def test_cancel_rotates_the_epoch_and_records_the_actor(operator_client):
    """Cancel: status cancelled, claim at the next epoch with no holder, a rotated event."""
    response = operator_client.post(
        "/cancel/wf-1", {"reason": "customer asked", "expected_epoch": "41"}
    )

    assert response.status_code == 303
    assert Workflow.objects.get(workflow_id="wf-1").status == "cancelled"
    assert (claim().epoch, claim().holder_engine_id) == (42, None)
    event = ClaimEvent.objects.get(workflow_id="wf-1", kind="rotated")
    assert (event.actor, event.reason) == ("alice", "customer asked")


def test_cancel_on_an_epoch_that_moved_is_a_409_with_the_fresh_state(operator_client):
    """The operator saw epoch 40; it is 41 now: nothing is cancelled."""
    response = operator_client.post("/cancel/wf-1", {"reason": "x", "expected_epoch": "40"})

    assert response.status_code == 409
    assert Workflow.objects.get(workflow_id="wf-1").status == "running"
    assert claim().epoch == 41
    assert 'name="expected_epoch" value="41"' in response.content.decode()


def test_the_cancel_form_carries_the_epoch_on_show(operator_client):
    page = operator_client.get("/cancel/wf-1").content.decode()

    assert 'name="expected_epoch" value="41"' in page


def test_cancel_without_the_epoch_seen_is_a_400(operator_client):
    response = operator_client.post("/cancel/wf-1", {"reason": "x"})

    assert response.status_code == 400
    assert Workflow.objects.get(workflow_id="wf-1").status == "running"


def test_cancel_of_a_finished_workflow_is_a_409(operator_client):
    """A workflow that already ended cannot be cancelled; the page says why."""
    Workflow.objects.filter(workflow_id="wf-1").update(status="completed")

    response = operator_client.post("/cancel/wf-1", {"reason": "x", "expected_epoch": "41"})

    assert response.status_code == 409
    assert "the workflow is already completed" in response.content.decode()
    assert claim().epoch == 41


def test_cancel_needs_its_own_permission(signed_in_as):
    """claims.force_claim does not grant cancel; claims.cancel_workflow does."""
    client = signed_in_as("bob", "force_claim")

    response = client.post("/cancel/wf-1", {"reason": "x"})

    assert response.status_code == 403
    assert "claims.cancel_workflow" in response.content.decode()


def test_actions_need_a_csrf_token(operator):
    """A POST without the CSRF token is refused by Django before the view runs."""
    client = Client(enforce_csrf_checks=True)
    client.force_login(operator)

    response = release(client)

    assert response.status_code == 403
    assert claim().epoch == 41


def test_actions_refuse_get_for_writes(operator_client):
    """GET only shows the confirmation; it never writes."""
    operator_client.get("/release/wf-1?epoch=41&reason=x&expected_epoch=41")

    assert claim().epoch == 41


def test_anonymous_post_is_sent_to_login_and_changes_nothing(client):
    """No session, no write."""
    response = release(client)

    assert response.status_code == 302
    assert claim().epoch == 41


def test_releasing_an_unheld_claim_is_a_409(operator_client):
    """Nothing to release when nobody holds the claim; the epoch stays."""
    WorkflowClaim.objects.filter(workflow_id="wf-1").update(
        holder_engine_id=None,
        holder_epoch=None,
        holder_expires_at_ms=None,
        holder_claimed_at_ms=None,
    )

    response = release(operator_client)

    assert response.status_code == 409
    assert "nobody holds this claim" in response.content.decode()
    assert claim().epoch == 41


def test_taking_over_a_finished_workflow_is_a_409(operator_client, adopt_send):
    """No engine needs to drive a completed workflow; nothing moves, nothing is sent."""
    Workflow.objects.filter(workflow_id="wf-1").update(status="completed")

    response = operator_client.post(
        "/takeover/wf-1", {"expected_epoch": "41", "target_engine_id": "e-2", "reason": "x"}
    )

    assert response.status_code == 409
    assert "the workflow is completed" in response.content.decode()
    assert claim().epoch == 41
    adopt_send.assert_not_called()
