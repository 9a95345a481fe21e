"""A NUL byte, which PostgreSQL cannot store, never becomes a server error: the pages
refuse it (400), the admin and the sign-in too (400, before any view), the API answers
422 in JSON, and nothing is saved; a session cookie holding one signs nobody in."""

from __future__ import annotations

from importlib import import_module

import pytest
from django.conf import settings
from django.test import Client

from claims.models import ApiToken

pytestmark = pytest.mark.django_db


@pytest.fixture
def root(django_user_model) -> Client:
    client = Client()
    client.force_login(django_user_model.objects.create_superuser("root"))
    return client


@pytest.mark.parametrize(
    ("path", "status"),
    [
        ("/claims/?prefix=%00", 400),
        ("/audit/?actor=%00", 400),
        ("/api/v1/claims?prefix=%00", 422),
        ("/api/v1/redrives?cursor=%00", 422),
        ("/admin/claims/apitoken/?q=%00", 400),
        ("/admin/claims/workflow/?q=a%00b", 400),
        # A list filter's lookup goes to the database as it is: a server error on PostgreSQL.
        ("/admin/auth/user/?username__exact=%00", 400),
        # The admin looks objects up by text primary keys taken from the path.
        ("/admin/claims/workflow/%00/change/", 400),
        ("/admin/claims/engine/a%00b/history/", 400),
    ],
)
def test_a_nul_in_a_query_is_refused(root, path, status):
    assert root.get(path).status_code == status


def test_a_nul_in_an_admin_form_is_refused_and_nothing_is_saved(root):
    response = root.post("/admin/claims/apitoken/add/", {"name": "ci\x00", "scope": "read"})

    assert response.status_code == 400
    assert "NUL character" in response.content.decode()
    assert not ApiToken.objects.exists()


def test_a_nul_in_a_sign_in_is_refused(client):
    assert client.post("/login/", {"username": "a\x00", "password": "x"}).status_code == 400


def test_ordinary_text_passes(root):
    assert root.get("/admin/auth/user/?username__exact=root").status_code == 200
    assert root.get("/claims/?prefix=order-").status_code == 200


# A quoted cookie value's backslash escapes are decoded by the cookie parser: "\000" is a NUL.
@pytest.mark.parametrize(
    "cookie", ['"aaaaaaaa\\000bb"', '"\\000\\000\\000\\000\\000\\000\\000\\000"']
)
@pytest.mark.parametrize("path", ["/claims/", "/api/v1/claims", "/admin/"])
def test_a_session_cookie_holding_a_nul_signs_nobody_in(client, path, cookie):
    response = client.get(path, HTTP_COOKIE=f"sessionid={cookie}")

    assert response.status_code in (302, 401)  # the sign-in, or the API's refusal


@pytest.mark.parametrize("key", ["aaaaaaaa\x00bb", "aaaaaaaa bb", "aaaaaaaaé", "a" * 41])
def test_a_session_key_django_never_writes_names_no_session(key):
    """Django writes 32 ASCII letters and digits; the store looks nothing else up."""
    store = import_module(settings.SESSION_ENGINE).SessionStore(key)

    assert store.session_key is None
    assert store.load() == {}
