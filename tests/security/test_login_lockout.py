"""Both sign-in pages lock a user name at an address after repeated failures (django-axes):
a clear page, the right password refused while locked, other names and addresses
unaffected, unlocked by a command or from the admin, a forged X-Forwarded-For no way out."""

from __future__ import annotations

import logging

import pytest
from axes.models import AccessAttempt
from django.conf import settings
from django.core.management import call_command
from django.test import Client, override_settings

from tests.log_reader import read_braced

pytestmark = pytest.mark.django_db

LOGINS = ["/login/", "/admin/login/"]
PASSWORD = "alice-pw-123"


@pytest.fixture
def alice(django_user_model):
    # Staff, so the admin's sign-in admits her too.
    return django_user_model.objects.create_user("alice", password=PASSWORD, is_staff=True)


def sign_in(
    path: str, password: str, *, address: str = "10.0.0.7", username: str = "alice", **extra
):
    client = Client(REMOTE_ADDR=address, **extra)
    response = client.post(path, {"username": username, "password": password})
    return response


def fail_until_locked(path: str, **extra) -> list[int]:
    return [sign_in(path, "wrong", **extra).status_code for _ in range(settings.AXES_FAILURE_LIMIT)]


@pytest.mark.parametrize("path", LOGINS)
def test_repeated_failures_lock_the_name_at_that_address_with_a_clear_page(alice, path, caplog):
    with caplog.at_level(logging.WARNING, logger="axes"):
        statuses = fail_until_locked(path)

    # Every failure before the limit is the form again; the one that reaches it locks.
    assert statuses == [200] * (settings.AXES_FAILURE_LIMIT - 1) + [429]
    locked = sign_in(path, PASSWORD)
    assert locked.status_code == 429
    page = locked.content.decode()
    assert "Sign-in locked" in page
    assert "axes_reset_username alice" in page
    assert "15 m 00 s" in page
    assert "sessionid" not in locked.cookies
    # The log says it happened; who and from where are masked there (a user name field
    # sometimes holds a password) and listed in the admin's access attempts.
    assert "New login failure" in caplog.text
    assert "after repeated login failures" in caplog.text
    assert AccessAttempt.objects.get(username="alice").ip_address == "10.0.0.7"


@pytest.mark.parametrize("path", LOGINS)
def test_a_lock_holds_one_name_at_one_address_only(alice, django_user_model, path):
    django_user_model.objects.create_user("bob", password="bob-pw-123", is_staff=True)
    fail_until_locked(path)

    assert sign_in(path, PASSWORD, address="10.0.0.8").status_code == 302
    assert sign_in(path, "bob-pw-123", username="bob").status_code == 302


def test_the_two_sign_in_pages_share_one_count(alice):
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        sign_in("/login/", "wrong")

    assert sign_in("/admin/login/", "wrong").status_code == 429
    assert sign_in("/login/", PASSWORD).status_code == 429


def test_a_success_before_the_limit_starts_the_count_again(alice):
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        sign_in("/login/", "wrong")
    assert sign_in("/login/", PASSWORD).status_code == 302

    assert sign_in("/login/", "wrong").status_code == 200
    assert sign_in("/login/", PASSWORD).status_code == 302


def test_the_reset_command_unlocks_the_name(alice):
    fail_until_locked("/login/")
    assert sign_in("/login/", PASSWORD).status_code == 429

    call_command("axes_reset_username", "alice")

    assert sign_in("/login/", PASSWORD).status_code == 302


def test_a_superuser_unlocks_the_name_from_the_admin(alice, django_user_model):
    fail_until_locked("/login/")
    admin = django_user_model.objects.create_superuser("root", password="root-pw-123")
    client = Client()
    client.force_login(admin)
    attempt = AccessAttempt.objects.get(username="alice")

    listing = client.get("/admin/axes/accessattempt/")
    assert listing.status_code == 200
    assert "alice" in listing.content.decode()
    deleted = client.post(f"/admin/axes/accessattempt/{attempt.pk}/delete/", {"post": "yes"})

    assert deleted.status_code == 302
    assert sign_in("/login/", PASSWORD).status_code == 302


