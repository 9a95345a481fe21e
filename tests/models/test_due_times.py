"""Workflow.due_at_ms: when a running workflow's next drive is due, kept by every write of
its state and by the migration that added it, by one rule (claims.models.parks)."""

from __future__ import annotations

import importlib
from types import SimpleNamespace
from typing import Any

import pytest
from django.db import connection

from claims.models import Workflow, WorkflowStatus
from claims.models.parks import DUE_NOW, due_at_of, executing_recheck_ms, park_wake_at
from claims.protocol.times import MAX_TIME_MS
from claims.runtime.writes import workflow_checkpoint_write
from tests import factories

RECHECK_MS = executing_recheck_ms()  # the renew interval the test settings configure

WAKE = 1_700_000_005_000

# Each state beside the wake time the park rule gives it.
STATES: list[tuple[Any, int]] = [
    ({"input": None, "steps": {}}, DUE_NOW),
    ({"park": {"sleep": 0, "wake_at_ms": WAKE}}, WAKE),
    ({"park": {"sleep": 0, "wake_at_ms": 0}}, 0),
    ({"park": {"sleep": 0, "wake_at_ms": -5}}, DUE_NOW),
    ({"park": {"sleep": 0, "wake_at_ms": MAX_TIME_MS + 1}}, MAX_TIME_MS),
    ({"park": {"sleep": 0, "wake_at_ms": 10**303}}, MAX_TIME_MS),
    ({"park": {"sleep": 0, "wake_at_ms": 1_000.5}}, DUE_NOW),
    ({"park": {"sleep": 0, "wake_at_ms": True}}, DUE_NOW),
    ({"park": {"sleep": 0, "wake_at_ms": str(WAKE)}}, DUE_NOW),
    ({"park": {"sleep": 0}}, DUE_NOW),
    ({"park": [WAKE]}, DUE_NOW),
    ({"park": None}, DUE_NOW),
    ([{"park": {"wake_at_ms": WAKE}}], DUE_NOW),
    ("parked", DUE_NOW),
]


@pytest.mark.parametrize(("state", "due"), [*STATES, (None, DUE_NOW)])
def test_the_park_rule_reads_an_integer_wake_time_and_nothing_else(state: Any, due: int) -> None:
    assert park_wake_at(state) == due


@pytest.mark.parametrize(("state", "wake"), [*STATES, (None, DUE_NOW)])
def test_a_workflow_is_due_at_its_wake_time_else_a_recheck_after_its_write(
    state: Any, wake: int
) -> None:
    written = WAKE - 60_000
    expected = wake if wake != DUE_NOW else written + RECHECK_MS
    assert due_at_of(state, written_at_ms=written) == expected


def test_the_recheck_stays_inside_the_times_a_page_can_show() -> None:
    assert due_at_of({}, written_at_ms=MAX_TIME_MS) == MAX_TIME_MS
    assert due_at_of({}, written_at_ms=-5) == RECHECK_MS


@pytest.mark.django_db
def test_saving_a_workflow_keeps_its_due_time() -> None:
    row = factories.make_workflow("wf", state={"park": {"sleep": 0, "wake_at_ms": WAKE}})
    assert Workflow.objects.get(workflow_id="wf").due_at_ms == WAKE

    row.state = {"steps": {}}
    row.updated_at_ms = WAKE + 1
    row.save(update_fields=["state", "updated_at_ms"])
    assert Workflow.objects.get(workflow_id="wf").due_at_ms == WAKE + 1 + RECHECK_MS


@pytest.mark.django_db
def test_a_checkpoint_write_keeps_the_due_time_of_the_state_it_writes() -> None:
    factories.make_workflow("wf")
    workflow_checkpoint_write(
        "wf", state={"park": {"sleep": 0, "wake_at_ms": WAKE}}, now_ms=WAKE - 5_000
    )
    assert Workflow.objects.get(workflow_id="wf").due_at_ms == WAKE

    workflow_checkpoint_write("wf", state={"steps": {"next": {}}}, now_ms=WAKE)
    assert Workflow.objects.get(workflow_id="wf").due_at_ms == WAKE + RECHECK_MS


@pytest.mark.django_db
def test_the_migration_backfills_running_workflows_by_the_same_rule() -> None:
    """Rows written before the column (bulk_create writes the column's default, as the
    migration's AddField does), then the migration's own SQL on this database: every
    workflow's park, whatever its status (a suspended one may be resumed)."""
    rows = [
        Workflow(
            workflow_id=f"wf-{n}",
            workflow_type="order",
            status=WorkflowStatus.RUNNING,
            state=state,
            created_at_ms=0,
            updated_at_ms=0,
        )
        for n, (state, _) in enumerate(STATES)
    ]
    suspended = Workflow(
        workflow_id="wf-suspended",
        workflow_type="order",
        status=WorkflowStatus.SUSPENDED,
        state={"park": {"sleep": 0, "wake_at_ms": WAKE}},
        created_at_ms=0,
        updated_at_ms=0,
    )
    Workflow.objects.bulk_create([*rows, suspended])
    assert set(Workflow.objects.values_list("due_at_ms", flat=True)) == {DUE_NOW}
    migration = importlib.import_module("claims.migrations.0026_workflow_due_time")

    migration.backfill_due_times(None, SimpleNamespace(connection=connection))

    due = dict(Workflow.objects.values_list("workflow_id", "due_at_ms"))
    # Suspended mid-sleep: a resume writes the status alone, so the park's time is kept.
    assert due.pop("wf-suspended") == WAKE
    assert due == {f"wf-{n}": expected for n, (_, expected) in enumerate(STATES)}
