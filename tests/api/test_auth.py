"""Authentication, permissions, the read-only switch, CSRF and the write limit."""

from __future__ import annotations

import hashlib
import logging
import time

import pytest
from django.test import Client, override_settings
from django.utils import timezone

from claims.models import ApiToken, BackfillJob, ClaimEvent, Workflow
from tests.conftest import forget_rate_counts

from .conftest import (
    bearer,
    claim_values,
    make_claim,
    make_engine,
    make_workflow,
    post,
    url,
    wf_url,
)

pytestmark = pytest.mark.django_db

READS = [
    url("/claims"),
    wf_url("wf-1", "/ownership"),
    url("/engines"),
    url("/reclaim/cursor"),
    url("/redrives"),
    url("/backfills/1"),
]

# Each write with a valid body, so that only the caller's rights decide the answer.
WRITES = [
    (url("/workflows"), {"workflow_type": "order"}),
    (wf_url("wf-1", "/cancel"), {"reason": "stop"}),
    (wf_url("wf-1", "/suspend"), {"expected_epoch": 3, "reason": "hold"}),
    (wf_url("wf-1", "/resume"), {"expected_epoch": 3, "reason": "go on"}),
    (wf_url("wf-1", "/claim/release"), {"expected_epoch": 3, "reason": "stuck"}),
    (
        wf_url("wf-1", "/claim/takeover"),
        {"expected_epoch": 3, "target_engine_id": "e-2", "reason": "stuck"},
    ),
    (url("/backfills"), {}),
    (url("/backfills/1/cancel"), {}),
]


@pytest.fixture
def world():
    """A held workflow, a live target engine and an active backfill job."""
    make_workflow("wf-1")
    make_claim("wf-1", epoch=3, engine="e-1")
    make_engine("e-1")
    make_engine("e-2")
    return BackfillJob.objects.create(pk=1, run_at=timezone.now())


def snapshot():
    return (
        claim_values("wf-1"),
        list(Workflow.objects.values_list("workflow_id", "status")),
        list(BackfillJob.objects.values_list("pk", "status")),
        ClaimEvent.objects.count(),
    )


@pytest.mark.parametrize("path", READS)
def test_anonymous_reads_are_refused_with_401(client, path):
    """A read without a session or token answers 401 with a detail."""
    response = client.get(path)

    assert response.status_code == 401
    assert response.json() == {"detail": "Unauthorized"}


@pytest.mark.parametrize(("path", "body"), WRITES)
def test_anonymous_writes_are_refused_with_401_and_change_nothing(world, path, body):
    """A write without credentials answers 401 (not a CSRF 403) and changes nothing."""
    before = snapshot()

    response = post(Client(enforce_csrf_checks=True), path, body)

    assert response.status_code == 401
    assert snapshot() == before


@pytest.mark.parametrize(("path", "body"), WRITES)
def test_writes_without_the_permission_are_refused_with_403(world, viewer_client, path, body):
    """A logged-in user lacking the route's permission gets 403 naming it; nothing changes."""
    before = snapshot()

    response = post(viewer_client, path, body)

    assert response.status_code == 403
    assert "permission claims." in response.json()["detail"]
    assert snapshot() == before


@pytest.mark.parametrize(("path", "body"), WRITES)
def test_read_only_switch_refuses_every_write_with_its_reason(world, operator_client, path, body):
    """With WEFTBOARD_READ_ONLY set every write answers 403 with the reason; nothing changes."""
    before = snapshot()

    with override_settings(WEFTBOARD_READ_ONLY="database migration until 14:00"):
        response = post(operator_client, path, body)

    assert response.status_code == 403
    assert response.json()["detail"] == (
        "weftboard is in read-only mode: database migration until 14:00"
    )
    assert snapshot() == before


@override_settings(WEFTBOARD_READ_ONLY="database migration")
def test_read_only_switch_leaves_reads_open(world, viewer_client):
    """The read-only switch refuses writes only."""
    assert viewer_client.get(url("/claims")).status_code == 200


