"""The engine-lease mode on the engine pages: each engine's session (epoch, expiry
countdown, last renewal), its claims' expiry and states as the session's, and a silent
engine's takeover time from its session."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from claims.models import EngineSession, WorkflowClaim

from .conftest import RENEW_MS, TTL_MS, htmx, make_engine, now_ms

pytestmark = pytest.mark.django_db

GRACE_MS = 2 * RENEW_MS
SILENT_MS = TTL_MS + GRACE_MS + 1_000


def open_session(engine_id: str, *, epoch: int = 3, expires_in_ms: int = TTL_MS, **fields: Any):
    now = now_ms()
    values: dict[str, Any] = {
        "epoch": epoch,
        "expires_at_ms": now + expires_in_ms,
        "renewed_at_ms": now + expires_in_ms - TTL_MS,
        "started_at_ms": now - 60_000,
        **fields,
    }
    return EngineSession.objects.create(engine_id=engine_id, **values)


def session_claim(workflow_id: str, engine_id: str, session_epoch: int = 3) -> WorkflowClaim:
    return WorkflowClaim.objects.create(
        workflow_id=workflow_id,
        epoch=2,
        holder_engine_id=engine_id,
        holder_epoch=2,
        holder_claimed_at_ms=now_ms() - 5_000,
        holder_session_epoch=session_epoch,
    )


def test_the_engine_page_shows_its_session_epoch_expiry_countdown_and_renewal(
    operator_client: Any,
) -> None:
    make_engine("e-1")
    session = open_session("e-1", epoch=3)

    html = operator_client.get("/engines/e-1/").content.decode()

    shown = html[html.index('id="engine-session"') :]
    shown = shown[: shown.index("</dd>")]
    assert "epoch 3" in shown
    assert f'data-expires-at="{session.expires_at_ms}"' in shown  # the live countdown
    assert f'data-grace-ms="{GRACE_MS}"' in shown
    assert "renewed <time" in shown


def test_a_session_closed_for_takeover_names_the_engine_that_closed_it(
    operator_client: Any,
) -> None:
    make_engine("e-1")
    open_session("e-1", closed_at_ms=now_ms() - 2_000, closed_by="e-2")

    html = operator_client.get("/engines/e-1/").content.decode()

    shown = html[html.index('id="engine-session"') :]
    assert "closed <time" in shown[: shown.index("</dd>")]
    assert 'href="/engines/e-2/"' in shown[: shown.index("</dd>")]


def test_a_workflow_lease_engine_shows_no_session(operator_client: Any) -> None:
    make_engine("e-1")

    html = operator_client.get("/engines/e-1/").content.decode()
    listing = operator_client.get("/engines/", **htmx("engines-live")).content.decode()

    assert 'id="engine-session"' not in html
    assert "session" not in listing.split("<tbody>", 1)[1]


def test_the_engines_list_shows_each_session_without_a_query_more(
    operator_client: Any, django_assert_max_num_queries: Any
) -> None:
    for n in range(5):
        make_engine(f"e-{n}")
        open_session(f"e-{n}", epoch=n + 1)
    operator_client.get("/engines/", **htmx("engines-live"))  # warm the session and labels

    make_engine("e-plain")
    with CaptureQueriesContext(connection) as five:
        operator_client.get("/engines/", **htmx("engines-live"))
    for n in range(5, 10):
        make_engine(f"e-{n}")
        open_session(f"e-{n}", epoch=n + 1)
    with django_assert_max_num_queries(len(five.captured_queries)):
        html = operator_client.get("/engines/", **htmx("engines-live")).content.decode()

    for n in range(10):
        assert f"<small>session {n + 1} · expires <time" in html


def test_a_session_claims_state_and_expiry_are_its_sessions(operator_client: Any) -> None:
    make_engine("e-1")
    session = open_session("e-1", expires_in_ms=-1_000)  # lapsed a second ago: in grace
    session_claim("wf-1", "e-1")

    claims_page = operator_client.get("/claims/?engine=e-1").content.decode()
    engine_page = operator_client.get("/engines/e-1/").content.decode()

    assert f'data-expires-at="{session.expires_at_ms}"' in claims_page
    assert "in-grace" in claims_page
    assert "in-grace" in engine_page


def test_a_silent_engines_takeover_time_is_its_sessions_expiry_plus_grace(
    operator_client: Any,
) -> None:
    make_engine("e-quiet", heartbeat_at_ms=now_ms() - SILENT_MS)
    session = open_session("e-quiet", expires_in_ms=-1_000)
    session_claim("wf-1", "e-quiet")

    response = operator_client.get("/api/v1/engines")
    html = operator_client.get("/engines/", **htmx("engines-live")).content.decode()

    assert "holds no claim" not in html
    assert "<small>takeover <time" in html
    [quiet] = [e for e in response.json()["items"] if e["engine_id"] == "e-quiet"]
    assert quiet["display_status"] == "silent"
    assert quiet["takeover_at_ms"] == session.expires_at_ms + GRACE_MS
    assert quiet["session"]["epoch"] == 3
    assert quiet["session"]["expires_at_ms"] == session.expires_at_ms