def test_a_forged_forwarded_for_header_does_not_escape_the_lock(alice):
    for n in range(settings.AXES_FAILURE_LIMIT):
        sign_in("/login/", "wrong", HTTP_X_FORWARDED_FOR=f"203.0.113.{n}")

    assert sign_in("/login/", PASSWORD, HTTP_X_FORWARDED_FOR="198.51.100.1").status_code == 429


@override_settings(WEFTBOARD_TRUSTED_PROXY_COUNT=1)
def test_behind_a_trusted_proxy_the_lock_follows_the_forwarded_address(alice):
    proxy = "10.0.0.1"
    for _ in range(settings.AXES_FAILURE_LIMIT):
        sign_in("/login/", "wrong", address=proxy, HTTP_X_FORWARDED_FOR="203.0.113.9")

    # What the client itself wrote further left does not change its address.
    forged = "198.51.100.1, 203.0.113.9"
    assert (
        sign_in("/login/", PASSWORD, address=proxy, HTTP_X_FORWARDED_FOR=forged).status_code == 429
    )
    other = sign_in("/login/", PASSWORD, address=proxy, HTTP_X_FORWARDED_FOR="203.0.113.10")
    assert other.status_code == 302


def test_a_changing_user_agent_does_not_escape_the_lock(alice):
    for n in range(settings.AXES_FAILURE_LIMIT):
        sign_in("/login/", "wrong", HTTP_USER_AGENT=f"agent-{n}")

    assert sign_in("/login/", PASSWORD, HTTP_USER_AGENT="another").status_code == 429


def test_an_ipv6_client_counts_as_its_slash_64(alice):
    """One host holds a whole /64: new addresses in it are no fresh tries."""
    for n in range(1, settings.AXES_FAILURE_LIMIT + 1):
        sign_in("/login/", "wrong", address=f"2001:db8:1:2::{n:x}")

    assert sign_in("/login/", PASSWORD, address="2001:db8:1:2:ffff::1").status_code == 429
    assert sign_in("/login/", PASSWORD, address="2001:db8:1:3::1").status_code == 302


@override_settings(WEFTBOARD_TRUSTED_PROXY_COUNT=1)
def test_a_forwarded_entry_that_is_no_address_counts_as_the_proxy(alice):
    for _ in range(settings.AXES_FAILURE_LIMIT):
        sign_in("/login/", "wrong", address="10.0.0.1", HTTP_X_FORWARDED_FOR="unknown")

    assert sign_in("/login/", PASSWORD, address="10.0.0.1").status_code == 429


HOSTILE_AGENT = 'curl/8", ip_address: "203.0.113.66", username: "root\n\x1b[2K\u2028forged'
MASKED = "********************"


def test_a_hostile_user_agent_cannot_forge_a_field_of_the_lockout_log(alice, caplog):
    """The user agent is escaped in every line axes logs: the name and the address stay
    the masked ones, and the agent reads back as itself."""
    with caplog.at_level(logging.INFO, logger="axes"):
        fail_until_locked("/login/", HTTP_USER_AGENT=HOSTILE_AGENT)

    named = [r.getMessage() for r in caplog.records if r.name.startswith("axes")]
    clients = [m[m.index("{") : m.rindex("}") + 1] for m in named if "{" in m]
    assert any("New login failure" in m for m in named)
    assert any("after repeated login failures" in m for m in named)
    assert clients
    for client in clients:
        assert read_braced(client) == [
            ("username", MASKED),
            ("ip_address", MASKED),
            ("user_agent", HOSTILE_AGENT),
            ("path_info", "/login/"),
        ]
    logged = "".join(named)
    assert "\n" not in logged
    assert "\u2028" not in logged
