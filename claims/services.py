"""Writes to workflows and claims. Every status change and its epoch rotation commit together."""

from __future__ import annotations

import uuid
from typing import Any

from django.db import transaction

from claims.clock import fleet_clock
from claims.conf import claim_timing
from claims.models import (
    TERMINAL_STATUSES,
    Engine,
    EngineStatus,
    Workflow,
    WorkflowClaim,
    WorkflowStatus,
    WorkflowVisibility,
)
from claims.protocol import Clock, rotate_claim
from claims.protocol.errors import (
    ClaimConfigError,
    InvalidTransitionError,
    StaleEpochError,
    WorkflowClaimUnavailableError,
    WorkflowNotFoundError,
)
from claims.protocol.ids import check_workflow_id
from claims.protocol.records import ClaimEventRecord, Holder
from claims.protocol.text import check_json_text, check_reason
from claims.store import OrmClaimStore

_store = OrmClaimStore()


def _now(clock: Clock | None) -> int:
    return (clock or fleet_clock())()


def workflow_index(workflow: Workflow) -> None:
    """Bring the visibility row in line with the workflow; caller holds the transaction."""
    WorkflowVisibility.objects.update_or_create(
        workflow_id=workflow.workflow_id,
        defaults={
            "status": workflow.status,
            "workflow_type": workflow.workflow_type,
            "updated_at_ms": workflow.updated_at_ms,
        },
    )


def workflow_start(
    *,
    workflow_type: str,
    input: Any = None,
    workflow_id: str | None = None,
    engine_id: str | None = None,
    clock: Clock | None = None,
) -> Workflow:
    """Create a running workflow; with ``engine_id`` it is claimed for that engine at once.

    Without an engine it starts ownerless and the next reclaim pass claims it.
    """
    workflow_id = check_workflow_id(workflow_id or str(uuid.uuid4()))
    if not workflow_type:
        raise ClaimConfigError("a workflow type is required")
    check_json_text(input, what="a workflow's input")
    now = _now(clock)
    with transaction.atomic():
        if Workflow.objects.filter(workflow_id=workflow_id).exists():
            raise InvalidTransitionError(workflow_id, "already started", "start")
        workflow = Workflow.objects.create(
            workflow_id=workflow_id,
            workflow_type=workflow_type,
            status=WorkflowStatus.RUNNING,
            state={"input": input, "steps": {}},
            created_at_ms=now,
            updated_at_ms=now,
        )
        workflow_index(workflow)
        if engine_id is not None:
            _claim_for_start(workflow_id, engine_id, now)
    return workflow


def _claim_for_start(workflow_id: str, engine_id: str, now: int) -> None:
    """Grant the claim of a new workflow; an id reused after purge keeps its epoch line."""
    ttl = claim_timing().ttl_ms
    row = _store.read_claim(workflow_id)
    epoch = 1 if row is None else row.epoch + 1
    holder = Holder(engine_id, epoch, now + ttl, now)
    event = ClaimEventRecord(
        workflow_id, "acquired", None if row is None else row.epoch, epoch, engine_id, now
    )
    if row is None:
        granted = _store.cas_insert(workflow_id, holder=holder, event=event)
    elif row.holder is None:
        granted = _store.cas_grant(
            workflow_id, expected_epoch=row.epoch, expected_holder=None, holder=holder, event=event
        )
    else:
        granted = False
    if not granted:
        current = _store.read_claim(workflow_id)
        raise WorkflowClaimUnavailableError(
            workflow_id, None if current is None else current.valid_holder_engine()
        )


def _lock_claim_then_workflow(workflow_id: str) -> tuple[Workflow, int | None]:
    """Lock in the order fenced writes do (claim row, then workflow row), so an
    external transition and an engine's checkpoint never deadlock; returns the workflow
    and the claim's epoch (None without a claim row). Caller holds the transaction."""
    epochs = list(
        WorkflowClaim.objects.select_for_update(no_key=True)
        .filter(workflow_id=workflow_id)
        .values_list("epoch", flat=True)
    )
    workflow = Workflow.objects.select_for_update().filter(workflow_id=workflow_id).first()
    if workflow is None:
        raise WorkflowNotFoundError(workflow_id)
    return workflow, (epochs[0] if epochs else None)


def _terminal_transition(
    workflow_id: str,
    *,
    status: WorkflowStatus,
    action: str,
    actor: str | None,
    reason: str,
    clock: Clock | None,
    expected_epoch: int | None = None,
) -> Workflow:
    workflow_id = check_workflow_id(workflow_id)
    # An operator (an actor) owes the audit log a reason; a program ending its own
    # workflow does not, but what it gives follows the same rule.
    reason = check_reason(reason or "", required=actor is not None)
    now = _now(clock)
    with transaction.atomic():
        workflow, epoch = _lock_claim_then_workflow(workflow_id)
        # 0 is what an operator saw of a workflow never claimed: no claim row.
        if expected_epoch is not None and expected_epoch != (epoch or 0):
            raise StaleEpochError(workflow_id, expected_epoch, epoch)
        if workflow.status in TERMINAL_STATUSES:
            raise InvalidTransitionError(workflow_id, workflow.status, action)
        rotate_claim(
            _store, workflow_id, clock=lambda: now, kind="rotated", actor=actor, reason=reason
        )
        workflow.status = status
        workflow.updated_at_ms = now
        workflow.save(update_fields=["status", "updated_at_ms"])
        workflow_index(workflow)
    return workflow


