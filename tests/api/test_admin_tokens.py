"""API tokens in the admin: the secret is shown once, after save, and never again."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.contrib.admin.models import ADDITION, CHANGE, LogEntry
from django.contrib.auth.models import Permission
from django.test import Client
from django.utils import timezone

from claims.models import ApiToken
from claims.selectors.tokens import token_hash

from .conftest import bearer, url

pytestmark = pytest.mark.django_db

ADD = "/admin/claims/apitoken/add/"


@pytest.fixture
def added(admin_client, viewer):
    """Add a write token for the viewer through the admin; returns (response, secret)."""
    response = admin_client.post(ADD, {"name": "deploy bot", "user": viewer.pk, "scope": "write"})
    assert response.status_code == 200
    messages = [str(message) for message in response.context["messages"]]
    secret = next(match.group(0) for m in messages if (match := re.search(r"wb_[\w-]{43}", m)))
    return response, secret


def test_adding_a_token_shows_its_secret_once(added, admin_client):
    """The page after save shows the secret; the list and the token's page never do."""
    response, secret = added
    token = ApiToken.objects.get()

    assert secret in response.content.decode()
    # Nothing was left over for the messages cookie to carry to the next page.
    assert not response.cookies.get("messages", None) or not response.cookies["messages"].value
    assert token.token_hash == token_hash(secret)
    assert (token.name, token.scope) == ("deploy bot", "write")
    assert secret not in admin_client.get("/admin/claims/apitoken/").content.decode()
    change = admin_client.get(f"/admin/claims/apitoken/{token.pk}/change/").content.decode()
    assert secret not in change
    assert token.token_hash not in change
    assert token.prefix in change


def test_the_shown_secret_authenticates(added):
    """The secret from the admin message works as a bearer token."""
    _, secret = added

    assert Client().get(url("/claims"), headers=bearer(secret)).status_code == 200


def test_the_add_form_asks_a_superuser_for_name_user_scope_and_expiry(admin_client):
    """Prefix and hash are minted, never typed in."""
    form = admin_client.get(ADD).context["adminform"].form

    assert set(form.fields) == {"name", "user", "scope", "expires_at"}


@pytest.fixture
def staff(django_user_model):
    """Staff with every token permission and nothing else: not a superuser."""
    user = django_user_model.objects.create_user("staff", password="pw", is_staff=True)
    user.user_permissions.set(
        Permission.objects.filter(content_type__app_label="claims", codename__endswith="apitoken")
    )
    client = Client()
    client.force_login(user)
    return user, client


def test_staff_cannot_mint_a_token_for_another_user(staff, admin_user):
    """The form has no user field; a posted one is ignored: the token is the staff's own."""
    user, client = staff
    assert "user" not in client.get(ADD).context["adminform"].form.fields

    response = client.post(ADD, {"name": "escalate", "user": admin_user.pk, "scope": "write"})

    assert response.status_code == 200
    assert ApiToken.objects.get().user == user


def test_staff_sees_and_revokes_only_their_own_tokens(staff, admin_user, token_for):
    user, client = staff
    token_for(user, name="mine")
    theirs_secret = token_for(admin_user, name="theirs")
    theirs = ApiToken.objects.get(name="theirs")

    listed = client.get("/admin/claims/apitoken/").content.decode()
    client.post("/admin/claims/apitoken/", {"action": "revoke", "_selected_action": [theirs.pk]})

    assert "mine" in listed
    assert "theirs" not in listed
    assert client.get(f"/admin/claims/apitoken/{theirs.pk}/change/").status_code in (302, 404)
    theirs.refresh_from_db()
    assert theirs.revoked_at is None
    assert Client().get(url("/claims"), headers=bearer(theirs_secret)).status_code == 200


def test_token_actions_are_in_the_admin_history_with_the_acting_user(staff):
    _user, client = staff
    client.post(ADD, {"name": "ci", "scope": "read"})
    token = ApiToken.objects.get()
    client.post("/admin/claims/apitoken/", {"action": "revoke", "_selected_action": [token.pk]})

    history = list(
        LogEntry.objects.filter(object_id=str(token.pk)).values_list(
            "user__username", "action_flag"
        )
    )
    assert sorted(history) == [("staff", ADDITION), ("staff", CHANGE)]


def test_an_expired_token_is_refused_and_shown_as_expired(admin_client, viewer, token_for):
    secret = token_for(viewer)
    ApiToken.objects.update(expires_at=timezone.now() - timedelta(seconds=1))

    response = Client().get(url("/claims"), headers=bearer(secret))

    assert response.status_code == 401
    assert "expired" in response.json()["detail"]
    assert "expired" in admin_client.get("/admin/claims/apitoken/").content.decode()


def test_a_token_before_its_expiry_works(viewer, token_for):
    secret = token_for(viewer)
    ApiToken.objects.update(expires_at=timezone.now() + timedelta(hours=1))

    assert Client().get(url("/claims"), headers=bearer(secret)).status_code == 200


def test_revoke_action_disables_tokens(added, admin_client):
    """The admin's revoke action stamps revoked_at; the token then gets 401."""
    _, secret = added
    token = ApiToken.objects.get()

    admin_client.post(
        "/admin/claims/apitoken/", {"action": "revoke", "_selected_action": [token.pk]}
    )

    token.refresh_from_db()
    assert token.revoked_at is not None
    assert Client().get(url("/claims"), headers=bearer(secret)).status_code == 401


@pytest.mark.parametrize("name", ["deploy\x1bbot", "bell\x07", "zero\u200bwidth"])
def test_a_token_name_follows_the_input_rule(admin_client, viewer, name):
    response = admin_client.post(ADD, {"name": name, "user": viewer.pk, "scope": "read"})

    assert response.status_code == 200
    assert "must not contain control characters" in response.content.decode()
    assert not ApiToken.objects.exists()
