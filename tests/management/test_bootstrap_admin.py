"""bootstrap_admin: the login it prints always works."""

from __future__ import annotations

import io

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import Client, override_settings

pytestmark = pytest.mark.django_db


def signs_in(username: str, password: str) -> bool:
    """Through the sign-in page, as the operator reading the printed login would."""
    response = Client().post("/login/", {"username": username, "password": password})
    return response.status_code == 302


def bootstrap() -> str:
    out = io.StringIO()
    call_command("bootstrap_admin", stdout=out)
    login = [line for line in out.getvalue().splitlines() if line.startswith("Login: ")]
    assert len(login) == 1, out.getvalue()
    return login[0].split(" / ", 1)[1]


def test_first_run_creates_admin_and_later_runs_print_the_same_working_login(tmp_path):
    """A new admin gets a random password, kept and printed again on the next run."""
    with override_settings(VAR_DIR=tmp_path / "var"):
        first = bootstrap()
        second = bootstrap()

    assert first == second
    assert signs_in("admin", first)


def test_a_kept_password_that_does_not_match_is_replaced_by_a_working_one(tmp_path):
    """When the kept password belongs to another database, a new one is set and printed."""
    get_user_model().objects.create_superuser("admin", "", "set-elsewhere")
    with override_settings(VAR_DIR=tmp_path / "var"):
        bootstrap()  # no kept file yet: a new password
        kept = next((tmp_path / "var").glob("admin-password*.txt"))
        kept.write_text("stale-password\n")
        printed = bootstrap()

    assert printed != "stale-password"
    assert signs_in("admin", printed)
