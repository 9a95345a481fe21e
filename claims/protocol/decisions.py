"""The pure judgements of a grant: given a claim row, the time and the timing, what to do.

The single-workflow paths of the registry and its set-based batches decide with these
same functions, so one id is judged alike whichever path reaches it (docs/design.md §3).
Nothing here reads, writes or caches: a decision is either the refusal to return or
the grant to attempt, and the caller carries it out.
"""

from __future__ import annotations

from typing import Literal, Protocol

from .records import (
    ClaimEventRecord,
    ClaimResult,
    ClaimRow,
    EventKind,
    GrantPlan,
    Holder,
    holder_engine,
)
from .states import takeover_eligible
from .timing import ClaimTiming

# What a reclaim attempt does after the registry answered a takeover:
# drive the claim it was granted, stop (backoff or not eligible), take back a claim the
# row says is its own, retry a lost race, or acquire a workflow nobody holds.
TakeoverNext = Literal["drive", "backoff-skipped", "not-eligible", "take-back", "retry", "acquire"]


class Decide(Protocol):
    """The shape of ``decide_acquire`` and ``decide_takeover``."""

    def __call__(
        self,
        workflow_id: str,
        row: ClaimRow | None,
        *,
        engine_id: str,
        now_ms: int,
        timing: ClaimTiming,
        session_epoch: int | None = None,
    ) -> ClaimResult | GrantPlan: ...


def new_holder(
    engine_id: str, epoch: int, now_ms: int, *, ttl_ms: int, session_epoch: int | None = None
) -> Holder:
    """The holder a grant at ``epoch`` writes, whoever grants it (an engine, an operator's
    forced takeover, a start naming an engine): claimed now, alive for ``ttl_ms``; or,
    naming a session, alive while that session is (no expiry of its own). The one place
    this rule is written."""
    if session_epoch is not None:
        return Holder(engine_id, epoch, None, now_ms, session_epoch)
    return Holder(engine_id, epoch, now_ms + ttl_ms, now_ms)


def _plan(
    workflow_id: str,
    kind: EventKind,
    row: ClaimRow | None,
    engine_id: str,
    now_ms: int,
    timing: ClaimTiming,
    session_epoch: int | None,
) -> GrantPlan:
    before = None if row is None else row.epoch
    epoch = 1 if row is None else row.epoch + 1
    expected_holder = None if row is None else row.holder
    event = ClaimEventRecord(
        workflow_id,
        kind,
        before,
        epoch,
        engine_id,
        now_ms,
        holder_before=holder_engine(expected_holder),
    )
    return GrantPlan(
        workflow_id,
        before or 0,
        expected_holder,
        new_holder(engine_id, epoch, now_ms, ttl_ms=timing.ttl_ms, session_epoch=session_epoch),
        event,
    )


def decide_acquire(
    workflow_id: str,
    row: ClaimRow | None,
    *,
    engine_id: str,
    now_ms: int,
    timing: ClaimTiming,
    session_epoch: int | None = None,
) -> ClaimResult | GrantPlan:
    """Acquire a workflow nobody holds. Never judges expiry: any holder present wins.

    The grant planned for an id with no row (``row is None``) is an insert at epoch 1;
    otherwise it moves the epoch by one, expecting the row still to have no holder.
    """
    if row is not None and row.holder is not None:
        return ClaimResult("lost-race", workflow_id, held_by=row.valid_holder_engine())
    return _plan(workflow_id, "acquired", row, engine_id, now_ms, timing, session_epoch)


def decide_takeover(
    workflow_id: str,
    row: ClaimRow | None,
    *,
    engine_id: str,
    now_ms: int,
    timing: ClaimTiming,
    session_epoch: int | None = None,
) -> ClaimResult | GrantPlan:
    """Take over an expired or invalid holder, expecting the row to hold exactly what was
    read; a row with no holder is ``no-claim``, a valid holder inside its grace (its own,
    or its session's) is ``not-expired`` (the one expiry rule, ``is_claim_expired``)."""
    if row is None or row.holder is None:
        return ClaimResult("no-claim", workflow_id, epoch=None if row is None else row.epoch)
    if not takeover_eligible(row, now_ms, timing):
        return ClaimResult(
            "not-expired",
            workflow_id,
            epoch=row.epoch,
            held_by=row.holder.engine_id,
            expires_at_ms=row.expires_at_ms(),
        )
    return _plan(workflow_id, "takeover", row, engine_id, now_ms, timing, session_epoch)


def after_takeover(result: ClaimResult, *, engine_id: str, held_here: bool) -> TakeoverNext:
    """What a reclaim attempt does with the registry's answer to a takeover.

    ``held_here`` says whether this engine's cache holds the claim: a live row naming
    this engine that it does not hold (a grant whose answer was lost, or a forced
    takeover whose adopt order never came) is taken back at its epoch, not left to expire.
    """
    status = result.status
    if status == "acquired":
        return "drive"
    if status == "backoff-skipped":
        return "backoff-skipped"
    if status == "not-expired":
        ghost = result.held_by == engine_id and not held_here and result.epoch is not None
        return "take-back" if ghost else "not-eligible"
    if status == "lost-race":
        return "retry"
    return "acquire"  # no-claim: nobody holds it
