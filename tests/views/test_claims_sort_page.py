"""The claims page: what needs attention by default, sortable headings, substring search,
the jump box, and a released claim's last holder instead of "never"."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests import factories
from tests.factories import make_workflow

from .conftest import htmx, make_claim, make_engine, make_event, now_ms

pytestmark = pytest.mark.django_db


@pytest.fixture
def fleet():
    make_engine("e-1")
    make_claim("wf-held", engine="e-1", epoch=5, expires_in_ms=90_000)
    make_claim("wf-soon", engine="e-1", epoch=2, expires_in_ms=9_000)
    factories.make_stranded_and_finished("wf-stranded", "wf-done")


def shown(html, *ids):
    return [wf for wf in ids if f'href="/workflows/{wf}/"' in html]


ALL = ("wf-done", "wf-held", "wf-soon", "wf-stranded")


def test_default_view_shows_what_needs_attention_and_says_how_to_see_all(operator_client, fleet):
    html = operator_client.get("/claims/").content.decode()

    assert shown(html, *ALL) == ["wf-held", "wf-soon", "wf-stranded"]
    assert "Showing the claims that need attention" in html
    assert 'href="?state=all"' in html
    assert ">stranded</span>" in html


def test_state_all_shows_finished_rows_too(operator_client, fleet):
    html = operator_client.get("/claims/?state=all", **htmx()).content.decode()

    assert shown(html, *ALL) == list(ALL)


@pytest.mark.parametrize(
    ("sort", "order"),
    [
        ("expires_at", ["wf-soon", "wf-held", "wf-stranded"]),
        ("-epoch", ["wf-held", "wf-soon", "wf-stranded"]),
        ("state", ["wf-held", "wf-soon", "wf-stranded"]),
    ],
)
def test_rows_follow_the_sort_in_the_url(operator_client, fleet, sort, order):
    html = operator_client.get(f"/claims/?sort={sort}", **htmx()).content.decode()

    positions = {wf: html.index(f'href="/workflows/{wf}/"') for wf in order}
    assert sorted(order, key=positions.__getitem__) == order


def test_headings_link_to_their_sort_and_mark_the_current_one(operator_client, fleet):
    html = operator_client.get("/claims/?sort=expires_at").content.decode()

    assert 'aria-sort="ascending"' in html
    assert 'href="?sort=-expires_at"' in html  # a second click reverses
    assert 'href="?sort=epoch"' in html
    assert '<input type="hidden" name="sort" value="expires_at" form="claims-filters">' in html


def test_a_cursor_from_another_sort_is_a_400(operator_client, fleet):
    for n in range(60):
        make_claim(f"wf-x{n:02d}", engine="e-1")
    first = operator_client.get("/claims/?sort=epoch", **htmx()).content.decode()
    cursor = first.split("cursor=", 1)[1].split('"', 1)[0]

    response = operator_client.get(f"/claims/?sort=-epoch&cursor={cursor}")

    assert response.status_code == 400
    assert "cursor belongs to sort=epoch" in response.content.decode()


def test_search_matches_any_part_of_the_id(operator_client, fleet):
    html = operator_client.get("/claims/?q=trand&state=all", **htmx()).content.decode()

    assert shown(html, *ALL) == ["wf-stranded"]
    assert "containing “trand”" in html


@pytest.mark.parametrize("query", ["sort=colour", "state=finished", "q=a%01", "jump=a%01"])
def test_bad_sort_scope_search_or_jump_is_a_400(operator_client, query):
    assert operator_client.get(f"/claims/?{query}").status_code == 400


@pytest.mark.parametrize("workflow_id", ["wf-done", "wf-held"])
def test_jump_goes_to_the_workflow_on_an_exact_id(operator_client, fleet, workflow_id):
    response = operator_client.get(f"/claims/?jump={workflow_id}")

    assert response.status_code == 302
    assert response["Location"] == f"/workflows/{workflow_id}/"


def test_jump_without_an_exact_match_searches(operator_client, fleet):
    response = operator_client.get("/claims/?jump=wf-s", follow=True)

    html = response.content.decode()
    assert response.redirect_chain == [("/claims/?state=all&q=wf-s&jumped=1", 302)]
    assert "No workflow has exactly that id" in html
    assert shown(html, *ALL) == ["wf-soon", "wf-stranded"]


def test_a_released_claim_shows_its_last_holder_not_never(operator_client, fleet):
    make_event("wf-done", "acquired", engine_id="e-1", at_ms=now_ms() - 60_000)
    make_event("wf-done", "released", engine_id="e-1", at_ms=now_ms() - 30_000)

    html = operator_client.get("/claims/?state=all", **htmx()).content.decode()
    row = html.split('href="/workflows/wf-done/"', 1)[1].split("</tr>", 1)[0]

    assert "never" not in row
    assert "released" in row
    assert "last held by" in row
    assert 'href="/engines/e-1/"' in row


@pytest.mark.parametrize("sort", ["-claimed_at", "state"])
def test_sorted_page_query_count_does_not_grow_with_rows(operator_client, sort):
    """Held rows, rows without a value, their last holders: never a query per row."""
    make_engine("e-1")
    counts = []
    for rows in (4, 40):
        for n in range(len(counts) * 4, rows):
            make_claim(f"wf-{n:03d}", engine="e-1" if n % 2 else None)
            make_workflow(f"wf-{n:03d}")
        operator_client.get("/claims/")
        with CaptureQueriesContext(connection) as queries:
            response = operator_client.get(f"/claims/?sort={sort}")
        assert response.status_code == 200
        counts.append(len(queries.captured_queries))

    assert counts[0] == counts[1]


def test_the_workflow_page_of_a_released_claim_names_its_last_holder(operator_client, fleet):
    """The workflow page's Claimed line: the last event and last holder, not "never"."""
    make_event("wf-done", "acquired", engine_id="e-1", epoch_before=None, epoch_after=1)
    make_event("wf-done", "released", engine_id="e-1", epoch_before=1, epoch_after=1)

    html = operator_client.get("/workflows/wf-done/").content.decode()
    claimed = html.split("<dt>Claimed</dt>", 1)[1].split("</dd>", 1)[0]

    assert "never" not in claimed
    assert "not held; released" in claimed
    assert "last held by" in claimed
    assert 'href="/engines/e-1/"' in claimed
