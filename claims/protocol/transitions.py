"""Epoch moves as statements: a planned grant carried out, and the rotations made from
outside the holder (terminal transitions and operator actions).

The caller runs a rotation inside the transaction that writes the workflow's new
status, so a failed condition (StaleEpochError) rolls the whole change back.
"""

from __future__ import annotations

from .decisions import new_holder
from .errors import StaleEpochError
from .offset_clock import Clock
from .records import ClaimEventRecord, EventKind, GrantPlan, holder_engine
from .store import ClaimStore

# What a caller outside the engines saw of a workflow with no claim row yet: epochs start
# at 1, so 0 names "no row" in every expected epoch (the pages, the API, the services).
NO_CLAIM_EPOCH = 0


def epoch_as_seen(current: int | None) -> int:
    """A claim's epoch as read (None: no row) as callers outside the engines name it."""
    return NO_CLAIM_EPOCH if current is None else current


def is_expected_epoch(expected_epoch: int | None, current: int | None) -> bool:
    """The one compare of an epoch a caller saw against the claim as read now (``current``,
    None when there is no row): 0 means the caller saw no claim row, and ``expected_epoch``
    None asks for no compare (always True)."""
    return expected_epoch is None or expected_epoch == epoch_as_seen(current)


def check_expected_epoch(workflow_id: str, expected_epoch: int | None, current: int | None) -> None:
    """``is_expected_epoch``, raising StaleEpochError (the 409 with the current epoch)
    when the claim has moved past what the caller saw."""
    if not is_expected_epoch(expected_epoch, current):
        raise StaleEpochError(workflow_id, expected_epoch, current)


def carry_out_grant(store: ClaimStore, plan: GrantPlan, *, insert: bool) -> bool:
    """One grant ``decisions`` planned: an insert for an id with no row, else a CAS on the
    epoch and the holder as read. True if it applied."""
    if insert:
        return store.cas_insert(plan.workflow_id, holder=plan.holder, event=plan.event)
    return store.cas_grant(
        plan.workflow_id,
        expected_epoch=plan.expected_epoch,
        expected_holder=plan.expected_holder,
        holder=plan.holder,
        event=plan.event,
    )


def rotate_claim(
    store: ClaimStore,
    workflow_id: str,
    *,
    clock: Clock,
    kind: EventKind = "rotated",
    expected_epoch: int | None = None,
    new_holder_engine_id: str | None = None,
    ttl_ms: int = 0,
    new_holder_session_epoch: int | None = None,
    actor: str | None = None,
    reason: str = "",
) -> int:
    """Move the claim to the next epoch (1 if it has no row) and return it.

    With ``new_holder_engine_id`` the new epoch is granted to that engine for
    ``ttl_ms``, or, with ``new_holder_session_epoch``, for as long as that session of
    the engine lives; otherwise the holder is cleared. Any current holder is deposed:
    its cached epoch no longer matches, so its next renew or fenced write fails. With
    ``expected_epoch`` (0: the caller saw no claim row) StaleEpochError unless the claim
    is still there.
    """
    now = clock()
    row = store.read_claim(workflow_id)
    current = None if row is None else row.epoch
    check_expected_epoch(workflow_id, expected_epoch, current)
    new_epoch = 1 if current is None else current + 1
    holder = None
    if new_holder_engine_id is not None:
        holder = new_holder(
            new_holder_engine_id,
            new_epoch,
            now,
            ttl_ms=ttl_ms,
            session_epoch=new_holder_session_epoch,
        )
    event = ClaimEventRecord(
        workflow_id,
        kind,
        current,
        new_epoch,
        new_holder_engine_id,
        now,
        actor=actor,
        reason=reason,
        holder_before=None if row is None else holder_engine(row.holder),
    )
    if current is None:
        applied = store.cas_insert(workflow_id, holder=holder, event=event)
    else:
        applied = store.cas_rotate(workflow_id, expected_epoch=current, holder=holder, event=event)
    if not applied:
        moved = store.read_claim(workflow_id)
        raise StaleEpochError(workflow_id, current, None if moved is None else moved.epoch)
    return new_epoch
