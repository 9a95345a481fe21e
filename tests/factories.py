"""Rows the page, API and browser tests build, in one place; times are relative to the
fleet clock, as the product judges them."""

from __future__ import annotations

from claims.clock import fleet_clock
from claims.models import WorkflowClaim


def make_claim(
    workflow_id: str,
    *,
    epoch: int = 1,
    engine: str | None = "e-1",
    expires_in_ms: int = 60_000,
    claimed_ago_ms: int = 1_000,
) -> WorkflowClaim:
    """A claim row at ``epoch`` held by ``engine`` (None: ownerless), expiring
    ``expires_in_ms`` from now and claimed ``claimed_ago_ms`` ago."""
    now = fleet_clock()()
    held = engine is not None
    return WorkflowClaim.objects.create(
        workflow_id=workflow_id,
        epoch=epoch,
        holder_engine_id=engine,
        holder_epoch=epoch if held else None,
        holder_expires_at_ms=now + expires_in_ms if held else None,
        holder_claimed_at_ms=now - claimed_ago_ms if held else None,
    )
