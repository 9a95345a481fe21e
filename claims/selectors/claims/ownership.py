"""One workflow's claim read by its id: as the claims list shows a row (claim_view), and
who owns the workflow and why, the diagnostic read behind the API and the 409 answers."""

from __future__ import annotations

from dataclasses import dataclass

from claims.models import ClaimEvent, PendingRedrive, Workflow, WorkflowClaim
from claims.protocol.states import ClaimState, derive_claim_state
from claims.protocol.timing import ClaimTiming, is_claim_expired
from claims.store.rows import HOLDER_COLUMNS

from .listing import ClaimView, claim_view_of_row
from .session_holders import rows_with_sessions

RECENT_EVENTS = 20


@dataclass(frozen=True)
class ExpiryJudgement:
    expires_at_ms: int
    takeover_allowed_at_ms: int  # expires + grace (2 x renew interval)
    expired: bool
    ms_until_takeover: int  # 0 once takeover is allowed


@dataclass(frozen=True)
class ClaimSnapshot:
    """A claim as an operator must see it before deciding on a forced action."""

    workflow_id: str
    epoch: int | None  # None: the workflow was never claimed
    holder_engine_id: str | None
    holder_epoch: int | None
    claimed_at_ms: int | None
    state: ClaimState
    expiry: ExpiryJudgement | None
    as_of_ms: int


@dataclass(frozen=True)
class Ownership:
    workflow: Workflow | None  # None without a workflow row: the claim row outlives it
    claim: ClaimSnapshot
    pending_redrives: list[PendingRedrive]
    recent_events: list[ClaimEvent]


def claim_view(workflow_id: str, *, now_ms: int, timing: ClaimTiming) -> ClaimView | None:
    """The claim of one workflow with its derived state, or None if it was never claimed."""
    values = (
        WorkflowClaim.objects.filter(workflow_id=workflow_id)
        .values_list("epoch", *HOLDER_COLUMNS)
        .first()
    )
    if values is None:
        return None
    [row] = rows_with_sessions([(workflow_id, *values)])
    return claim_view_of_row(row, now_ms, timing)


def expiry_judgement(expires_at_ms: int, now_ms: int, timing: ClaimTiming) -> ExpiryJudgement:
    allowed_at = expires_at_ms + timing.grace_ms
    return ExpiryJudgement(
        expires_at_ms=expires_at_ms,
        takeover_allowed_at_ms=allowed_at,
        expired=is_claim_expired(expires_at_ms, now_ms, timing),
        ms_until_takeover=max(0, allowed_at - now_ms),
    )


def claim_snapshot(workflow_id: str, *, now_ms: int, timing: ClaimTiming) -> ClaimSnapshot:
    """The claim's current state in one query; a never-claimed id reads as ownerless."""
    values = (
        WorkflowClaim.objects.filter(workflow_id=workflow_id)
        .values_list("epoch", *HOLDER_COLUMNS)
        .first()
    )
    if values is None:
        return ClaimSnapshot(workflow_id, None, None, None, None, "ownerless", None, now_ms)
    [row] = rows_with_sessions([(workflow_id, *values)])
    holder = row.holder
    state = derive_claim_state(row, now_ms, timing)
    expiry, expires_at_ms = None, row.expires_at_ms()  # a session holder's is its session's
    if holder is not None and state != "invalid" and expires_at_ms is not None:
        expiry = expiry_judgement(expires_at_ms, now_ms, timing)
    return ClaimSnapshot(
        workflow_id=workflow_id,
        epoch=row.epoch,
        holder_engine_id=None if holder is None else holder.engine_id,
        holder_epoch=None if holder is None else holder.epoch,
        claimed_at_ms=None if holder is None else holder.claimed_at_ms,
        state=state,
        expiry=expiry,
        as_of_ms=now_ms,
    )


def workflow_ownership(workflow_id: str, *, now_ms: int, timing: ClaimTiming) -> Ownership | None:
    """Workflow, claim, re-drives and the last events in four queries; None if the id is unknown."""
    workflow = Workflow.objects.filter(workflow_id=workflow_id).first()
    claim = claim_snapshot(workflow_id, now_ms=now_ms, timing=timing)
    if workflow is None and claim.epoch is None:
        return None
    redrives = list(PendingRedrive.objects.filter(workflow_id=workflow_id).order_by("engine_id"))
    events = list(
        ClaimEvent.objects.filter(workflow_id=workflow_id).order_by("-id")[:RECENT_EVENTS]
    )
    return Ownership(workflow, claim, redrives, events)
