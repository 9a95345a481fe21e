"""Reads for the operator's actions on a whole engine: the claims it holds (what a bulk
release confirms), whether it is draining, and its engine-level audit events."""

from __future__ import annotations

from dataclasses import dataclass

from claims.models import Engine, EngineEvent, WorkflowClaim

from .names import engine_condition

RECENT_ENGINE_EVENTS = 20


@dataclass(frozen=True)
class HeldClaim:
    """One claim as the operator confirms it: the epoch the release will compare-and-swap on."""

    workflow_id: str
    epoch: int
    expires_at_ms: int | None


@dataclass(frozen=True)
class HeldClaims:
    items: list[HeldClaim]
    # More than the limit asked for (the bulk release's batch): one confirmation releases
    # the first batch only.
    truncated: bool


def engine_held_claims(engine_id: str, *, limit: int) -> HeldClaims:
    """The claims naming ``engine_id`` as holder, in workflow-id order; one query."""
    rows = (
        WorkflowClaim.objects.filter(holder_engine_id=engine_id)
        .order_by("workflow_id")
        .values_list("workflow_id", "epoch", "holder_expires_at_ms")[: limit + 1]
    )
    items = [HeldClaim(*row) for row in rows]
    return HeldClaims(items=items[:limit], truncated=len(items) > limit)


def engine_get(engine_id: str) -> Engine | None:
    """The engine an action names, or None; one query."""
    return Engine.objects.filter(engine_id=engine_id).first()


def engine_drain_requested(engine_id: str) -> bool:
    """Whether an operator asked this engine to drain; what the engine reads at each tick."""
    found = Engine.objects.filter(engine_id=engine_id).values_list(
        "drain_requested_at_ms", flat=True
    )
    return any(value is not None for value in found[:1])


def engine_status(engine_id: str) -> str | None:
    """The engine's status as its row says, or None when the row is gone (a dead or stopped
    engine's row is pruned after WEFTBOARD_ENGINE_HISTORY_DAYS); what the engine reads
    before each reclaim pass (claims/engine/death.py); one query."""
    return Engine.objects.filter(engine_id=engine_id).values_list("status", flat=True).first()


def engine_events(
    engine_id: str | None = None, *, limit: int = RECENT_ENGINE_EVENTS
) -> list[EngineEvent]:
    """Operator actions on engines (drain, undrain), newest first; one query. ``engine_id``
    may also be a worker name, as the audit page's engine filter takes (every engine id
    that ran under that name)."""
    rows = EngineEvent.objects.order_by("-id")
    if engine_id:
        rows = rows.filter(engine_condition("engine_id", engine_id))
    return list(rows[:limit])