@pytest.mark.parametrize(("path", "body"), WRITES)
def test_read_token_cannot_write(world, operator, token_for, path, body):
    """A read-scoped token gets 403 on a write even when its user holds the permission."""
    secret = token_for(operator, "read")
    before = snapshot()

    response = post(Client(), path, body, headers=bearer(secret))

    assert response.status_code == 403
    assert response.json()["detail"] == "this API token is read-only"
    assert snapshot() == before


def test_read_token_reads(world, viewer, token_for):
    """A read token of a user without any permission can read every route."""
    secret = token_for(viewer, "read")

    for path in READS:
        assert Client().get(path, headers=bearer(secret)).status_code == 200, path


def test_write_token_acts_with_its_users_permissions_and_names_it_in_the_audit(
    world, operator, token_for
):
    """A write token of a permitted user may force a release; the event names user and token."""
    secret = token_for(operator, "write")

    response = post(
        Client(enforce_csrf_checks=True),
        wf_url("wf-1", "/claim/release"),
        {"expected_epoch": 3, "reason": "stuck"},
        headers=bearer(secret),
    )

    assert response.status_code == 200, response.content
    event = ClaimEvent.objects.get(kind="forced_release")
    assert event.actor == f"operator (token {secret[:8]})"


def test_write_token_of_a_user_without_permission_is_refused(world, viewer, token_for):
    """Token scope does not grant permissions: the user's own are checked too."""
    secret = token_for(viewer, "write")
    before = snapshot()

    response = post(
        Client(),
        wf_url("wf-1", "/claim/release"),
        {"expected_epoch": 3, "reason": "x"},
        headers=bearer(secret),
    )

    assert response.status_code == 403
    assert snapshot() == before


def test_token_use_updates_last_used_at(viewer, token_for):
    """A successful token request records when the token was last used."""
    secret = token_for(viewer)
    token = ApiToken.objects.get()
    assert token.last_used_at is None

    assert Client().get(url("/claims"), headers=bearer(secret)).status_code == 200

    token.refresh_from_db()
    assert token.last_used_at is not None


@pytest.mark.parametrize(
    "header",
    [
        "Bearer wb_not-a-real-token",
        "Bearer ",
        "Bearer",
        "bearer wb_" + "x" * 43,
    ],
)
def test_unknown_or_malformed_bearer_tokens_get_401(viewer_client, header):
    """A bearer header that names no live token is refused, even beside a valid session."""
    response = viewer_client.get(url("/claims"), headers={"Authorization": header})

    assert response.status_code == 401


def test_revoked_token_gets_401(viewer, token_for):
    """A revoked token no longer authenticates."""
    secret = token_for(viewer)
    ApiToken.objects.update(revoked_at=timezone.now())

    response = Client().get(url("/claims"), headers=bearer(secret))

    assert response.status_code == 401
    assert response.json() == {"detail": "invalid, revoked or expired API token"}


def test_token_of_an_inactive_user_gets_401(viewer, token_for):
    """Deactivating a user disables their tokens."""
    secret = token_for(viewer)
    viewer.is_active = False
    viewer.save()

    assert Client().get(url("/claims"), headers=bearer(secret)).status_code == 401


def test_tokens_are_stored_hashed(viewer, token_for):
    """Only the SHA-256 of the secret and its 8-character prefix are stored."""
    secret = token_for(viewer)
    token = ApiToken.objects.get()

    assert token.token_hash == hashlib.sha256(secret.encode()).hexdigest()
    assert token.prefix == secret[:8]
    stored = [str(value) for value in ApiToken.objects.values().get().values()]
    assert not any(secret in value for value in stored)
    assert secret not in str(token)


