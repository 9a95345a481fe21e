"""A claims search cannot read every id ever claimed: a long fragment of few distinct
pieces is refused before anything is read, and any search past its time budget
(WEFTBOARD_SEARCH_TIMEOUT_MS) is stopped; both answer 400 on the page and 422 in the API,
never a 500, and a normal search still answers. On both databases."""

from __future__ import annotations

import logging
from types import SimpleNamespace
from typing import Any
from urllib.parse import quote

import pytest
from django.db import connection
from django.test import Client, override_settings
from django.test.utils import CaptureQueriesContext

from fuzz.hooks import refused_by_a_rule
from tests import factories
from tests.conftest import _signed_in

pytestmark = pytest.mark.django_db

IDS = 100_000  # claim rows: a search for a fragment none of them holds reads them all
HOSTILE = "order-" * 42  # 252 characters, six distinct three-character pieces
# Too short to be refused by its shape, but made of pieces every id holds: the trigram
# index rules out no id, so the search checks every one (SQLite: every claim row).
BROAD = "wf-wf-wf-"


@pytest.fixture
def reader() -> Client:
    """Any signed-in user may search: no permission is needed to read."""
    return _signed_in(factories.make_user("reader"))


@pytest.fixture
def many_ids() -> None:
    """IDS claim rows, wf-000000 to wf-099999, written in one statement (on PostgreSQL
    the id table's trigger adds each id to the searched table)."""
    if connection.vendor == "postgresql":
        ids = f"SELECT 'wf-' || lpad(g::text, 6, '0') FROM generate_series(0, {IDS - 1}) g"
    else:
        ids = (
            f"WITH RECURSIVE s(g) AS (SELECT 0 UNION ALL SELECT g + 1 FROM s WHERE g < {IDS - 1})"
            " SELECT printf('wf-%06d', g) FROM s"
        )
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO claims_workflowclaim (workflow_id, epoch) SELECT *, 1 FROM ({ids}) AS n"
        )


def page(client: Client, q: str) -> Any:
    return client.get(f"/claims/?state=all&q={quote(q)}")


def api(client: Client, q: str) -> Any:
    return client.get(f"/api/v1/claims?q={quote(q)}")


def documented_to_the_fuzz(response: Any, q: str) -> bool:
    """Whether the API fuzz reads the refusal as a rule the schema states (the `q`
    parameter's description), not as a schema-valid request wrongly rejected."""
    sent = SimpleNamespace(url=f"http://testserver/api/v1/claims?q={quote(q)}", body=None)
    return refused_by_a_rule(SimpleNamespace(content=response.content, request=sent))


def test_a_long_repeated_fragment_is_refused_before_any_id_is_read(reader):
    factories.make_claim("order-1")
    factories.make_claim("job-0000000000000001", engine=None)
    with CaptureQueriesContext(connection) as queries:
        on_page = page(reader, HOSTILE)
        in_api = api(reader, HOSTILE)

    assert on_page.status_code == 400
    assert "does not repeat" in on_page.content.decode()
    assert in_api.status_code == 422
    assert "252 characters long but holds only 6 different" in in_api.json()["detail"]
    assert documented_to_the_fuzz(in_api, HOSTILE)
    searched = [q["sql"] for q in queries.captured_queries if "claims_claimidsearch" in q["sql"]]
    claim_reads = [q["sql"] for q in queries.captured_queries if "claims_workflowclaim" in q["sql"]]
    assert searched == []
    assert claim_reads == []
    # Its variants the index sees the same way: case and punctuation changed, or nothing
    # but punctuation (no piece at all: the index would hand over every id).
    for variant in ("ORDER-order_Order." * 14, "-" * 20):
        assert api(reader, variant).status_code == 422
    # A fragment of distinct pieces, a short one, and a digit run are searched as before.
    for q in ("order-1", "ord", "0000000000000001"):
        assert page(reader, q).status_code == 200
        assert len(api(reader, q).json()["items"]) == 1


def test_a_search_past_its_budget_is_stopped_and_a_normal_one_answers(reader, many_ids, caplog):
    with caplog.at_level(logging.WARNING), override_settings(WEFTBOARD_SEARCH_TIMEOUT_MS=1):
        on_page = page(reader, BROAD)
        fragment = reader.get(
            f"/claims/?state=all&q={BROAD}", HTTP_HX_REQUEST="true", HTTP_HX_TARGET="claims-table"
        )
        in_api = api(reader, BROAD)

    assert on_page.status_code == 400
    assert "took longer than 1 ms" in on_page.content.decode()
    assert "WEFTBOARD_SEARCH_TIMEOUT_MS" in on_page.content.decode()
    assert fragment.status_code == 400
    assert in_api.status_code == 422
    assert "was stopped" in in_api.json()["detail"]
    assert documented_to_the_fuzz(in_api, BROAD)
    stopped = [r for r in caplog.records if r.name == "weftboard.reads"]
    assert len(stopped) == 3
    assert all(r.levelno == logging.WARNING for r in stopped)
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
    # The page's own reads after the refusal still worked: the search's statements were
    # rolled back alone (PostgreSQL) and the connection answers.
    assert factories.make_claim("after-the-search").workflow_id == "after-the-search"

    # Under the default budget (250 ms) a search for one id, or a common fragment, answers.
    found = api(reader, "wf-012345")
    common = api(reader, "wf-01")
    assert found.status_code == 200
    assert [item["workflow_id"] for item in found.json()["items"]] == ["wf-012345"]
    assert common.status_code == 200
    assert len(common.json()["items"]) == 50
    assert page(reader, "wf-099999").status_code == 200


def test_a_query_past_its_budget_is_stopped_and_refused_saying_what_to_add(
    reader, many_ids, caplog
):
    """A query no index narrows (a part of the id that no id holds) reads every row: past
    WEFTBOARD_QUERY_TIMEOUT_MS it is stopped, on the page and in the API."""
    query = quote('id CONTAINS "nomatch" OR epoch > 5')
    with caplog.at_level(logging.WARNING), override_settings(WEFTBOARD_QUERY_TIMEOUT_MS=1):
        on_page = reader.get(f"/claims/?query={query}")
        in_api = reader.get(f"/api/v1/claims?query={query}")

    assert on_page.status_code == 400
    assert "the limit on one query" in on_page.content.decode()
    assert in_api.status_code == 422
    assert "add a term an index serves" in in_api.json()["detail"]
    assert documented_to_the_fuzz(in_api, "x")
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
    # Under the default budget the same query answers (it matches nothing here).
    assert reader.get(f"/api/v1/claims?query={query}").json()["items"] == []
