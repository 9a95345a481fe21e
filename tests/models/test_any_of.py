"""AnyOf: a column equal to one of a list of values, one array parameter on PostgreSQL."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.models import F
from django.test.utils import CaptureQueriesContext

from claims.models import WorkflowClaim
from claims.models.any_of import AnyOf
from tests import factories

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def claims() -> None:
    for workflow_id in ("wf-a", "wf-b", "wf-c"):
        factories.make_claim(workflow_id)


def ids(values: list[str]) -> list[str]:
    rows = WorkflowClaim.objects.filter(AnyOf(F("workflow_id"), values))
    return sorted(rows.values_list("workflow_id", flat=True))


def test_it_selects_the_rows_whose_column_is_one_of_the_values():
    assert ids(["wf-c", "wf-a", "wf-x"]) == ["wf-a", "wf-c"]
    assert ids(["wf-b"]) == ["wf-b"]


def test_no_values_select_no_rows():
    assert ids([]) == []


def test_values_are_parameters_not_text_of_the_statement():
    hostile = "wf-a') OR ('1' = '1"
    assert ids([hostile]) == []


def test_an_update_changes_exactly_the_rows_named():
    changed = WorkflowClaim.objects.filter(AnyOf(F("workflow_id"), ["wf-a", "wf-b"])).update(
        epoch=F("epoch") + 1
    )

    assert changed == 2
    epochs = dict(WorkflowClaim.objects.values_list("workflow_id", "epoch"))
    assert epochs["wf-a"] == epochs["wf-c"] + 1


def test_on_postgresql_a_chunk_of_any_size_is_one_statement_text():
    """Every chunk sends the same text, planned once, whatever its length."""
    if connection.vendor != "postgresql":
        pytest.skip("SQLite has no arrays: it writes IN with a placeholder per value")
    with CaptureQueriesContext(connection) as queries:
        ids(["wf-a"])
        ids(["wf-a", "wf-b", "wf-c", "wf-d"])

    first, second = (query["sql"] for query in queries.captured_queries)
    assert "= ANY(" in first
    assert first.split("ANY(")[0] == second.split("ANY(")[0]
