"""bulk_preview: the count, the refusals by rule, and the first rows, for each action."""

from __future__ import annotations

import pytest

from claims.bulk import bulk_preview
from claims.fleet_clock import fleet_now
from claims.query import parse

from .conftest import make_mixed

pytestmark = pytest.mark.django_db


def preview(list_name: str, query: str, action: str, **kwargs):
    now_ms, timing = fleet_now()
    return bulk_preview(list_name, parse(query), action, now_ms=now_ms, timing=timing, **kwargs)


@pytest.mark.parametrize(
    ("action", "refused"),
    [
        ("release", {"ownerless: there is no holder to release": 3}),
        (
            "takeover",
            {"completed: a finished workflow needs no engine": 1, "suspended: resume it first": 1},
        ),
        ("cancel", {"completed: it has ended already": 1}),
        ("suspend", {"suspended: only a running one": 1, "completed: only a running one": 1}),
        ("resume", {"running: only a suspended one": 2, "completed: only a suspended one": 1}),
    ],
)
def test_the_claims_list_counts_what_each_action_would_refuse(action, refused):
    make_mixed()

    seen = preview("claims", 'id STARTS_WITH "wf-"', action)

    assert seen.count == 5  # every claim row; wf-new has none
    assert seen.refused == {"the workflow row is gone": 1, **refused}
    assert seen.acting == 5 - sum(seen.refused.values())


def test_the_workflows_list_reads_a_workflow_never_claimed_at_epoch_zero():
    make_mixed()

    seen = preview("workflows", 'status IN ("running", "suspended")', "cancel")

    assert seen.count == 4
    assert seen.refused == {}
    assert [(row.workflow_id, row.epoch, row.held) for row in seen.first] == [
        ("wf-free", 5, False),
        ("wf-held", 2, True),
        ("wf-new", 0, False),
        ("wf-sus", 4, False),
    ]


def test_the_first_rows_are_in_id_order_with_their_refusals():
    make_mixed()

    seen = preview("claims", 'id STARTS_WITH "wf-"', "release", rows=2)

    assert [(row.workflow_id, row.status, row.refusal) for row in seen.first] == [
        ("wf-done", "completed", "ownerless: there is no holder to release"),
        ("wf-free", "running", "ownerless: there is no holder to release"),
    ]


def test_too_many_is_said_against_the_setting(settings):
    make_mixed()
    settings.WEFTBOARD_BULK_MAX_ITEMS = 4

    assert preview("claims", 'id STARTS_WITH "wf-"', "release").too_many
    assert not preview("claims", 'id = "wf-held"', "release").too_many
