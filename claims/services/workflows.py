"""Writes to workflows: start one, and the transitions made from outside its engine
(cancel, suspend, resume). Every status change and its epoch rotation commit together
(docs/design.md §3).

Each call obeys claims.services.rules: nothing while read-only, an operator's reason,
a workflow type some engine can run.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from django.db import transaction

from claims.conf import claim_timing
from claims.fleet_clock import fleet_clock
from claims.models import (
    TERMINAL_STATUSES,
    Workflow,
    WorkflowStatus,
)
from claims.protocol import Clock, rotate_claim
from claims.protocol.decisions import decide_acquire
from claims.protocol.errors import (
    InvalidTransitionError,
    WorkflowClaimUnavailableError,
)
from claims.protocol.ids import check_new_workflow_id, check_workflow_id
from claims.protocol.records import GrantPlan
from claims.protocol.sessions import open_session_epoch
from claims.protocol.text import check_json_text
from claims.protocol.transitions import carry_out_grant, check_expected_epoch
from claims.store import OrmClaimStore
from claims.store.workflows import lock_claim_then_workflow, workflow_index

from .rules import (
    check_workflow_input,
    operator_reason,
    refuse_if_read_only,
    registered_workflow_type,
)

_store = OrmClaimStore()


def _now(clock: Clock | None) -> int:
    return (clock or fleet_clock())()


def workflow_start(
    *,
    workflow_type: str,
    input: Any = None,
    workflow_id: str | None = None,
    engine_id: str | None = None,
    actor: str | None = None,
    clock: Clock | None = None,
) -> Workflow:
    """Create a running workflow; with ``engine_id`` it is claimed for that engine at once.

    Without an engine it starts ownerless and the next reclaim pass claims it. Raises
    UnknownWorkflowTypeError for a type no engine can run, and ReadOnlyError while
    read-only when an ``actor`` (an operator or API client) asks: the switch stops people,
    not the programs of the fleet (the demo seed and trickle start workflows of their own).
    """
    if actor is not None:
        refuse_if_read_only()
    workflow_id = check_new_workflow_id(workflow_id or str(uuid.uuid4()))
    workflow_type = registered_workflow_type(workflow_type)
    check_json_text(input, what="a workflow's input")
    check_workflow_input(workflow_type, input)
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
    """Grant the claim of a new workflow; an id reused after its workflow row was deleted
    keeps its epoch line."""
    timing = claim_timing()
    row = _store.read_claim(workflow_id)
    session = open_session_epoch(_store, engine_id, now_ms=now, timing=timing)
    # The protocol's own judgement of an acquire: a row with a holder is refused, and the
    # holder planned follows the one rule (its own expiry, or the session it names).
    decided = decide_acquire(
        workflow_id, row, engine_id=engine_id, now_ms=now, timing=timing, session_epoch=session
    )
    granted = isinstance(decided, GrantPlan) and carry_out_grant(
        _store, decided, insert=row is None
    )
    if not granted:
        current = _store.read_claim(workflow_id)
        raise WorkflowClaimUnavailableError(
            workflow_id, None if current is None else current.valid_holder_engine()
        )


# Where each transition may start from: cancel ends anything not yet ended, a suspended
# workflow included; suspend and resume move between running and suspended only.
@dataclass(frozen=True)
class _Move:
    """A transition from outside the workflow's engine: where to, and from where."""

    status: WorkflowStatus
    action: str  # the audit event's name
    allowed_from: frozenset[WorkflowStatus]


_CANCEL = _Move(WorkflowStatus.CANCELLED, "cancel", frozenset(WorkflowStatus) - TERMINAL_STATUSES)
_SUSPEND = _Move(WorkflowStatus.SUSPENDED, "suspend", frozenset({WorkflowStatus.RUNNING}))
_RESUME = _Move(WorkflowStatus.RUNNING, "resume", frozenset({WorkflowStatus.SUSPENDED}))


def _transition(
    workflow_id: str,
    move: _Move,
    actor: str | None,
    reason: str,
    expected_epoch: int | None,
    clock: Clock | None,
) -> Workflow:
    """Move the workflow to ``move.status`` and rotate its claim to the next epoch with no
    holder, in one transaction: whoever held it is deposed on its next write."""
    refuse_if_read_only()
    workflow_id = check_workflow_id(workflow_id)
    # An operator (an actor) owes the audit log a reason; a program ending its own
    # workflow does not, but what it gives follows the same rule.
    reason = operator_reason(reason, required=actor is not None)
    now = _now(clock)
    with transaction.atomic():
        workflow, epoch = lock_claim_then_workflow(workflow_id)
        check_expected_epoch(workflow_id, expected_epoch, epoch)
        if workflow.status not in move.allowed_from:
            raise InvalidTransitionError(workflow_id, workflow.status, move.action)
        rotate_claim(
            _store, workflow_id, clock=lambda: now, kind="rotated", actor=actor, reason=reason
        )
        workflow.status = move.status
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
    """Cancel a workflow that has not ended (a suspended one too); with ``expected_epoch``
    (0: no claim row yet) a compare-and-swap on the epoch the operator saw:
    StaleEpochError if the claim has moved since."""
    return _transition(workflow_id, _CANCEL, actor, reason, expected_epoch, clock)


def workflow_suspend(
    workflow_id: str,
    *,
    actor: str,
    reason: str,
    expected_epoch: int,
    clock: Clock | None = None,
) -> Workflow:
    """Suspend a running workflow: its claim moves to the next epoch with no holder, so
    its engine is deposed on its next write, and no reclaim pass takes it back (they take
    running workflows only). A compare-and-swap on the epoch the operator saw (0: no claim
    row yet): StaleEpochError if it moved; InvalidTransitionError unless running."""
    return _transition(workflow_id, _SUSPEND, actor, reason, expected_epoch, clock)


def workflow_resume(
    workflow_id: str,
    *,
    actor: str,
    reason: str,
    expected_epoch: int,
    clock: Clock | None = None,
) -> Workflow:
    """Resume a suspended workflow: running again and ownerless at the next epoch, so the
    next reclaim pass grants it to an engine, which replays it from its checkpoints.
    The same compare-and-swap as suspend; InvalidTransitionError unless suspended."""
    return _transition(workflow_id, _RESUME, actor, reason, expected_epoch, clock)
