"""API tokens in the admin: the secret is shown once, after save, and never again."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from claims.models import ApiToken
from claims.tokens import token_hash

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


def test_the_add_form_asks_only_for_name_user_and_scope(admin_client):
    """Prefix and hash are minted, never typed in."""
    form = admin_client.get(ADD).context["adminform"].form

    assert set(form.fields) == {"name", "user", "scope"}


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