def test_token_secrets_never_reach_the_logs(viewer, token_for, caplog, settings):
    """Neither a good nor a bad token appears in any log record, even in debug mode."""
    settings.DEBUG = True
    secret = token_for(viewer)
    caplog.set_level(logging.DEBUG)

    Client().get(url("/claims"), headers=bearer(secret))
    Client().get(url("/claims"), headers={"Authorization": "Token " + secret})
    Client().get(url("/claims"), headers=bearer(secret + "x"))

    assert secret not in caplog.text


def test_session_writes_need_the_csrf_token(world, operator):
    """A session POST without the CSRF token is refused (403); with it, it goes through."""
    client = Client(enforce_csrf_checks=True)
    client.force_login(operator)
    body = {"expected_epoch": 3, "reason": "stuck"}
    before = snapshot()

    refused = post(client, wf_url("wf-1", "/claim/release"), body)

    assert refused.status_code == 403
    assert refused.json() == {"detail": "CSRF check failed"}
    assert snapshot() == before

    csrf = "A" * 32
    client.cookies["csrftoken"] = csrf
    accepted = post(client, wf_url("wf-1", "/claim/release"), body, headers={"X-CSRFToken": csrf})

    assert accepted.status_code == 200, accepted.content


@override_settings(WEFTBOARD_API_WRITE_RATE="2/min")
def test_writes_beyond_the_rate_get_429(operator_client):
    """The third write in a minute at 2/min answers 429 with Retry-After; reads stay open."""
    path = wf_url("missing", "/cancel")

    responses = [post(operator_client, path, {"reason": "r"}) for _ in range(3)]

    assert [r.status_code for r in responses] == [404, 404, 429]
    assert responses[-1].json() == {"detail": "Too many requests."}
    assert 0 < int(responses[-1]["Retry-After"]) <= 60
    assert operator_client.get(url("/claims")).status_code == 200


@override_settings(WEFTBOARD_API_WRITE_RATE="5/s")
def test_writes_across_a_window_boundary_stay_within_the_rate(operator_client):
    """The limit's worth of writes late in one second, then more just after it: a fixed
    window let both bursts through, twice the rate within half a second."""
    path = wf_url("missing", "/cancel")

    def timed_write() -> tuple[float, float, int]:
        sent = time.time()
        status = post(operator_client, path, {"reason": "r"}).status_code
        return sent, time.time(), status

    for _ in range(3):  # a machine too busy to finish the first burst in time: again
        forget_rate_counts()
        time.sleep((0.5 - time.time() % 1) % 1)
        first = [timed_write() for _ in range(5)]
        time.sleep((0.02 - time.time() % 1) % 1)
        second = [timed_write() for _ in range(5)]
        within_a_second = [s for _, answered, s in second if answered < first[0][0] + 1]
        if within_a_second:
            break

    assert [status for _, _, status in first] == [404] * 5  # let through
    assert within_a_second
    assert set(within_a_second) == {429}


@override_settings(WEFTBOARD_API_WRITE_RATE="1/min")
def test_the_write_rate_is_counted_per_user(operator_client, django_user_model):
    """One user's writes do not use up another's allowance."""
    other = django_user_model.objects.create_user("other")
    other_client = Client()
    other_client.force_login(other)
    cancel = wf_url("missing", "/cancel")
    assert post(operator_client, cancel, {"reason": "r"}).status_code == 404

    assert post(other_client, cancel, {"reason": "r"}).status_code == 403
    assert post(operator_client, cancel, {"reason": "r"}).status_code == 429


def test_docs_need_a_login(client, viewer_client):
    """The OpenAPI page and schema are for logged-in users only."""
    assert client.get(url("/docs")).status_code == 302
    assert client.get(url("/openapi.json")).status_code == 302
    assert viewer_client.get(url("/docs")).status_code == 200
    schema = viewer_client.get(url("/openapi.json")).json()
    assert "/api/v1/workflows/{workflow_id}/claim/takeover" in schema["paths"]
