"""A held workflow runs to its end: terminal write and release commit together."""

from __future__ import annotations

import pytest

from claims.models import ClaimEvent, Workflow, WorkflowVisibility
from claims.runtime import WorkflowDriver

from .conftest import START_MS, claim_row, ledger, recorded_steps, workflow_row


def test_ledger_workflow_completes_and_releases_its_claim_keeping_the_epoch(engine, start):
    """Each step runs once and is checkpointed under epoch 1; the result is saved, the
    holder cleared with the epoch kept, a "released" event written, the index updated."""
    a = engine("a")
    wf = start("ledger", {"steps": 3}, engine=a)

    assert a.drive(wf) == "completed"

    row = workflow_row(wf)
    assert row.status == "completed"
    entries = row.state["result"]["entries"]
    assert row.state["result"] == {"steps": 3, "entries": entries}
    assert ledger(wf) == {f"step-{n}": [(1, "a")] for n in (1, 2, 3)}
    assert recorded_steps(wf) == {f"step-{n}": (1, "a") for n in (1, 2, 3)}
    claim = claim_row(wf)
    assert (claim.epoch, claim.holder_engine_id, claim.holder_epoch) == (1, None, None)
    assert (claim.holder_expires_at_ms, claim.holder_claimed_at_ms) == (None, None)
    released = ClaimEvent.objects.filter(workflow_id=wf, kind="released").values_list(
        "epoch_before", "epoch_after", "engine_id"
    )
    assert list(released) == [(1, 1, "a")]
    visibility = WorkflowVisibility.objects.get(workflow_id=wf)
    assert (visibility.status, visibility.updated_at_ms) == ("completed", row.updated_at_ms)
    assert a.registry.held_workflow_ids() == []


def test_step_checkpoint_records_result_epoch_engine_and_time(engine, start, clock):
    a = engine("a")
    wf = start("invoice", {"lines": [100, 250]}, engine=a)

    assert a.drive(wf) == "completed"

    steps = workflow_row(wf).state["steps"]
    assert steps["compute"] == {
        "result": {"lines": 2, "total_cents": 350},
        "epoch": 1,
        "engine_id": "a",
        "at_ms": START_MS,
    }
    assert steps["send"]["result"]["sent_total_cents"] == 350


@pytest.mark.parametrize(
    ("workflow_type", "input", "expected"),
    [
        ("order", {"items": 2}, {"items": 2, "charged_cents": 2_500}),
        ("order", None, {"items": 1, "charged_cents": 1_250}),
        ("invoice", None, {"lines": 2, "total_cents": 3_500, "sent_total_cents": 3_500}),
    ],
)
def test_demo_types_complete_in_one_drive(engine, start, workflow_type, input, expected):
    """order and invoice run through (the order's default sleep is zero: no park)."""
    a = engine("a")
    wf = start(workflow_type, input, engine=a)

    assert a.drive(wf) == "completed"

    result = workflow_row(wf).state["result"]
    assert expected.items() <= result.items()


def test_drive_of_a_completed_workflow_is_not_running_and_runs_nothing(engine, start):
    a = engine("a")
    wf = start("ledger", engine=a)
    assert a.drive(wf) == "completed"
    before = ledger(wf)

    assert a.drive(wf) == "not-running"
    assert engine("b").drive(wf) == "not-running"
    assert ledger(wf) == before


def test_drive_of_an_unknown_id_is_not_running(engine):
    assert engine("a").drive("no-such-workflow") == "not-running"


def test_unregistered_type_is_left_alone_with_its_claim(engine, start):
    """A workflow whose type no module registers any more: the services start none, but a
    deploy may drop a module that running workflows still name."""
    a = engine("a")
    wf = start("ledger", engine=a)
    Workflow.objects.filter(workflow_id=wf).update(workflow_type="type-nobody-registered")

    assert a.drive(wf) == "unknown-type"

    assert workflow_row(wf).status == "running"
    assert claim_row(wf).holder_engine_id == "a"
    assert a.registry.held_workflow_ids() == [wf]


def test_drive_of_a_workflow_this_engine_does_not_hold_is_deposed_and_runs_nothing(engine, start):
    """An ownerless workflow, and one held by another engine: no step runs, nothing is written."""
    ownerless = start("ledger")
    held_by_a = start("ledger", engine=engine("a"))
    b = engine("b")

    assert b.drive(ownerless) == "deposed"
    assert b.drive(held_by_a) == "deposed"

    assert ledger(ownerless) == ledger(held_by_a) == {}
    assert workflow_row(ownerless).state["steps"] == {}
    assert claim_row(held_by_a).holder_engine_id == "a"


def test_driver_is_not_disposing_unless_told(engine, start, clock):
    a = engine("a")
    wf = start("ledger", {"steps": 1}, engine=a)
    driver = WorkflowDriver(a.registry, clock=clock)

    assert driver.drive(wf) == "completed"
    assert ledger(wf) == {"step-1": [(1, "a")]}
