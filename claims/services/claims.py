"""The operator's forced actions on a claim: release (one, or every claim of one engine),
and takeover with its adopt message.

Both are compare-and-swaps on the epoch the operator saw (docs/design.md §7, "Actions"),
and both obey claims.services.rules: nothing while read-only, and a reason.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from django.db import transaction

from claims.conf import claim_timing
from claims.fleet_clock import fleet_clock
from claims.models import (
    TERMINAL_STATUSES,
    Engine,
    EngineStatus,
    Workflow,
    WorkflowStatus,
)
from claims.protocol import Clock, rotate_claim
from claims.protocol.errors import (
    ClaimConfigError,
    InvalidInputError,
    InvalidTransitionError,
    StaleEpochError,
    WorkflowNotFoundError,
)
from claims.protocol.ids import check_engine_id, check_workflow_id
from claims.protocol.records import ClaimRow
from claims.protocol.sessions import open_session_epoch
from claims.protocol.transitions import check_expected_epoch, is_expected_epoch
from claims.store import OrmClaimStore
from claims.store.workflows import lock_claim_then_workflow

from .rules import operator_reason, refuse_if_read_only

logger = logging.getLogger("weftboard.claims")

_store = OrmClaimStore()


@dataclass(frozen=True)
class ForcedTakeover:
    """What a forced takeover did: the epoch granted, and the queue the adopt message goes
    to once committed (None: the engine has no queue, so it cannot be told; the claim then
    expires unrenewed and the next reclaim pass takes the workflow over)."""

    epoch: int
    adopt_queue: str | None


def claim_force_release(
    workflow_id: str,
    *,
    expected_epoch: int,
    actor: str | None,
    reason: str,
    clock: Clock | None = None,
) -> int:
    """Move the claim to epoch + 1 with no holder; the old holder is deposed on its next write.

    Raises WorkflowNotFoundError when the workflow row is gone (its claim row is kept):
    nothing needs it released, since no engine drives a deleted workflow and an id used
    again continues its epoch line; the bulk release of an engine's claims still clears
    it with the rest. Raises StaleEpochError when the claim is no longer at
    ``expected_epoch``, InvalidTransitionError when nobody holds it.
    """
    refuse_if_read_only()
    workflow_id = check_workflow_id(workflow_id)
    reason = operator_reason(reason)
    with transaction.atomic():
        if not Workflow.objects.filter(workflow_id=workflow_id).exists():
            raise WorkflowNotFoundError(workflow_id)
        row = _store.read_claim(workflow_id)
        # A claim moved past the epoch the operator saw is stale, whoever holds it now.
        check_expected_epoch(workflow_id, expected_epoch, None if row is None else row.epoch)
        # Ownerless at the epoch the operator saw (no row, or no holder): nothing to
        # release, and a rotation would only grow the epoch and the audit log. (Any grant
        # since would have moved the epoch, so the compare-and-swap below still catches a
        # claim taken meanwhile.)
        if row is None or row.holder is None:
            raise InvalidTransitionError(workflow_id, "ownerless", "force-release the claim of")
        return _rotate_released(workflow_id, expected_epoch, actor, reason, clock)


def _rotate_released(
    workflow_id: str, expected_epoch: int, actor: str | None, reason: str, clock: Clock | None
) -> int:
    """The forced release itself, once its input and the row as read were judged."""
    return rotate_claim(
        _store,
        workflow_id,
        clock=clock or fleet_clock(),
        kind="forced_release",
        expected_epoch=expected_epoch,
        actor=actor,
        reason=reason,
    )


# One confirmation releases at most this many claims: a bigger batch is refused (422).
BULK_RELEASE_MAX = 1_000

BulkReleaseStatus = Literal["released", "moved", "not-held"]


@dataclass(frozen=True)
class BulkReleaseOutcome:
    """One claim of a bulk release: released, or left alone because it had moved on since
    the operator saw it (a 409 for that row; ``current_epoch`` is where it is now)."""

    workflow_id: str
    expected_epoch: int
    status: BulkReleaseStatus
    epoch_after: int | None = None
    current_epoch: int | None = None
    detail: str = ""

    @property
    def http_status(self) -> int:
        return 200 if self.status == "released" else 409


def claims_force_release_for_engine(
    engine_id: str,
    claims: Sequence[tuple[str, int]],
    *,
    actor: str | None,
    reason: str,
    clock: Clock | None = None,
) -> list[BulkReleaseOutcome]:
    """Force release each (workflow id, epoch the operator saw) that ``engine_id`` still
    holds at that epoch; each one is a forced release in its own transaction (with its own
    audit event), so a claim that moved on never rolls back the others. The rows are read
    once for the whole batch; each release then compares and swaps on its own row.

    The whole batch is checked first (read-only, reason, ids, size, no duplicates): bad
    input raises InvalidInputError or InvalidWorkflowIdError and releases nothing.
    """
    refuse_if_read_only()
    engine_id = check_engine_id(engine_id)
    reason = operator_reason(reason)
    checked = [(check_workflow_id(workflow_id), epoch) for workflow_id, epoch in claims]
    if not checked:
        raise InvalidInputError("name at least one claim to release")
    if len(checked) > BULK_RELEASE_MAX:
        raise InvalidInputError(f"at most {BULK_RELEASE_MAX} claims in one release")
    if len({workflow_id for workflow_id, _ in checked}) != len(checked):
        raise InvalidInputError("each workflow id may appear only once")
    # One read of every row the batch names; each release still compares and swaps on
    # its own row, so whatever moved since this read is caught there.
    rows = _store.read_claims([workflow_id for workflow_id, _ in checked])
    return [
        _release_if_held_by(
            engine_id, workflow_id, epoch, rows.get(workflow_id), actor, reason, clock
        )
        for workflow_id, epoch in checked
    ]


def _release_if_held_by(
    engine_id: str,
    workflow_id: str,
    expected_epoch: int,
    row: ClaimRow | None,
    actor: str | None,
    reason: str,
    clock: Clock | None,
) -> BulkReleaseOutcome:
    seen = BulkReleaseOutcome(workflow_id, expected_epoch, "not-held")
    if row is None:
        return _outcome(seen, "not-held", None, "there is no claim row")
    # A holder only changes with the epoch, so the compare-and-swap below still catches
    # a claim granted elsewhere after this read.
    held_by_engine = row.holder is not None and row.holder.engine_id == engine_id
    if is_expected_epoch(expected_epoch, row.epoch) and not held_by_engine:
        return _outcome(seen, "not-held", row.epoch, f"not held by engine {engine_id}")
    try:
        # The batch's input was checked as a whole and this row read with it: what is
        # left is the compare-and-swap, which catches whatever moved since.
        epoch = _rotate_released(workflow_id, expected_epoch, actor, reason, clock)
    except StaleEpochError as error:
        return _outcome(seen, "moved", error.current_epoch, str(error))
    return BulkReleaseOutcome(workflow_id, expected_epoch, "released", epoch_after=epoch)


def _outcome(
    seen: BulkReleaseOutcome, status: BulkReleaseStatus, current: int | None, detail: str
) -> BulkReleaseOutcome:
    return BulkReleaseOutcome(
        seen.workflow_id, seen.expected_epoch, status, current_epoch=current, detail=detail
    )


def claim_force_takeover_and_notify(
    workflow_id: str,
    *,
    expected_epoch: int,
    target_engine_id: str,
    actor: str | None,
    reason: str,
    clock: Clock | None = None,
) -> ForcedTakeover:
    """Grant epoch + 1 to a live engine, then send `claims.adopt` to that engine's own queue.

    The message leaves only after the grant commits, so the engine never reads a claim
    that is not there yet. Raises StaleEpochError, ClaimConfigError for an engine that is
    not live, InvalidWorkflowIdError, InvalidTransitionError for a finished or suspended
    workflow, WorkflowNotFoundError when its workflow row is gone.
    """
    with transaction.atomic():
        granted = _grant_takeover(
            workflow_id, expected_epoch, target_engine_id, actor, reason, clock
        )
        queue = granted.adopt_queue
        if queue is not None:
            transaction.on_commit(lambda: _send_adopt(workflow_id, granted.epoch, queue))
        else:
            # An engine without a queue (seeded demo rows) cannot be told; the claim
            # then expires unrenewed and the next reclaim pass takes it over.
            logger.warning(
                "engine %s has no queue to send adopt to; workflow %s waits for reclaim",
                target_engine_id,
                workflow_id,
            )
    return granted


def _live_engine_queue(engine_id: str) -> str | None:
    """The queue of an active engine (None when it has none); ClaimConfigError otherwise,
    and for a draining engine, which would only release the claim again."""
    engines = Engine.objects.filter(engine_id=engine_id, status=EngineStatus.ACTIVE)
    found = list(engines.values_list("queue", "drain_requested_at_ms")[:1])
    if not found:
        raise ClaimConfigError(f"engine {engine_id!r} is not a live engine")
    queue, draining_since = found[0]
    if draining_since is not None:
        raise ClaimConfigError(f"engine {engine_id!r} is draining: undrain it first")
    return queue or None


def _grant_takeover(
    workflow_id: str,
    expected_epoch: int,
    target_engine_id: str,
    actor: str | None,
    reason: str,
    clock: Clock | None,
) -> ForcedTakeover:
    refuse_if_read_only()
    workflow_id = check_workflow_id(workflow_id)
    reason = operator_reason(reason)
    queue = _live_engine_queue(target_engine_id)
    with transaction.atomic():
        # A finished, suspended or deleted workflow needs no engine (none drives it);
        # granting it one grows the epoch and the audit log for nothing (the page
        # refuses it too). A deleted one is not found, as for every other action.
        current = lock_claim_then_workflow(workflow_id)[0].status
        if current in TERMINAL_STATUSES or current == WorkflowStatus.SUSPENDED:
            raise InvalidTransitionError(workflow_id, current, "force a takeover of the claim of")
        now, timing = (clock or fleet_clock())(), claim_timing()
        session = open_session_epoch(_store, target_engine_id, now_ms=now, timing=timing)
        epoch = rotate_claim(
            _store,
            workflow_id,
            clock=lambda: now,
            kind="forced_takeover",
            expected_epoch=expected_epoch,
            new_holder_engine_id=target_engine_id,
            ttl_ms=timing.ttl_ms,
            new_holder_session_epoch=session,
            actor=actor,
            reason=reason,
        )
    return ForcedTakeover(epoch=epoch, adopt_queue=queue)


def _send_adopt(workflow_id: str, epoch: int, queue: str) -> None:
    """Tell the new holder, once; a broker that is down must not turn a committed takeover
    into an error for the operator (nor hold the request up retrying). Untold, the engine
    never renews the claim, so it expires and the next reclaim pass takes the workflow;
    under a session, which keeps the claim alive, the engine's own audit of the rows naming
    it (every third of a TTL) takes it up."""
    from claims.tasks import adopt

    try:
        adopt.apply_async(args=(workflow_id, epoch), queue=queue, retry=False)
    except Exception as error:
        logger.warning(
            "forced takeover of workflow %s at epoch %s committed, but the adopt message to %s"
            " could not be sent (%s); the engine's reclaim pass takes the workflow up",
            workflow_id,
            epoch,
            queue,
            error,
        )
