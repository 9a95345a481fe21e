"""Every page answers a logged-in user with the full page and an HTMX poll with its fragment;
anonymous visitors are sent to the login page."""

from __future__ import annotations

import pytest

from claims.models import BackfillJob

from .conftest import htmx, make_claim, make_engine, make_event, make_workflow

pytestmark = pytest.mark.django_db

# (url, id of the live fragment)
PAGES = [
    ("/", "overview-live"),
    ("/claims/", "claims-table"),
    ("/workflows/wf-1/", "workflow-summary"),
    ("/engines/", "engines-live"),
    ("/engines/e-1/", "engine-live"),
    ("/reclaim/", "reclaim-live"),
    ("/redrives/", "redrives-live"),
    ("/backfills/", "backfills-live"),
    ("/audit/", "audit-live"),
]


@pytest.fixture(autouse=True)
def world():
    make_engine("e-1")
    make_workflow("wf-1")
    make_claim("wf-1", epoch=3)
    make_event("wf-1", "acquired", epoch_before=2, epoch_after=3)


@pytest.mark.parametrize(("url", "fragment"), PAGES)
def test_full_page_has_layout_and_live_fragment(operator_client, url, fragment):
    """The full page carries the nav, a logout button and the live fragment polling its URL."""
    response = operator_client.get(url)

    assert response.status_code == 200
    html = response.content.decode()
    assert '<nav class="topbar__nav"' in html
    assert "Log out" in html
    assert f'id="{fragment}"' in html
    assert "as of" in html


@pytest.mark.parametrize(("url", "fragment"), PAGES)
def test_htmx_request_gets_only_the_fragment(operator_client, url, fragment):
    """An HTMX request gets the fragment alone, no layout around it."""
    response = operator_client.get(url, **htmx())

    assert response.status_code == 200
    html = response.content.decode()
    assert html.lstrip().startswith("<section")
    assert f'id="{fragment}"' in html
    assert '<nav class="topbar__nav"' not in html
    assert "as of" in html


@pytest.mark.parametrize(("url", "fragment"), PAGES)
def test_live_fragment_polls_its_own_url_and_swaps_itself(operator_client, url, fragment):
    """The fragment names its own URL, a poll (weftboard.js skips it while the tab is
    hidden: a trigger filter would need eval, which the CSP forbids) and an outerHTML swap."""
    if fragment == "backfills-live":
        BackfillJob.objects.create(status="running", run_at="2025-01-01T00:00:00Z")
    html = operator_client.get(url, **htmx()).content.decode()

    assert f'hx-get="{url}"' in html
    assert 'hx-trigger="every 5s, refresh, claimChanged from:body"' in html
    assert 'hx-swap="outerHTML"' in html


def test_workflow_page_serves_each_fragment_by_its_target(operator_client):
    """The workflow page has two live fragments; HX-Target picks which one is rendered."""
    html = operator_client.get("/workflows/wf-1/", **htmx("workflow-history")).content.decode()

    assert 'id="workflow-history"' in html
    assert 'id="workflow-summary"' not in html


def test_history_restore_gets_the_whole_page(operator_client):
    """A back-button restore asks with HX-History-Restore-Request and gets the full page."""
    response = operator_client.get("/claims/", **htmx(), HTTP_HX_HISTORY_RESTORE_REQUEST="true")

    assert '<nav class="topbar__nav"' in response.content.decode()


@pytest.mark.parametrize(("url", "fragment"), PAGES)
def test_anonymous_visitor_is_sent_to_login(client, url, fragment):
    """No page is readable without a login; the page comes back as `next`."""
    response = client.get(url)

    assert response.status_code == 302
    assert response["Location"].startswith("/login/?next=")


def test_anonymous_htmx_poll_redirects_the_whole_window(client):
    """An expired session mid-poll sends the browser to the login page instead of
    swapping the login form into a fragment."""
    response = client.get("/claims/", **htmx(), HTTP_HX_CURRENT_URL="http://testserver/claims/")

    assert response["HX-Redirect"] == "/login/?next=/claims/"


def test_an_htmx_poll_with_an_unreadable_current_url_still_redirects(client):
    """HX-Current-URL is the client's word: one no URL parser reads is not a server error."""
    response = client.get("/claims/", **htmx(), HTTP_HX_CURRENT_URL="http://[")

    assert response.status_code == 200
    assert response["HX-Redirect"] == "/login/?next=/claims/"


@pytest.mark.parametrize(
    ("url", "back_to"),
    [
        ("/claims/?q=" + "a" * 20_000, "/claims/"),  # the query is dropped
        ("/workflows/" + "a" * 20_000 + "/", "/"),  # the path too: the overview
    ],
)
def test_a_url_too_long_to_come_back_to_is_cut_short(client, url, back_to):
    """Django refuses a redirect past 16,384 characters (a 400, logged as an error with
    its traceback); the sign-in comes back to what fits."""
    response = client.get(url)

    assert response.status_code == 302
    assert response["Location"] == f"/login/?next={back_to}"


def test_viewer_without_permissions_reads_every_page(viewer_client):
    """Reading needs only a login; the permissions guard the actions."""
    for url, _ in PAGES:
        assert viewer_client.get(url).status_code == 200


def test_unknown_url_is_a_404_page(operator_client, settings):
    """An address that is no page gets the 404 page."""
    settings.DEBUG = False

    response = operator_client.get("/no-such-page/")

    assert response.status_code == 404
    assert "Not found" in response.content.decode()


def test_an_operator_without_staff_status_signs_in_on_the_dashboard_login(
    client, django_user_model
):
    """The dashboard's own login admits any active user, not only admin staff."""
    django_user_model.objects.create_user("viewer", password="viewer-pw-123")

    response = client.post(
        "/login/", {"username": "viewer", "password": "viewer-pw-123", "next": "/claims/"}
    )

    assert response.status_code == 302
    assert response["Location"] == "/claims/"
    assert client.get("/claims/").status_code == 200


def test_a_wrong_password_is_refused_with_a_message(client, django_user_model):
    """A failed sign-in stays on the login page and says so, signing nobody in."""
    django_user_model.objects.create_user("viewer", password="viewer-pw-123")

    response = client.post("/login/", {"username": "viewer", "password": "nope"})

    assert response.status_code == 200
    assert b"didn't match" in response.content
    assert client.get("/claims/").status_code == 302
