"""The saved-query routes: status codes, token scopes, ownership and sharing."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from claims.models import AuditEntry, SavedQuery
from tests import factories

from .conftest import bearer, post, url

pytestmark = pytest.mark.django_db

BODY = {"name": "stuck", "list_name": "claims", "query": 'state = "expired"'}


@pytest.fixture
def alice() -> Any:
    return factories.make_user("alice")


@pytest.fixture
def bob() -> Any:
    return factories.make_user("bob")


def client_of(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def patch(client: Client, path: str, body: Any, headers: Any = None) -> Any:
    return client.patch(path, body, content_type="application/json", headers=headers)


def test_save_read_list_change_delete(alice):
    client = client_of(alice)

    created = post(client, url("/saved-queries"), {**BODY, "query": 'state="expired"'})
    assert created.status_code == 201, created.content
    body = created.json()
    assert body | {"id": 0, "created_at_ms": 0, "updated_at_ms": 0} == {
        "id": 0,
        "name": "stuck",
        "list_name": "claims",
        "query": 'state = "expired"',
        "owner": "alice",
        "mine": True,
        "shared": False,
        "created_at_ms": 0,
        "created_at": body["created_at"],
        "updated_at_ms": 0,
        "updated_at": body["updated_at"],
    }
    one = url(f"/saved-queries/{body['id']}")
    assert client.get(one).json()["name"] == "stuck"
    assert [q["name"] for q in client.get(url("/saved-queries")).json()["items"]] == ["stuck"]
    assert client.get(url("/saved-queries?list_name=workflows")).json()["items"] == []

    changed = patch(client, one, {"name": "expired"})
    assert changed.status_code == 200, changed.content
    assert changed.json()["name"] == "expired"

    assert client.delete(one).status_code == 204
    assert client.get(one).status_code == 404
    assert [e.action for e in AuditEntry.objects.order_by("id")] == ["create", "update", "delete"]


@pytest.mark.parametrize(
    ("body", "status"),
    [
        ({**BODY, "query": 'state = "expired" AND'}, 422),
        ({**BODY, "name": ""}, 422),
        ({**BODY, "name": "n" * 101}, 422),
        ({**BODY, "list_name": "engines"}, 422),
        ({**BODY, "shared": "yes"}, 422),
        ({"name": "stuck", "list_name": "claims"}, 422),
    ],
)
def test_bad_input_answers_422_and_keeps_nothing(alice, body, status):
    response = post(client_of(alice), url("/saved-queries"), body)

    assert response.status_code == status, response.content
    assert not SavedQuery.objects.exists()


def test_a_query_error_says_where(alice):
    response = post(client_of(alice), url("/saved-queries"), {**BODY, "query": "state = "})

    assert response.status_code == 422
    assert "position" in response.json()["detail"]


def test_a_taken_name_is_409(alice):
    client = client_of(alice)
    post(client, url("/saved-queries"), BODY)

    assert post(client, url("/saved-queries"), BODY).status_code == 409


def test_sharing_needs_the_permission(alice):
    refused = post(client_of(alice), url("/saved-queries"), {**BODY, "shared": True})
    assert refused.status_code == 403
    assert "claims.share_query" in refused.json()["detail"]

    sharer = factories.make_user("sharer", ["share_query"])
    shared = post(client_of(sharer), url("/saved-queries"), {**BODY, "shared": True})
    assert shared.status_code == 201
    assert shared.json()["shared"] is True


def test_anothers_private_query_is_404_and_a_shared_one_readable_not_writable(alice, bob):
    sharer = factories.make_user("sharer", ["share_query"])
    private = post(client_of(alice), url("/saved-queries"), BODY).json()["id"]
    shared = post(
        client_of(sharer), url("/saved-queries"), {**BODY, "name": "ours", "shared": True}
    ).json()["id"]
    as_bob = client_of(bob)

    assert as_bob.get(url(f"/saved-queries/{private}")).status_code == 404
    assert patch(as_bob, url(f"/saved-queries/{private}"), {"name": "x"}).status_code == 404
    assert as_bob.delete(url(f"/saved-queries/{private}")).status_code == 404
    seen = as_bob.get(url(f"/saved-queries/{shared}")).json()
    assert (seen["owner"], seen["mine"], seen["shared"]) == ("sharer", False, True)
    assert [q["name"] for q in as_bob.get(url("/saved-queries")).json()["items"]] == ["ours"]
    assert patch(as_bob, url(f"/saved-queries/{shared}"), {"name": "x"}).status_code == 403
    assert as_bob.delete(url(f"/saved-queries/{shared}")).status_code == 403
    assert as_bob.get(url("/saved-queries/999999")).status_code == 404
    assert set(SavedQuery.objects.values_list("name", flat=True)) == {"stuck", "ours"}


def test_a_read_token_reads_and_a_write_token_writes(alice, token_for):
    read, write = bearer(token_for(alice, "read")), bearer(token_for(alice, "write", "w"))
    client = Client()

    assert post(client, url("/saved-queries"), BODY, headers=read).status_code == 403
    created = post(client, url("/saved-queries"), BODY, headers=write)
    assert created.status_code == 201
    one = url(f"/saved-queries/{created.json()['id']}")
    assert client.get(one, headers=read).status_code == 200
    assert patch(client, one, {"name": "x"}, headers=read).status_code == 403
    assert client.delete(one, headers=read).status_code == 403
    assert client.delete(one, headers=write).status_code == 204
    actors = list(AuditEntry.objects.values_list("actor", flat=True))
    assert all(actor.startswith("alice (token wb_") for actor in actors)


def test_without_credentials_401(alice):
    client = Client()

    assert client.get(url("/saved-queries")).status_code == 401
    assert post(client, url("/saved-queries"), BODY).status_code == 401


def test_read_only_refuses_writes(alice, settings):
    client = client_of(alice)
    created = post(client, url("/saved-queries"), BODY).json()
    settings.WEFTBOARD_READ_ONLY = "maintenance"

    assert post(client, url("/saved-queries"), {**BODY, "name": "x"}).status_code == 403
    assert patch(client, url(f"/saved-queries/{created['id']}"), {"name": "x"}).status_code == 403
    assert client.delete(url(f"/saved-queries/{created['id']}")).status_code == 403
    assert client.get(url("/saved-queries")).status_code == 200
    assert SavedQuery.objects.get().name == "stuck"
