"""Reads are limited per user like writes (WEFTBOARD_READ_RATE): pages, their live
fragments and the API's GET routes count against one allowance per user, answered 429
with Retry-After (a page, a notice for an htmx poll, JSON in the API); /metrics, /healthz,
static files and signing in are not counted, nor are writes, which have their own limit."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import SystemCheckError
from django.test import Client, override_settings
from prometheus_client import REGISTRY

from claims.http.user_limits import READS
from claims.models import ApiToken
from claims.services.tokens import api_token_mint
from tests import factories

pytestmark = pytest.mark.django_db

LIMIT = 3
FEW_READS = override_settings(WEFTBOARD_READ_RATE=f"{LIMIT}/min")


@pytest.fixture
def viewer() -> Any:
    return factories.make_user("viewer")


@pytest.fixture
def operator() -> Any:
    return factories.make_user("operator", factories.WRITE_PERMISSIONS)


def read_token(user: Any) -> dict[str, str]:
    secret = api_token_mint(ApiToken(name="script", user=user, scope="read"))
    return {"Authorization": f"Bearer {secret}"}


def use_up_reads(client: Client, path: str = "/engines/") -> None:
    for _ in range(LIMIT):
        assert client.get(path).status_code == 200


def assert_retry_after_a_minute_at_most(response: Any) -> None:
    assert 0 < int(response["Retry-After"]) <= 60


@FEW_READS
def test_a_page_read_over_the_rate_is_a_429_page_that_says_when_to_come_back(viewer_client):
    use_up_reads(viewer_client)

    refused = viewer_client.get("/claims/")

    assert refused.status_code == 429
    assert_retry_after_a_minute_at_most(refused)
    page = refused.content.decode()
    assert "Too many requests" in page
    assert f"More than {LIMIT} reads in a minute" in page
    assert f"Reading resumes in {refused['Retry-After']} s" in page
    assert "<nav" in page  # the site's frame, with its way back


@FEW_READS
def test_an_htmx_poll_over_the_rate_gets_a_notice_in_the_flash_region(viewer_client):
    use_up_reads(viewer_client)

    refused = viewer_client.get("/engines/", HTTP_HX_REQUEST="true")

    assert refused.status_code == 429
    assert refused["HX-Retarget"] == "#flash"
    assert "Reading resumes in" in refused.content.decode()
    assert "<nav" not in refused.content.decode()


@FEW_READS
def test_the_api_answers_json_429_and_shares_the_allowance_with_the_pages(viewer, viewer_client):
    token = read_token(viewer)
    viewer_client.get("/")
    assert Client().get("/api/v1/engines", headers=token).status_code == 200
    assert viewer_client.get("/api/v1/claims").status_code == 200

    refused = Client().get("/api/v1/engines", headers=token)

    assert refused.status_code == 429
    assert refused.json() == {"detail": "Too many requests."}
    assert_retry_after_a_minute_at_most(refused)
    assert viewer_client.get("/").status_code == 429


@FEW_READS
def test_each_user_has_an_allowance_of_their_own(viewer_client, operator_client):
    use_up_reads(viewer_client)

    assert operator_client.get("/engines/").status_code == 200
    assert viewer_client.get("/engines/").status_code == 429


@FEW_READS
@override_settings(WEFTBOARD_API_WRITE_RATE="1/min")
def test_reads_and_writes_are_counted_apart(operator_client):
    use_up_reads(operator_client)
    cancel = "/api/v1/workflows/missing/cancel"

    write = operator_client.post(cancel, {"reason": "r"}, content_type="application/json")

    assert write.status_code == 404  # let through: the unknown workflow
    assert operator_client.get("/api/v1/engines").status_code == 429
    again = operator_client.post(cancel, {"reason": "r"}, content_type="application/json")
    assert again.status_code == 429  # the write limit, on its own count


@FEW_READS
def test_metrics_health_static_files_and_signing_in_are_not_counted(viewer_client):
    use_up_reads(viewer_client)

    assert viewer_client.get("/metrics").status_code == 200
    assert viewer_client.get("/healthz").status_code == 200
    assert viewer_client.get("/login/").status_code == 302  # signed in: on to the site
    assert viewer_client.get("/engines/").status_code == 429
    static = viewer_client.get("/static/weftboard.css")
    static.close()  # a file response: give the file back (last: this ends the request)
    assert static.status_code == 200


@FEW_READS
def test_anonymous_reads_are_not_counted_but_sent_to_sign_in(viewer_client):
    anonymous = Client()
    for _ in range(LIMIT + 2):
        response = anonymous.get("/engines/")
        assert response.status_code == 302
        assert response["Location"].startswith("/login/")
    use_up_reads(viewer_client)


UNREACHABLE_CACHE = {
    "default": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        # Nothing listens on port 1; the client fails at once.
        "LOCATION": "redis://127.0.0.1:1/0",
        "OPTIONS": {"socket_connect_timeout": 0.5},
    }
}


@override_settings(WEFTBOARD_READ_RATE="1/min", CACHES=UNREACHABLE_CACHE)
def test_reads_go_through_uncounted_while_the_cache_does_not_answer(
    viewer_client, caplog, monkeypatch
):
    # As in a fresh process: no warning logged yet.
    monkeypatch.setattr(READS, "_last_warned", float("-inf"))
    before = REGISTRY.get_sample_value("weftboard_reads_uncounted_total") or 0.0
    with caplog.at_level(logging.WARNING, logger="weftboard.limits"):
        statuses = [viewer_client.get("/engines/").status_code for _ in range(3)]

    assert statuses == [200, 200, 200]
    assert REGISTRY.get_sample_value("weftboard_reads_uncounted_total") == before + 3
    # Polling pages would flood the log: one warning a minute per process.
    assert caplog.text.count("read limit not counted: the cache did not answer") == 1


@override_settings(WEFTBOARD_READ_RATE="off")
def test_the_read_limit_can_be_turned_off(viewer_client):
    assert {viewer_client.get("/engines/").status_code for _ in range(20)} == {200}


@pytest.mark.parametrize(
    ("setting", "value"),
    [
        ("WEFTBOARD_READ_RATE", "600"),
        ("WEFTBOARD_READ_RATE", "0/min"),
        ("WEFTBOARD_READ_RATE", "600/fortnight"),
        ("WEFTBOARD_READ_RATE", "600/month"),
        ("WEFTBOARD_API_WRITE_RATE", "fast"),
    ],
)
def test_a_rate_that_does_not_parse_fails_the_system_check(setting, value):
    with override_settings(**{setting: value}), pytest.raises(SystemCheckError) as raised:
        call_command("check")

    assert "claims.E003" in str(raised.value)
    assert f"{setting}: a rate is a whole number per s, min, h or d" in str(raised.value)
