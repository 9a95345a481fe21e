"""The project is wired: pages, health, metrics and startup checks answer as designed."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django.core.management.base import SystemCheckError
from django.test import override_settings
from prometheus_client.parser import text_string_to_metric_families


def test_overview_redirects_anonymous_user_to_login(client):
    """An anonymous visitor is sent to the login page, with the overview as `next`."""
    response = client.get("/")

    assert response.status_code == 302
    assert response["Location"] == "/login/?next=/"


@pytest.mark.django_db
def test_overview_renders_for_logged_in_user(admin_client):
    """A logged-in user sees the full page: layout, nav bar and the fleet cards."""
    response = admin_client.get("/")

    assert response.status_code == 200
    html = response.content.decode()
    assert "<nav" in html
    assert "Workflows by status" in html
    assert "Claims" in html


@pytest.mark.django_db
def test_overview_htmx_request_gets_only_the_live_fragment(admin_client):
    """An HTMX request gets the live fragment without the surrounding layout."""
    response = admin_client.get("/", headers={"HX-Request": "true"})

    assert response.status_code == 200
    html = response.content.decode()
    assert 'id="overview-live"' in html
    assert "<html" not in html
    assert 'aria-label="Main"' not in html  # the site's navigation is the layout's


def test_healthz_answers_ok_without_login(client):
    """/healthz is a plain-text liveness probe that needs no login."""
    response = client.get("/healthz")

    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain")
    assert response.content == b"ok"


def test_metrics_is_prometheus_text(client, db):
    """/metrics parses as Prometheus text and carries django-prometheus's request metrics."""
    client.get("/healthz")

    response = client.get("/metrics")

    assert response.status_code == 200
    families = {f.name: f for f in text_string_to_metric_families(response.content.decode())}
    requests = families["django_http_requests_before_middlewares"]
    assert requests.type == "counter"
    assert requests.samples[0].value >= 1


def test_default_claim_settings_pass_the_system_check():
    """The defaults (30s TTL, 5s renew interval) raise no claims error."""
    call_command("check")


@pytest.mark.parametrize(
    ("ttl", "renew_interval", "message"),
    [
        ("10s", "5s", "ttl must be at least 3 x renew interval"),
        ("5s", "5s", "renew interval must be strictly less than ttl"),
        ("soon", "5s", "ttl must be a duration like '30s'"),
    ],
)
def test_bad_claim_timing_fails_the_system_check_with_the_rule(ttl, renew_interval, message):
    """A bad WEFT_CLAIM_TTL / WEFT_CLAIM_RENEW_INTERVAL stops `check` with claims.E001."""
    with (
        override_settings(WEFT_CLAIM_TTL=ttl, WEFT_CLAIM_RENEW_INTERVAL=renew_interval),
        pytest.raises(SystemCheckError) as raised,
    ):
        call_command("check")

    assert "claims.E001" in str(raised.value)
    assert message in str(raised.value)
    assert f"WEFT_CLAIM_TTL={ttl!r}" in str(raised.value)


@pytest.mark.parametrize("mode", ["lease", "engine_lease", ""])
def test_an_ownership_mode_no_engine_runs_fails_the_system_check(mode):
    """weft's "lease" mode, a misspelling or an empty value: claims.E002 names the setting
    and the two modes an engine runs."""
    with override_settings(WEFT_OWNERSHIP_MODE=mode), pytest.raises(SystemCheckError) as raised:
        call_command("check")

    assert "claims.E002" in str(raised.value)
    assert f"WEFT_OWNERSHIP_MODE={mode!r}" in str(raised.value)
    assert "workflow-lease, engine-lease" in str(raised.value)


@pytest.mark.parametrize("mode", ["workflow-lease", "engine-lease"])
def test_each_mode_an_engine_runs_passes_the_system_check(mode):
    with override_settings(WEFT_OWNERSHIP_MODE=mode):
        call_command("check")
