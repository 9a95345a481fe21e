"""No new side effect past the local deadline or once disposing; cancel deposes the driver."""

from __future__ import annotations

import threading

from claims.models import WorkflowVisibility
from claims.services.workflows import workflow_cancel

from .conftest import TTL_MS, claim_row, ledger, recorded_steps, workflow_row
from .workflows import after_step, during_step


def test_drive_past_the_local_deadline_pauses_without_running_the_step(engine, start, clock):
    """No renewal for a whole TTL: the claim may have lapsed unseen, so nothing starts;
    nothing is written either, and a renewal lets the next drive run."""
    a = engine("a")
    wf = start("ledger", engine=a)
    updated_at = workflow_row(wf).updated_at_ms
    clock.advance(TTL_MS)

    assert a.drive(wf) == "paused"

    assert ledger(wf) == {}
    assert workflow_row(wf).updated_at_ms == updated_at
    assert claim_row(wf).holder_engine_id == "a"
    assert a.registry.renew(wf).status == "renewed"
    assert a.drive(wf) == "completed"
    assert ledger(wf) == {f"step-{n}": [(1, "a")] for n in (1, 2, 3)}


def test_deadline_passing_during_a_step_lets_it_checkpoint_then_pauses_before_the_next(
    engine, start, clock
):
    a = engine("a")
    wf = start("test-hooked-ledger", engine=a)
    during_step(wf, "step-1", lambda ctx: clock.advance(TTL_MS))

    assert a.drive(wf) == "paused"

    assert ledger(wf) == {"step-1": [(1, "a")]}
    assert recorded_steps(wf) == {"step-1": (1, "a")}


def test_disposing_engine_starts_no_step(engine, start):
    a = engine("a")
    wf = start("ledger", engine=a)
    a.disposing.set()

    assert a.drive(wf) == "paused"

    assert ledger(wf) == {}
    assert workflow_row(wf).status == "running"


def test_disposal_lets_the_running_step_checkpoint_and_a_successor_resumes(engine, start):
    a, b = engine("a"), engine("b")
    wf = start("test-hooked-ledger", engine=a)
    during_step(wf, "step-1", lambda ctx: a.disposing.set())

    assert a.drive(wf) == "paused"
    a.registry.release_all()

    assert recorded_steps(wf) == {"step-1": (1, "a")}
    assert b.registry.acquire(wf).epoch == 2
    assert b.drive(wf) == "completed"
    assert ledger(wf) == {"step-1": [(1, "a")], "step-2": [(2, "b")], "step-3": [(2, "b")]}


def test_workflow_code_catching_exception_does_not_catch_a_pause(engine, start):
    """``except Exception`` around a step does not swallow the stop of the drive."""
    a = engine("a")
    wf = start("test-swallowing", engine=a)
    after_step(wf, "step-1", lambda ctx: a.disposing.set())

    assert a.drive(wf) == "paused"

    assert ledger(wf) == {"step-1": [(1, "a")]}
    row = workflow_row(wf)
    assert row.status == "running"
    assert "result" not in row.state


def test_cancel_during_a_step_deposes_the_drive_and_the_workflow_stays_cancelled(
    engine, start, clock
):
    a = engine("a")
    wf = start("test-hooked-ledger", engine=a)
    during_step(wf, "step-2", lambda ctx: workflow_cancel(wf, reason="customer", clock=clock))

    assert a.drive(wf) == "deposed"

    row = workflow_row(wf)
    assert row.status == "cancelled"
    assert "result" not in row.state
    assert "error" not in row.state
    assert recorded_steps(wf) == {"step-1": (1, "a")}
    claim = claim_row(wf)
    assert (claim.epoch, claim.holder_engine_id) == (2, None)
    assert WorkflowVisibility.objects.get(workflow_id=wf).status == "cancelled"
    assert a.drive(wf) == "deposed"
    assert ledger(wf) == {"step-1": [(1, "a")], "step-2": [(1, "a")]}


def test_cancelled_before_the_drive_is_not_running(engine, start, clock):
    a = engine("a")
    wf = start("ledger", engine=a)
    workflow_cancel(wf, clock=clock)

    assert a.drive(wf) == "not-running"

    assert ledger(wf) == {}


def test_second_drive_of_the_same_id_in_one_process_is_busy(engine, start):
    """Another thread asks to drive the workflow while a drive of it is inside a step."""
    a = engine("a")
    wf = start("test-hooked-ledger", engine=a)
    other = start("ledger", {"steps": 1}, engine=a)
    outcomes: dict[str, str] = {}

    def drive_from_another_thread(ctx):
        thread = threading.Thread(target=lambda: outcomes.update(same=a.drive(wf)))
        thread.start()
        thread.join(timeout=10)

    during_step(wf, "step-2", drive_from_another_thread)

    assert a.drive(wf) == "completed"

    assert outcomes == {"same": "busy"}
    assert ledger(wf) == {f"step-{n}": [(1, "a")] for n in (1, 2, 3)}
    assert a.drive(other) == "completed"
