"""Edge cases of the compiled query: the page's prefix and the query it becomes list the
same rows, id STARTS_WITH is read from an index, and empty text, LIKE's wildcards and
non-ASCII text mean what the reference (claims.query.matches) says."""

from __future__ import annotations

import pytest
from django.db import connection

from claims.fleet_clock import fleet_now
from claims.models import WorkflowClaim
from claims.protocol.timing import ClaimTiming
from claims.query import matches, parse
from claims.selectors import claim_list
from claims.selectors.query import QueryContext, claim_query_condition
from claims.views.query_text import claim_filters_as_query, editable_text
from tests import factories

pytestmark = pytest.mark.django_db

TIMING = ClaimTiming(ttl_ms=30_000, renew_interval_ms=10_000)


def _selected(text: str, now_ms: int) -> list[str]:
    condition = claim_query_condition(parse(text), QueryContext(now_ms, TIMING))
    return sorted(WorkflowClaim.objects.filter(condition).values_list("workflow_id", flat=True))


def test_the_prefix_filter_as_a_query_selects_the_same_rows():
    """ "Edit these filters as a query" does not change what is listed: the page's prefix
    and ``id STARTS_WITH`` are both case-sensitive, as ids are (SQLite's LIKE is not)."""
    now, timing = fleet_now()
    for workflow_id in ("wf-1", "WF-2"):
        factories.make_workflow(workflow_id)
        factories.make_claim(workflow_id, engine=None)
    by_dropdowns = claim_list(now_ms=now, timing=timing, state="all", prefix="wf")
    as_query = claim_filters_as_query(state="all", engine=None, prefix="wf", search=None)
    by_query = claim_list(
        now_ms=now, timing=timing, state="all", query=parse(editable_text(as_query, None))
    )
    assert [i.workflow_id for i in by_query.items] == [i.workflow_id for i in by_dropdowns.items]


def test_id_starts_with_is_read_from_an_index_as_the_budget_message_advises():
    """The budget's refusal advises "id STARTS_WITH" as a term an index serves: it is."""
    condition = claim_query_condition(parse('id STARTS_WITH "wf-1"'), QueryContext(0, TIMING))
    sql, params = WorkflowClaim.objects.filter(condition).values("pk").query.sql_with_params()
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute("EXPLAIN QUERY PLAN " + sql, params)
            plan = " ".join(str(row) for row in cursor.fetchall())
            assert "SEARCH" in plan, plan
        else:
            cursor.execute("SET enable_seqscan = off")
            cursor.execute("EXPLAIN " + sql, params)
            plan = " ".join(row[0] for row in cursor.fetchall())
            assert "Index Cond" in plan, plan


@pytest.mark.parametrize("text", ['id CONTAINS ""', 'id STARTS_WITH ""'])
def test_empty_text_matches_every_id_as_the_reference_says(text):
    now, _ = fleet_now()
    factories.make_workflow("wf-1")
    factories.make_claim("wf-1", engine=None)
    assert matches(parse(text), {"id": "wf-1"}, now)
    assert _selected(text, now) == ["wf-1"]


@pytest.mark.parametrize("text", ['id CONTAINS "%"', 'id STARTS_WITH "w_"', 'id CONTAINS "é"'])
def test_wildcards_and_unicode_are_plain_text(text):
    now, _ = fleet_now()
    for workflow_id in ("wf-1", "w_-%é"):
        factories.make_workflow(workflow_id)
        factories.make_claim(workflow_id, engine=None)
    wanted = sorted(w for w in ("wf-1", "w_-%é") if matches(parse(text), {"id": w}, now))
    assert _selected(text, now) == wanted


@pytest.mark.parametrize("engine", ["e-1", "engine1@host-a"])
def test_not_engine_keeps_the_claims_no_engine_holds(engine):
    """``NOT engine = x`` lists every claim x does not hold, the ownerless ones too: an
    engine condition is false, not unknown, where the holder is null (by id or by name),
    as the reference (claims.query.matches) says."""
    factories.make_engine("e-1", name="engine1@host-a")
    factories.make_engine("e-2", name="engine2@host-a")
    for workflow_id, holder in (("wf-1", "e-1"), ("wf-2", "e-2"), ("wf-3", None)):
        factories.make_workflow(workflow_id)
        factories.make_claim(workflow_id, engine=holder)

    assert _selected(f'engine = "{engine}"', 0) == ["wf-1"]
    assert _selected(f'NOT engine = "{engine}"', 0) == ["wf-2", "wf-3"]
    # != asks for an engine that is another one: a claim with none is not listed.
    assert _selected(f'engine != "{engine}"', 0) == ["wf-2"]
