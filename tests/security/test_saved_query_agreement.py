"""The saved views' page forms and the saved-query API refuse alike: each refusal sent
through both gives the same status (400 on a page where the API says 422) and the same
rule's words, and changes nothing."""

from __future__ import annotations

import html
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from django.core.cache import cache
from django.test import Client

from claims.models import AuditEntry, SavedQuery
from claims.services.saved_queries import saved_query_create
from tests import factories

pytestmark = pytest.mark.django_db

GOOD: dict[str, Any] = {"name": "stuck", "list_name": "claims", "query": 'state = "expired"'}


@dataclass(frozen=True)
class Refusal:
    label: str
    page_status: int
    api_status: int
    says: str  # the rule's words, on the page and in the API's detail ("": a 404 says its own)
    form: dict[str, Any] | None = None  # a save; None: a delete of the scene's query
    whose: str = "alice"  # "bob": the query to delete is bob's
    shared: bool = False
    read_only: bool = False


REFUSALS = [
    Refusal("read-only", 403, 403, "read-only mode", form=GOOD, read_only=True),
    Refusal("empty name", 400, 422, "needs a name", form={**GOOD, "name": " "}),
    Refusal("long name", 400, 422, "at most 100 characters", form={**GOOD, "name": "n" * 101}),
    Refusal("bad query", 400, 422, "(at position 8)", form={**GOOD, "query": "state = "}),
    Refusal("share", 403, 403, "needs claims.share_query", form={**GOOD, "shared": True}),
    Refusal("taken name", 409, 409, "already have a saved query named", form=GOOD),
    Refusal("delete read-only", 403, 403, "read-only mode", read_only=True),
    Refusal("delete another's shared", 403, 403, "only its owner", whose="bob", shared=True),
    Refusal("delete another's private", 404, 404, "", whose="bob"),
]


def through_page(client: Client, refusal: Refusal, target: int) -> tuple[int, str]:
    if refusal.form is None:
        response = client.post(f"/saved-views/{target}/delete")
    else:
        form = {**refusal.form}
        form["shared"] = "on" if form.pop("shared", False) else ""
        response = client.post("/saved-views/", form)
    return response.status_code, html.unescape(response.content.decode())


def through_api(client: Client, refusal: Refusal, target: int) -> tuple[int, str]:
    if refusal.form is None:
        response = client.delete(f"/api/v1/saved-queries/{target}")
    else:
        response = client.post(
            "/api/v1/saved-queries", refusal.form, content_type="application/json"
        )
    return response.status_code, str(response.json()["detail"])


@pytest.mark.parametrize("refusal", REFUSALS, ids=[r.label for r in REFUSALS])
@pytest.mark.parametrize("surface", [through_page, through_api], ids=["page", "api"])
def test_page_and_api_refuse_alike(
    refusal: Refusal, surface: Callable[..., tuple[int, str]], settings: Any
):
    cache.clear()
    alice, bob = factories.make_user("alice"), factories.make_user("bob", ["share_query"])
    kept = saved_query_create(alice, **GOOD)
    bobs = saved_query_create(
        bob, name="bob's", list_name="claims", query="epoch > 1", shared=refusal.shared
    )
    target = bobs.pk if refusal.whose == "bob" else kept.pk
    settings.WEFTBOARD_READ_ONLY = "maintenance" if refusal.read_only else ""
    client = Client()
    client.force_login(alice)

    status, text = surface(client, refusal, target)

    expected = refusal.page_status if surface is through_page else refusal.api_status
    assert status == expected, text[-500:]
    assert refusal.says in text
    assert SavedQuery.objects.count() == 2
    assert AuditEntry.objects.count() == 2
