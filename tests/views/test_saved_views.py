"""Saved views on the list pages: the strip that applies one in a click, the form that
saves the current query, delete for one's own, and the refusals shown on the page."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from claims.models import AuditEntry, SavedQuery
from claims.services.saved_queries import saved_query_create
from tests import factories
from tests.conftest import _signed_in

from .conftest import htmx, make_claim

pytestmark = pytest.mark.django_db

EXPIRED = 'state = "expired"'


@pytest.fixture
def alice() -> Any:
    return factories.make_user("alice")


@pytest.fixture
def sharer() -> Any:
    return factories.make_user("sharer", ["share_query"])


def keep(user: Any, name: str, query: str = EXPIRED, **fields: Any) -> SavedQuery:
    return saved_query_create(
        user, name=name, list_name=fields.pop("list_name", "claims"), query=query, **fields
    )


def strip(html: str) -> str:
    return html.split('aria-label="Saved views"', 1)[1].split("</nav>", 1)[0]


def test_the_strip_links_each_saved_view_to_its_query_and_marks_whose_it_is(alice, sharer):
    keep(alice, "mine")
    keep(alice, "mine-shared-later", query='engine = "e-1"')
    keep(sharer, "team", query='state = "live" AND engine = "e-2"', shared=True)
    keep(sharer, "sharer-private")
    keep(alice, "for workflows", query='status = "failed"', list_name="workflows")

    html = _signed_in(alice).get("/claims/").content.decode()

    views = strip(html)
    assert re.search(r'href="/claims/\?query=state%20%3D%20%22expired%22"[^>]*>mine<', views)
    assert ">team</a>" in views
    assert "shared by sharer" in views
    assert "sharer-private" not in views
    assert "for workflows" not in views
    assert views.count('action="/saved-views/') == 2  # delete: alice's own only

    workflows = strip(_signed_in(alice).get("/workflows/").content.decode())
    assert 'href="/workflows/?query=status%20%3D%20%22failed%22"' in workflows
    assert "team" not in workflows


def test_a_saved_link_applies_the_query(alice):
    make_claim("wf-expired", expires_in_ms=-3_600_000)
    make_claim("wf-live", engine="e-1")
    saved = keep(alice, "expired")

    html = _signed_in(alice).get("/claims/", {"query": saved.query}).content.decode()

    assert 'href="/workflows/wf-expired/"' in html
    assert 'href="/workflows/wf-live/"' not in html
    assert re.search(r'aria-current="true">expired<', strip(html))


def test_the_save_form_shows_under_a_query_and_sharing_only_with_the_permission(alice, sharer):
    assert "Save this query" not in _signed_in(alice).get("/claims/").content.decode()
    assert (
        "Save this query"
        not in _signed_in(alice).get("/claims/?query=state%20%3D").content.decode()
    )

    plain = _signed_in(alice).get("/claims/", {"query": EXPIRED}).content.decode()
    assert "Save this query" in plain
    assert 'name="shared"' not in plain
    assert (
        'name="shared"' in _signed_in(sharer).get("/claims/", {"query": EXPIRED}).content.decode()
    )


def test_saving_shows_the_list_under_the_saved_query(alice):
    response = _signed_in(alice).post(
        "/saved-views/",
        {"name": "expired", "list_name": "workflows", "query": "status='failed'".replace("'", '"')},
    )

    assert response.status_code == 303
    assert response["Location"] == "/workflows/?query=status+%3D+%22failed%22"
    saved = SavedQuery.objects.get()
    assert (saved.owner, saved.name, saved.shared) == (alice, "expired", False)
    assert AuditEntry.objects.get().action == "create"


def test_sharing_from_the_page_needs_the_permission(alice, sharer):
    form = {"name": "team", "list_name": "claims", "query": EXPIRED, "shared": "on"}

    refused = _signed_in(alice).post("/saved-views/", form)
    assert refused.status_code == 403
    assert "claims.share_query" in refused.content.decode()
    assert not SavedQuery.objects.exists()

    assert _signed_in(sharer).post("/saved-views/", form).status_code == 303
    assert SavedQuery.objects.get().shared


@pytest.mark.parametrize(
    ("form", "says"),
    [
        ({"name": "", "query": EXPIRED}, "needs a name"),
        ({"name": "x" * 101, "query": EXPIRED}, "at most 100"),
        ({"name": "bad", "query": "state ="}, "expected a value"),
        ({"name": "bad", "query": EXPIRED, "list_name": "engines"}, "list must be one of"),
    ],
)
def test_bad_input_is_shown_and_saves_nothing(alice, form, says):
    response = _signed_in(alice).post("/saved-views/", {"list_name": "claims", **form})

    assert response.status_code == 400
    assert says in response.content.decode()
    assert not SavedQuery.objects.exists()


def test_a_taken_name_is_a_conflict(alice):
    keep(alice, "expired")

    response = _signed_in(alice).post(
        "/saved-views/", {"name": "expired", "list_name": "claims", "query": EXPIRED}
    )

    assert response.status_code == 409
    assert "already have a saved query named" in response.content.decode()


def test_delete_ones_own_only(alice, sharer):
    own = keep(alice, "mine")
    private = keep(sharer, "private")
    shared = keep(sharer, "team", shared=True)
    client = _signed_in(alice)

    assert client.post(f"/saved-views/{private.pk}/delete").status_code == 404
    assert client.post(f"/saved-views/{shared.pk}/delete").status_code == 403
    deleted = client.post(f"/saved-views/{own.pk}/delete")

    assert deleted.status_code == 303
    assert deleted["Location"] == "/claims/"
    assert set(SavedQuery.objects.values_list("name", flat=True)) == {"private", "team"}
    assert AuditEntry.objects.filter(action="delete").count() == 1


def test_read_only_hides_the_forms_and_refuses_the_posts(alice, settings):
    own = keep(alice, "mine")
    settings.WEFTBOARD_READ_ONLY = "maintenance"
    client = _signed_in(alice)

    html = client.get("/claims/", {"query": EXPIRED}).content.decode()
    assert ">mine</a>" in html
    assert "Save this query" not in html
    assert "/delete" not in strip(html)
    posted = client.post("/saved-views/", {"name": "x", "list_name": "claims", "query": EXPIRED})
    assert posted.status_code == 403
    assert "read-only" in posted.content.decode()
    assert client.post(f"/saved-views/{own.pk}/delete").status_code == 403
    assert list(SavedQuery.objects.values_list("name", flat=True)) == ["mine"]


def test_the_posts_need_a_csrf_token_and_a_session(alice):
    form = {"name": "x", "list_name": "claims", "query": EXPIRED}
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(alice)

    assert strict.post("/saved-views/", form).status_code == 403
    assert Client().post("/saved-views/", form).status_code == 302
    assert _signed_in(alice).get("/saved-views/").status_code == 405
    assert not SavedQuery.objects.exists()


def test_the_live_fragment_does_not_read_the_saved_views(alice):
    keep(alice, "mine")
    client = _signed_in(alice)
    with CaptureQueriesContext(connection) as full:
        page = client.get("/claims/")
    with CaptureQueriesContext(connection) as live:
        fragment = client.get("/claims/", **htmx())

    assert "Saved views" in page.content.decode()
    assert "Saved views" not in fragment.content.decode()
    assert sum("savedquery" in q["sql"] for q in full.captured_queries) == 1
    assert not any("savedquery" in q["sql"] for q in live.captured_queries)


def test_the_audit_page_lists_the_operator_records(alice):
    saved = keep(alice, "mine")

    html = _signed_in(alice).get("/audit/").content.decode()

    section = html.split('id="operator-records-title"', 1)[1]
    assert "saved query" in section.lower()
    assert f"#{saved.pk}" in section
    assert ">create<" in section
    assert "alice" in section
