"""Suspend deposes the driving engine and no reclaim pass takes the workflow back; resume
makes it running and ownerless, the next reclaim pass grants it, and the engine carries
on from its last checkpoint (the checkpointed steps replay, not rerun)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from claims.models import WorkflowVisibility
from claims.protocol import ReclaimTarget, run_reclaim_pass
from claims.protocol.testing import FakeClock
from claims.services.workflows import workflow_resume, workflow_suspend
from claims.store import OrmClaimStore

from .conftest import Engine, claim_row, ledger, recorded_steps, workflow_row
from .workflows import during_step


def reclaim_pass(engine: Engine) -> list[str]:
    """One reclaim pass of ``engine``; returns the workflows it was handed to drive."""
    driven: list[str] = []
    target = ReclaimTarget(engine.registry, OrmClaimStore(), on_reclaimed=driven.append)
    assert run_reclaim_pass(target).status == "completed"
    return driven


@pytest.fixture
def suspend_during_step_2(
    engine: Callable[[str], Engine], start: Callable[..., str], clock: FakeClock
) -> tuple[Engine, Engine, str]:
    """Engines a and b, and a workflow started on a that an operator suspends (at epoch 1)
    while a runs its step-2: a's next drive meets the suspension there."""
    a, b = engine("a"), engine("b")
    wf = start("test-hooked-ledger", engine=a)
    during_step(
        wf,
        "step-2",
        lambda ctx: workflow_suspend(
            wf, actor="operator", reason="hold", expected_epoch=1, clock=clock
        ),
    )
    return a, b, wf


def test_suspend_during_a_step_deposes_the_drive_and_no_reclaim_takes_it_back(
    suspend_during_step_2,
):
    a, b, wf = suspend_during_step_2

    assert a.drive(wf) == "deposed"

    assert workflow_row(wf).status == "suspended"
    assert WorkflowVisibility.objects.get(workflow_id=wf).status == "suspended"
    assert recorded_steps(wf) == {"step-1": (1, "a")}
    assert reclaim_pass(a) == []
    assert reclaim_pass(b) == []
    claim = claim_row(wf)
    assert (claim.epoch, claim.holder_engine_id) == (2, None)


def test_resumed_it_is_reclaimed_and_driven_to_completion_from_its_checkpoint(
    suspend_during_step_2, clock
):
    a, b, wf = suspend_during_step_2
    assert a.drive(wf) == "deposed"

    workflow_resume(wf, actor="operator", reason="go on", expected_epoch=2, clock=clock)
    driven = reclaim_pass(b)

    assert driven == [wf]
    claim = claim_row(wf)
    assert (claim.epoch, claim.holder_engine_id) == (4, "b")
    assert b.drive(wf) == "completed"
    row = workflow_row(wf)
    assert row.status == "completed"
    assert WorkflowVisibility.objects.get(workflow_id=wf).status == "completed"
    # step-1 was checkpointed before the suspension: replayed, not rerun. step-2 ran under
    # epoch 1 when the suspension deposed it, and again under the new owner's epoch.
    assert ledger(wf) == {
        "step-1": [(1, "a")],
        "step-2": [(1, "a"), (4, "b")],
        "step-3": [(4, "b")],
    }
