"""The operator actions on one workflow, one small definition each: what rules it
out for this workflow (409), and how it is performed (a service call and its message).

claims.views.actions draws the confirmation and runs the POST; the rules every write obeys
(read-only, the reason, the epoch compare-and-swap) are the services'.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from claims.models import TERMINAL_STATUSES, Workflow, WorkflowStatus
from claims.protocol.errors import WorkflowNotFoundError
from claims.selectors.claims.listing import ClaimView
from claims.services.claims import claim_force_release, claim_force_takeover_and_notify
from claims.services.workflows import workflow_cancel, workflow_resume, workflow_suspend

from .permissions import CANCEL_WORKFLOW, FORCE_CLAIM, SUSPEND_WORKFLOW


@dataclass(frozen=True)
class ActionForm:
    """What the operator posted, checked: the reason, the epoch they saw, the engine."""

    actor: str
    reason: str
    expected_epoch: int | None
    target_engine_id: str = ""


Conflict = Callable[[Workflow | None, ClaimView | None], str | None]
Perform = Callable[[str, ActionForm, ClaimView | None], str]


@dataclass(frozen=True)
class ActionKind:
    title: str
    permission: str
    # Why this workflow rules the action out (a 409), or None.
    conflict: Conflict
    # Performs the action through its service; returns the message for the operator.
    perform: Perform
    # The epoch the form carries when there is no claim row (0: "never claimed", for the
    # workflow transitions); None means the action needs a claim.
    unclaimed_epoch: int | None = None
    # The form field a ClaimConfigError from the service belongs to.
    error_field: str = "reason"
    chooses_engine: bool = False


def _no_workflow_row(claim: ClaimView | None) -> str:
    """A claim row whose workflow row was deleted: every action refuses it, the API with
    404 and this same rule's message (WorkflowNotFoundError)."""
    assert claim is not None  # with neither row the page is a 404 before any action
    return f"{WorkflowNotFoundError(claim.workflow_id)}: only its claim row is kept"


def _release_conflict(workflow: Workflow | None, claim: ClaimView | None) -> str | None:
    if claim is None:
        return "this workflow has never been claimed"
    if workflow is None:
        # Nothing needs it released: no engine drives a deleted workflow, and an id used
        # again continues the epoch line (the service refuses it too).
        return _no_workflow_row(claim)
    if claim.state == "ownerless":
        return "nobody holds this claim: there is nothing to release"
    return None


def _takeover_conflict(workflow: Workflow | None, claim: ClaimView | None) -> str | None:
    if claim is None:
        return "this workflow has never been claimed"
    if workflow is None:
        return f"{_no_workflow_row(claim)}: no engine needs to drive it"
    if workflow.status in TERMINAL_STATUSES or workflow.status == WorkflowStatus.SUSPENDED:
        return f"the workflow is {workflow.status}: no engine needs to drive it"
    return None


def _cancel_conflict(workflow: Workflow | None, claim: ClaimView | None) -> str | None:
    if workflow is None:
        return _no_workflow_row(claim)
    if workflow.status in TERMINAL_STATUSES:
        return f"the workflow is already {workflow.status}"
    return None


def _suspend_conflict(workflow: Workflow | None, claim: ClaimView | None) -> str | None:
    if workflow is None:
        return _no_workflow_row(claim)
    if workflow.status != WorkflowStatus.RUNNING:
        return f"the workflow is {workflow.status}: only a running workflow can be suspended"
    return None


def _resume_conflict(workflow: Workflow | None, claim: ClaimView | None) -> str | None:
    if workflow is None:
        return _no_workflow_row(claim)
    if workflow.status != WorkflowStatus.SUSPENDED:
        return f"the workflow is {workflow.status}: only a suspended workflow can be resumed"
    return None


def _release(workflow_id: str, form: ActionForm, old: ClaimView | None) -> str:
    assert form.expected_epoch is not None
    epoch = claim_force_release(
        workflow_id, expected_epoch=form.expected_epoch, actor=form.actor, reason=form.reason
    )
    holder = old.holder_engine_id if old and old.holder_engine_id else None
    return f"Released: epoch {form.expected_epoch} → {epoch}" + (
        f"; engine {holder} is deposed on its next write" if holder else ""
    )


def _takeover(workflow_id: str, form: ActionForm, old: ClaimView | None) -> str:
    assert form.expected_epoch is not None
    takeover = claim_force_takeover_and_notify(
        workflow_id,
        expected_epoch=form.expected_epoch,
        target_engine_id=form.target_engine_id,
        actor=form.actor,
        reason=form.reason,
    )
    return (
        f"Taken over: epoch {form.expected_epoch} → {takeover.epoch}; "
        f"engine {form.target_engine_id} adopts it"
    )


def _cancel(workflow_id: str, form: ActionForm, old: ClaimView | None) -> str:
    workflow_cancel(
        workflow_id, actor=form.actor, reason=form.reason, expected_epoch=form.expected_epoch
    )
    return "Cancelled; its claim moved to the next epoch"


def _suspend(workflow_id: str, form: ActionForm, old: ClaimView | None) -> str:
    assert form.expected_epoch is not None
    workflow_suspend(
        workflow_id, actor=form.actor, reason=form.reason, expected_epoch=form.expected_epoch
    )
    holder = old.holder_engine_id if old and old.holder_engine_id else None
    return "Suspended; its claim moved to the next epoch with no holder" + (
        f"; engine {holder} is deposed on its next write" if holder else ""
    )


def _resume(workflow_id: str, form: ActionForm, old: ClaimView | None) -> str:
    assert form.expected_epoch is not None
    workflow_resume(
        workflow_id, actor=form.actor, reason=form.reason, expected_epoch=form.expected_epoch
    )
    return "Resumed; the next reclaim pass gives it to an engine"


def _transition(title: str, permission: str, conflict: Conflict, perform: Perform) -> ActionKind:
    """A workflow transition: it applies whether or not the workflow was ever claimed."""
    return ActionKind(title, permission, conflict, perform, unclaimed_epoch=0)


# The URL of each action is named after its key (claims/urls.py).
ACTIONS: dict[str, ActionKind] = {
    # Epoch + 1 with no holder; the old holder is deposed on its next write.
    "release": ActionKind("Force release", FORCE_CLAIM, _release_conflict, _release),
    # Epoch + 1 granted to a chosen live engine, which is told to adopt and drive it.
    "takeover": ActionKind(
        "Force takeover",
        FORCE_CLAIM,
        _takeover_conflict,
        _takeover,
        error_field="target",
        chooses_engine=True,
    ),
    # External terminal transition: cancelled, the claim rotated in the same commit.
    "cancel": _transition("Cancel workflow", CANCEL_WORKFLOW, _cancel_conflict, _cancel),
    # Running to suspended, the claim rotated to no holder in the same commit.
    "suspend": _transition("Suspend workflow", SUSPEND_WORKFLOW, _suspend_conflict, _suspend),
    # Suspended to running, ownerless at the next epoch: the next reclaim pass takes it.
    "resume": _transition("Resume workflow", SUSPEND_WORKFLOW, _resume_conflict, _resume),
}
