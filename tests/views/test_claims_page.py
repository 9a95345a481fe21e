"""The claims page: derived states, filters kept in the URL, keyset pages, a fixed query count."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from .conftest import RENEW_MS, htmx, make_claim, make_engine

pytestmark = pytest.mark.django_db

# session, user, the user's and group permissions, the claim page, the last holders of
# its ownerless rows, the live engines, the engines' labels, and the saved views strip
# (the user's and the shared saved queries, with their owners: one more)
QUERIES = 9


@pytest.fixture
def engines():
    make_engine("e-1")
    make_engine("e-2")


def test_table_shows_holder_epoch_state_and_a_live_countdown(operator_client, engines):
    """A held claim shows its engine, epoch, derived state and a countdown with UTC on hover."""
    make_claim("wf-a", epoch=41, engine="e-1")

    html = operator_client.get("/claims/").content.decode()

    assert "wf-a" in html
    assert ">41<" in html
    assert 'href="/engines/e-1/"' in html
    assert "badge--live" in html
    assert 'class="countdown" data-expires-at="' in html
    assert 'title="expires 20' in html  # absolute UTC on hover


@pytest.mark.parametrize("rows", [3, 30])
def test_query_count_does_not_grow_with_rows(
    operator_client, engines, rows, django_assert_num_queries
):
    """Rendering a page costs the same number of queries for 3 claims as for 30."""
    for n in range(rows):
        make_claim(f"wf-{n:03d}", engine="e-1" if n % 2 else None)

    with django_assert_num_queries(QUERIES):
        response = operator_client.get("/claims/")

    assert response.status_code == 200


def test_the_table_is_one_query(operator_client, engines):
    """Exactly one statement reads the claims table per page render."""
    for n in range(30):
        make_claim(f"wf-{n:03d}")

    with CaptureQueriesContext(connection) as queries:
        operator_client.get("/claims/", **htmx())

    claim_reads = [q for q in queries.captured_queries if "claims_workflowclaim" in q["sql"]]
    assert len(claim_reads) == 1


@pytest.mark.parametrize(
    ("query", "shown", "hidden"),
    [
        ("state=ownerless", ["wf-free"], ["wf-live", "wf-grace", "wf-other"]),
        ("state=in-grace", ["wf-grace"], ["wf-live", "wf-free"]),
        ("engine=e-2", ["wf-other"], ["wf-live", "wf-free"]),
        ("prefix=wf-g", ["wf-grace"], ["wf-live", "wf-free", "wf-other"]),
        ("state=live&engine=e-1", ["wf-live"], ["wf-other", "wf-grace"]),
    ],
)
def test_filters_come_from_the_url(operator_client, engines, query, shown, hidden):
    """State, engine and id prefix filters are read from the query string and combine."""
    make_claim("wf-live", engine="e-1")
    make_claim("wf-grace", engine="e-1", expires_in_ms=-RENEW_MS)
    make_claim("wf-free", engine=None)
    make_claim("wf-other", engine="e-2")

    html = operator_client.get(f"/claims/?{query}", **htmx()).content.decode()

    for workflow_id in shown:
        assert f">{workflow_id}<" in html
    for workflow_id in hidden:
        assert f">{workflow_id}<" not in html


def test_filter_values_stay_in_the_form_and_the_poll_url(operator_client, engines):
    """The page keeps the filters: in the form fields and in the fragment's own poll URL."""
    html = operator_client.get("/claims/?state=live&prefix=wf-").content.decode()

    assert '<option value="live" selected>' in html
    assert 'value="wf-"' in html
    assert 'hx-get="/claims/?state=live&amp;prefix=wf-"' in html


def test_keyset_pages_follow_the_cursor(operator_client, engines):
    """Next page links carry the last id seen; following them visits every claim once
    (ownerless rows of workflows not running show with state=all)."""
    for n in range(120):
        make_claim(f"wf-{n:03d}", engine=None)

    def rows(html):
        return [n for n in range(120) if f'href="/workflows/wf-{n:03d}/"' in html]

    first = operator_client.get("/claims/?state=all", **htmx()).content.decode()
    assert rows(first) == list(range(50))
    assert "cursor=wf-049" in first

    second = operator_client.get("/claims/?state=all&cursor=wf-049", **htmx()).content.decode()
    assert rows(second) == list(range(50, 100))

    last = operator_client.get("/claims/?state=all&cursor=wf-099", **htmx()).content.decode()
    assert rows(last) == list(range(100, 120))
    assert "Next page" not in last
    assert "First page" in last


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("state=sleepy", "state must be one of"),
        ("prefix=" + "x" * 256, "at most 255 characters"),
        ("prefix=wf%01", "control characters"),
        ("engine=e%00", "control characters"),
    ],
)
def test_bad_filters_are_a_400_with_the_reason(operator_client, query, message):
    """A filter the page cannot use is refused with a clear message, not ignored."""
    response = operator_client.get(f"/claims/?{query}")

    assert response.status_code == 400
    assert message in response.content.decode()


def test_bad_filter_in_htmx_goes_to_the_flash_region(operator_client):
    """For HTMX the error fragment is retargeted to the flash region under the nav."""
    response = operator_client.get("/claims/?state=sleepy", **htmx())

    assert response.status_code == 400
    assert response["HX-Retarget"] == "#flash"
    assert "state must be one of" in response.content.decode()


def test_holder_that_is_not_a_live_engine_is_flagged(operator_client, engines):
    """A claim held by an engine that is not active says so next to the holder."""
    make_claim("wf-ghost", engine="ghost-engine")

    html = operator_client.get("/claims/").content.decode()

    assert "not live" in html


def test_row_actions_carry_the_epoch_the_operator_sees(operator_client, engines):
    """Release and takeover links of a row name that row's epoch."""
    make_claim("wf-a", epoch=7, engine="e-1")

    html = operator_client.get("/claims/").content.decode()

    assert 'href="/release/wf-a?epoch=7"' in html
    assert 'href="/takeover/wf-a?epoch=7"' in html


def test_row_actions_are_disabled_with_the_reason_without_permission(viewer_client, engines):
    """A viewer sees the buttons disabled and why, instead of links."""
    make_claim("wf-a", engine="e-1")

    html = viewer_client.get("/claims/").content.decode()

    assert "/release/wf-a" not in html
    assert 'disabled title="you need the permission claims.force_claim"' in html
    assert "Row actions are disabled: you need the permission claims.force_claim" in html
