"""Read-only mode covers the admin: every write there is refused with the reason shown;
reading, and signing in and out, stay open."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from claims.models import ApiToken
from claims.services.tokens import api_token_mint

pytestmark = pytest.mark.django_db

REASON = "database migration"


@pytest.fixture
def read_only(settings):
    settings.WEFTBOARD_READ_ONLY = REASON


def refused(response) -> bool:
    return response.status_code == 403 and REASON in response.content.decode()


def test_adding_a_user_is_refused(admin_client, read_only):
    response = admin_client.post(
        "/admin/auth/user/add/",
        {"username": "mallory", "password1": "x-9Lq!zz-long", "password2": "x-9Lq!zz-long"},
    )

    assert refused(response)
    assert not get_user_model().objects.filter(username="mallory").exists()


def test_granting_superuser_is_refused(admin_client, admin_user, read_only, django_user_model):
    user = django_user_model.objects.create_user("bob")

    response = admin_client.post(
        f"/admin/auth/user/{user.pk}/change/",
        {"username": "bob", "is_superuser": "on", "is_staff": "on", "is_active": "on"},
    )

    assert refused(response)
    user.refresh_from_db()
    assert not user.is_superuser


def test_minting_and_revoking_tokens_are_refused(admin_client, admin_user, read_only):
    api_token_mint(ApiToken(name="kept", user=admin_user, scope="write"))
    token = ApiToken.objects.get()

    minted = admin_client.post(
        "/admin/claims/apitoken/add/", {"name": "new", "user": admin_user.pk, "scope": "write"}
    )
    revoked = admin_client.post(
        "/admin/claims/apitoken/", {"action": "revoke", "_selected_action": [token.pk]}
    )

    assert refused(minted)
    assert refused(revoked)
    assert ApiToken.objects.count() == 1
    token.refresh_from_db()
    assert token.revoked_at is None


def test_reading_the_admin_and_signing_in_stay_open(admin_user, read_only):
    client = Client()
    login = client.post(
        "/admin/login/?next=/admin/", {"username": admin_user.username, "password": "password"}
    )

    assert login.status_code == 302
    assert client.get("/admin/auth/user/").status_code == 200
    assert client.post("/admin/logout/").status_code in (200, 302)


def test_without_the_switch_the_admin_writes(admin_client):
    response = admin_client.post(
        "/admin/auth/user/add/",
        {"username": "carol", "password1": "x-9Lq!zz-long", "password2": "x-9Lq!zz-long"},
    )

    assert response.status_code == 302
    assert get_user_model().objects.filter(username="carol").exists()
