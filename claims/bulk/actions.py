"""What each bulk action does to one item and which items its rules refuse: the same
rules as the one-row actions (claims.services.claims and .workflows), written once for the
preview's counts and the runner's judgement of each item."""

from __future__ import annotations

from dataclasses import dataclass

from claims.models import TERMINAL_STATUSES, BulkAction, ClaimEventKind, WorkflowStatus

FORCE_PERMISSION = "claims.force_claim"
BULK_PERMISSION = "claims.bulk_operate"


@dataclass(frozen=True)
class ActionRule:
    """One action: the permission its one-row form needs, the claim event each item it does
    writes, and the workflow status it moves the workflow to (None: the status stays)."""

    permission: str
    event_kind: ClaimEventKind
    new_status: WorkflowStatus | None = None


ACTION_RULES: dict[str, ActionRule] = {
    BulkAction.RELEASE: ActionRule(FORCE_PERMISSION, ClaimEventKind.FORCED_RELEASE),
    BulkAction.TAKEOVER: ActionRule(FORCE_PERMISSION, ClaimEventKind.FORCED_TAKEOVER),
    BulkAction.CANCEL: ActionRule(
        "claims.cancel_workflow", ClaimEventKind.ROTATED, WorkflowStatus.CANCELLED
    ),
    BulkAction.SUSPEND: ActionRule(
        "claims.suspend_workflow", ClaimEventKind.ROTATED, WorkflowStatus.SUSPENDED
    ),
    BulkAction.RESUME: ActionRule(
        "claims.suspend_workflow", ClaimEventKind.ROTATED, WorkflowStatus.RUNNING
    ),
}


def permissions_for(action: str) -> tuple[str, str]:
    """The action's own permission and the bulk one: a job needs both."""
    return ACTION_RULES[action].permission, BULK_PERMISSION


def refusal(action: str, status: str | None, held: bool) -> str | None:
    """Why the rules refuse ``action`` on a workflow in ``status`` (None: its row is gone)
    whose claim is ``held`` or not; None when they allow it."""
    if status is None:
        return "the workflow row is gone"
    if action == BulkAction.RELEASE:
        return None if held else "ownerless: there is no holder to release"
    if action == BulkAction.TAKEOVER:
        if status in TERMINAL_STATUSES:
            return f"{status}: a finished workflow needs no engine"
        if status == WorkflowStatus.SUSPENDED:
            return "suspended: resume it first"
        return None
    if action == BulkAction.CANCEL:
        return f"{status}: it has ended already" if status in TERMINAL_STATUSES else None
    if action == BulkAction.SUSPEND:
        return None if status == WorkflowStatus.RUNNING else f"{status}: only a running one"
    return None if status == WorkflowStatus.SUSPENDED else f"{status}: only a suspended one"
