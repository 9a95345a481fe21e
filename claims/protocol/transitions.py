"""Epoch rotations made from outside the holder: terminal transitions and operator actions.

The caller runs these inside the transaction that writes the workflow's new
status, so a failed condition (StaleEpochError) rolls the whole change back.
"""

from __future__ import annotations

from .errors import StaleEpochError
from .offset_clock import Clock
from .records import ClaimEventRecord, EventKind, Holder
from .store import ClaimStore


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
    its cached epoch no longer matches, so its next renew or fenced write fails.
    """
    now = clock()
    row = store.read_claim(workflow_id)
    current = None if row is None else row.epoch
    if expected_epoch is not None and expected_epoch != current:
        raise StaleEpochError(workflow_id, expected_epoch, current)
    new_epoch = 1 if current is None else current + 1
    holder = None
    if new_holder_engine_id is not None:
        session = new_holder_session_epoch
        expires = None if session is not None else now + ttl_ms
        holder = Holder(new_holder_engine_id, new_epoch, expires, now, session)
    event = ClaimEventRecord(
        workflow_id,
        kind,
        current,
        new_epoch,
        new_holder_engine_id,
        now,
        actor=actor,
        reason=reason,
    )
    if current is None:
        applied = store.cas_insert(workflow_id, holder=holder, event=event)
    else:
        applied = store.cas_rotate(workflow_id, expected_epoch=current, holder=holder, event=event)
    if not applied:
        moved = store.read_claim(workflow_id)
        raise StaleEpochError(workflow_id, current, None if moved is None else moved.epoch)
    return new_epoch
