"""Signing in behind a TLS proxy: with the proxy's header trusted, the https Origin of the
login POST passes the CSRF check; a proxy that renames the site needs its origin listed."""

from __future__ import annotations

import pytest
from django.test import Client, override_settings

pytestmark = pytest.mark.django_db

HOST = "weftboard.example.com"


@pytest.fixture
def alice(django_user_model):
    return django_user_model.objects.create_user("alice", password="alice-pw-123")


def login_through_the_proxy(origin: str, host: str = HOST) -> int:
    """A browser at ``origin``; the proxy passes plain http on, with its header."""
    client = Client(enforce_csrf_checks=True, HTTP_HOST=host, HTTP_X_FORWARDED_PROTO="https")
    client.get("/login/")
    token = client.cookies["csrftoken"].value
    response = client.post(
        "/login/",
        {"username": "alice", "password": "alice-pw-123", "csrfmiddlewaretoken": token},
        HTTP_ORIGIN=origin,
        HTTP_REFERER=f"{origin}/login/",
    )
    return response.status_code


@override_settings(ALLOWED_HOSTS=[HOST])
def test_without_the_proxy_header_setting_the_https_login_is_refused(alice):
    assert login_through_the_proxy(f"https://{HOST}") == 403


@override_settings(
    ALLOWED_HOSTS=[HOST], SECURE_PROXY_SSL_HEADER=("HTTP_X_FORWARDED_PROTO", "https")
)
def test_with_the_proxy_header_trusted_the_https_login_goes_through(alice):
    assert login_through_the_proxy(f"https://{HOST}") == 302


@override_settings(
    ALLOWED_HOSTS=["weftboard.internal"],
    SECURE_PROXY_SSL_HEADER=("HTTP_X_FORWARDED_PROTO", "https"),
)
def test_a_proxy_that_renames_the_site_needs_its_origin_trusted(alice):
    origin = "https://ops.example.com"
    assert login_through_the_proxy(origin, host="weftboard.internal") == 403

    with override_settings(CSRF_TRUSTED_ORIGINS=[origin]):
        assert login_through_the_proxy(origin, host="weftboard.internal") == 302


@override_settings(SESSION_COOKIE_SECURE=True, CSRF_COOKIE_SECURE=True)
def test_secure_cookies_are_marked_secure(alice):
    client = Client(HTTP_X_FORWARDED_PROTO="https")
    client.get("/login/")
    assert client.cookies["csrftoken"]["secure"] is True
    client.post("/login/", {"username": "alice", "password": "alice-pw-123"})
    assert client.cookies["sessionid"]["secure"] is True
    assert client.cookies["sessionid"]["httponly"] is True


@override_settings(SECURE_SSL_REDIRECT=True, SECURE_HSTS_SECONDS=300)
def test_https_redirect_spares_health_and_metrics_and_hsts_is_sent_over_https(client):
    assert client.get("/login/").status_code == 301
    assert client.get("/healthz").status_code == 200
    assert client.get("/metrics").status_code == 200

    secure = client.get("/login/", secure=True)
    assert secure["Strict-Transport-Security"] == "max-age=300"