def workflow_cancel(
    workflow_id: str,
    *,
    actor: str | None = None,
    reason: str = "",
    clock: Clock | None = None,
    expected_epoch: int | None = None,
) -> Workflow:
    """Cancel; with ``expected_epoch`` (0: no claim row yet) a compare-and-swap on the epoch
    the operator saw: StaleEpochError if the claim has moved since."""
    return _terminal_transition(
        workflow_id,
        status=WorkflowStatus.CANCELLED,
        action="cancel",
        actor=actor,
        reason=reason,
        clock=clock,
        expected_epoch=expected_epoch,
    )


def workflow_timeout(
    workflow_id: str, *, actor: str | None = None, reason: str = "", clock: Clock | None = None
) -> Workflow:
    return _terminal_transition(
        workflow_id,
        status=WorkflowStatus.TIMED_OUT,
        action="time out",
        actor=actor,
        reason=reason,
        clock=clock,
    )


def workflow_suspend(
    workflow_id: str, *, actor: str | None = None, reason: str = "", clock: Clock | None = None
) -> Workflow:
    return _terminal_transition(
        workflow_id,
        status=WorkflowStatus.SUSPENDED,
        action="suspend",
        actor=actor,
        reason=reason,
        clock=clock,
    )


def workflow_purge(
    workflow_id: str, *, actor: str | None = None, reason: str = "", clock: Clock | None = None
) -> None:
    """Delete the workflow and its index row; its claim row stays, one epoch further on."""
    workflow_id = check_workflow_id(workflow_id)
    now = _now(clock)
    with transaction.atomic():
        workflow, _ = _lock_claim_then_workflow(workflow_id)
        rotate_claim(
            _store, workflow_id, clock=lambda: now, kind="rotated", actor=actor, reason=reason
        )
        WorkflowVisibility.objects.filter(workflow_id=workflow_id).delete()
        workflow.delete()


def _required_reason(reason: str) -> str:
    """The one operator-reason rule (claims.protocol.text), for every interface."""
    return check_reason(reason or "")


def claim_force_release(
    workflow_id: str,
    *,
    expected_epoch: int,
    actor: str | None,
    reason: str,
    clock: Clock | None = None,
) -> int:
    """Move the claim to epoch + 1 with no holder; the old holder is deposed on its next write.

    Raises StaleEpochError when the claim is no longer at ``expected_epoch``.
    """
    workflow_id = check_workflow_id(workflow_id)
    reason = _required_reason(reason)
    with transaction.atomic():
        row = _store.read_claim(workflow_id)
        # Ownerless at the epoch the operator saw: nothing to release, and a rotation
        # would only grow the epoch and the audit log. (Any grant since would have moved
        # the epoch, so the compare-and-swap below still catches a claim taken meanwhile.)
        if row is not None and row.epoch == expected_epoch and row.holder is None:
            raise InvalidTransitionError(workflow_id, "ownerless", "force-release the claim of")
        return rotate_claim(
            _store,
            workflow_id,
            clock=clock or fleet_clock(),
            kind="forced_release",
            expected_epoch=expected_epoch,
            actor=actor,
            reason=reason,
        )


def claim_force_takeover(
    workflow_id: str,
    *,
    expected_epoch: int,
    target_engine_id: str,
    actor: str | None,
    reason: str,
    clock: Clock | None = None,
) -> int:
    """Grant epoch + 1 to a live engine, which adopts and drives the workflow.

    Raises StaleEpochError when the claim is no longer at ``expected_epoch``.
    """
    workflow_id = check_workflow_id(workflow_id)
    reason = _required_reason(reason)
    if not Engine.objects.filter(engine_id=target_engine_id, status=EngineStatus.ACTIVE).exists():
        raise ClaimConfigError(f"engine {target_engine_id!r} is not a live engine")
    with transaction.atomic():
        # A finished or purged workflow needs no engine; granting it one grows the epoch
        # and the audit log for nothing (the page refuses it too).
        status = Workflow.objects.filter(workflow_id=workflow_id).values_list("status", flat=True)
        current = status.first()
        if current is None or current in TERMINAL_STATUSES:
            raise InvalidTransitionError(
                workflow_id, current or "purged", "force a takeover of the claim of"
            )
        return rotate_claim(
            _store,
            workflow_id,
            clock=clock or fleet_clock(),
            kind="forced_takeover",
            expected_epoch=expected_epoch,
            new_holder_engine_id=target_engine_id,
            ttl_ms=claim_timing().ttl_ms,
            actor=actor,
            reason=reason,
        )
