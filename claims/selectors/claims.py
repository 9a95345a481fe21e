"""The claim listing shared by the pages and the API: filters, derived state, keyset pages."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Q

from claims.models import WorkflowClaim
from claims.protocol.records import ClaimRow
from claims.protocol.states import ClaimState, derive_claim_state
from claims.protocol.timing import ClaimTiming
from claims.store.claim_sets import HOLDER_INVALID, HOLDER_PRESENT
from claims.store.rows import HOLDER_COLUMNS, claim_row_from_values

MAX_PAGE = 200


@dataclass(frozen=True)
class ClaimView:
    workflow_id: str
    epoch: int
    holder_engine_id: str | None
    holder_epoch: int | None
    expires_at_ms: int | None
    claimed_at_ms: int | None
    state: ClaimState
    expires_in_ms: int | None  # negative once past expiry


@dataclass(frozen=True)
class ClaimPage:
    items: list[ClaimView]
    next_cursor: str | None
    as_of_ms: int


def claim_view(row: ClaimRow, now_ms: int, timing: ClaimTiming) -> ClaimView:
    """What an operator sees of one claim row at ``now_ms``."""
    holder = row.holder
    expires = None if holder is None else holder.expires_at_ms
    return ClaimView(
        workflow_id=row.workflow_id,
        epoch=row.epoch,
        holder_engine_id=None if holder is None else holder.engine_id,
        holder_epoch=None if holder is None else holder.epoch,
        expires_at_ms=expires,
        claimed_at_ms=None if holder is None else holder.claimed_at_ms,
        state=derive_claim_state(row, now_ms, timing),
        expires_in_ms=None if expires is None else expires - now_ms,
    )


def state_condition(state: ClaimState, now_ms: int, timing: ClaimTiming) -> Q:
    """The SQL form of derive_claim_state, for filtering before the page is cut."""
    valid = HOLDER_PRESENT & ~HOLDER_INVALID
    takeover_from = now_ms - timing.grace_ms
    return {
        "ownerless": ~HOLDER_PRESENT,
        "invalid": HOLDER_PRESENT & HOLDER_INVALID,
        "live": valid & Q(holder_expires_at_ms__gte=now_ms),
        "in-grace": valid
        & Q(holder_expires_at_ms__lt=now_ms, holder_expires_at_ms__gte=takeover_from),
        "expired": valid & Q(holder_expires_at_ms__lt=takeover_from),
    }[state]


def claim_list(
    *,
    now_ms: int,
    timing: ClaimTiming,
    state: ClaimState | None = None,
    engine: str | None = None,
    prefix: str | None = None,
    cursor: str | None = None,
    limit: int = 50,
) -> ClaimPage:
    """One page of claims in workflow-id order after ``cursor``; one query whatever the size."""
    limit = max(1, min(limit, MAX_PAGE))
    rows = WorkflowClaim.objects.order_by("workflow_id")
    if state is not None:
        rows = rows.filter(state_condition(state, now_ms, timing))
    if engine:
        rows = rows.filter(holder_engine_id=engine)
    if prefix:
        rows = rows.filter(workflow_id__startswith=prefix)
    if cursor:
        rows = rows.filter(workflow_id__gt=cursor)
    values = list(rows.values_list("workflow_id", "epoch", *HOLDER_COLUMNS)[: limit + 1])
    items = [
        claim_view(claim_row_from_values(workflow_id, *columns), now_ms, timing)
        for workflow_id, *columns in values[:limit]
    ]
    next_cursor = items[-1].workflow_id if len(values) > limit else None
    return ClaimPage(items, next_cursor, now_ms)
