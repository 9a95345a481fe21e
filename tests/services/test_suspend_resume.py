"""Suspend and resume, as the services do them: a compare-and-swap on the epoch the
operator saw, the claim rotated to no holder with an audit event, the status and its
index row moved in the same commit. The world (tests/services/conftest.py): wf-1
running, held by e-1 at epoch 41.
"""

from __future__ import annotations

import pytest

from claims.models import ClaimEvent, Workflow, WorkflowClaim, WorkflowVisibility
from claims.protocol.errors import (
    InvalidInputError,
    InvalidTransitionError,
    StaleEpochError,
    WorkflowNotFoundError,
)
from claims.services.errors import ReadOnlyError
from claims.services.workflows import (
    workflow_cancel,
    workflow_resume,
    workflow_start,
    workflow_suspend,
)

from .conftest import EPOCH, WORLD

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures(*WORLD)]


def claim_state(workflow_id: str = "wf-1") -> tuple[int, str | None]:
    claim = WorkflowClaim.objects.get(workflow_id=workflow_id)
    return claim.epoch, claim.holder_engine_id


def status(workflow_id: str = "wf-1") -> tuple[str, str]:
    """The workflow's status and its index row's: they move together."""
    workflow = Workflow.objects.get(workflow_id=workflow_id).status
    return workflow, WorkflowVisibility.objects.get(workflow_id=workflow_id).status


def suspend(expected_epoch: int = EPOCH, reason: str = "hold for INC-1") -> Workflow:
    return workflow_suspend("wf-1", actor="operator", reason=reason, expected_epoch=expected_epoch)


def resume(expected_epoch: int = EPOCH + 1, reason: str = "INC-1 fixed") -> Workflow:
    return workflow_resume("wf-1", actor="operator", reason=reason, expected_epoch=expected_epoch)


def test_suspend_deposes_the_holder_and_records_who_and_why():
    workflow = suspend()

    assert workflow.status == "suspended"
    assert status() == ("suspended", "suspended")
    assert claim_state() == (EPOCH + 1, None)
    event = ClaimEvent.objects.get()
    assert (event.kind, event.epoch_before, event.epoch_after) == ("rotated", EPOCH, EPOCH + 1)
    assert (event.actor, event.reason) == ("operator", "hold for INC-1")


def test_resume_makes_it_running_and_ownerless_at_the_next_epoch():
    suspend()

    workflow = resume()

    assert workflow.status == "running"
    assert status() == ("running", "running")
    assert claim_state() == (EPOCH + 2, None)
    event = ClaimEvent.objects.order_by("-id").first()
    assert event is not None
    assert (event.kind, event.epoch_before, event.epoch_after) == ("rotated", EPOCH + 1, EPOCH + 2)
    assert (event.actor, event.reason) == ("operator", "INC-1 fixed")


def test_suspend_on_a_moved_epoch_is_stale_and_changes_nothing():
    with pytest.raises(StaleEpochError):
        suspend(expected_epoch=EPOCH - 1)

    assert Workflow.objects.get(workflow_id="wf-1").status == "running"
    assert claim_state() == (EPOCH, "e-1")
    assert not ClaimEvent.objects.exists()


def test_resume_on_a_moved_epoch_is_stale_and_changes_nothing():
    suspend()

    with pytest.raises(StaleEpochError):
        resume(expected_epoch=EPOCH)

    assert Workflow.objects.get(workflow_id="wf-1").status == "suspended"
    assert claim_state() == (EPOCH + 1, None)


def test_only_a_running_workflow_is_suspended():
    suspend()

    with pytest.raises(InvalidTransitionError, match=r"cannot suspend .* it is suspended"):
        suspend(expected_epoch=EPOCH + 1)
    assert claim_state() == (EPOCH + 1, None)


def test_only_a_suspended_workflow_is_resumed():
    with pytest.raises(InvalidTransitionError, match=r"cannot resume .* it is running"):
        resume(expected_epoch=EPOCH)
    assert claim_state() == (EPOCH, "e-1")


def test_a_finished_workflow_is_neither_suspended_nor_resumed():
    workflow_cancel("wf-1", actor="operator", reason="stop", expected_epoch=EPOCH)

    with pytest.raises(InvalidTransitionError):
        suspend(expected_epoch=EPOCH + 1)
    with pytest.raises(InvalidTransitionError):
        resume(expected_epoch=EPOCH + 1)
    assert claim_state() == (EPOCH + 1, None)


def test_a_suspended_workflow_may_be_cancelled():
    """Suspended is not an end: cancel still ends it."""
    suspend()

    workflow = workflow_cancel("wf-1", actor="operator", reason="stop", expected_epoch=EPOCH + 1)

    assert workflow.status == "cancelled"
    assert claim_state() == (EPOCH + 2, None)


def test_a_workflow_never_claimed_is_suspended_at_epoch_zero():
    """0 is what an operator saw of a workflow with no claim row; the rotation makes one."""
    workflow_start(workflow_type="order", workflow_id="wf-new")

    workflow_suspend("wf-new", actor="operator", reason="hold", expected_epoch=0)

    assert status("wf-new") == ("suspended", "suspended")
    assert claim_state("wf-new") == (1, None)


def test_an_unknown_workflow_is_not_found():
    with pytest.raises(WorkflowNotFoundError):
        workflow_suspend("nope", actor="operator", reason="hold", expected_epoch=0)
    with pytest.raises(WorkflowNotFoundError):
        workflow_resume("nope", actor="operator", reason="go", expected_epoch=0)


@pytest.mark.parametrize("reason", ["", "  ", "nul\x00byte", "bell\x07"])
def test_resume_applies_the_reason_rule(reason):
    suspend()

    with pytest.raises(InvalidInputError):
        resume(reason=reason)
    assert status() == ("suspended", "suspended")


def test_resume_is_refused_while_read_only(settings):
    suspend()
    settings.WEFTBOARD_READ_ONLY = "yes"

    with pytest.raises(ReadOnlyError):
        resume()
    assert status() == ("suspended", "suspended")
