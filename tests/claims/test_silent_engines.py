"""Beat marks silent engines dead, and drops the pending re-drives of dead and stopped
engines, which nobody will drive again; a live engine's re-drives stay."""

from __future__ import annotations

import pytest

from claims.models import Engine, EngineStatus, PendingRedrive
from claims.services.engines import DEAD_AFTER_TTLS, engines_mark_silent_dead

pytestmark = pytest.mark.django_db

NOW = 10_000_000
TTL = 30_000


def engine(engine_id: str, status: str, silent_ms: int) -> None:
    Engine.objects.create(
        engine_id=engine_id,
        hostname="host",
        pid=1,
        queue=f"engine.{engine_id}",
        started_at_ms=NOW - 600_000,
        heartbeat_at_ms=NOW - silent_ms,
        status=status,
    )
    PendingRedrive.objects.create(
        engine_id=engine_id,
        workflow_id=f"wf-of-{engine_id}",
        epoch=4,
        attempts=1,
        first_failed_at_ms=NOW - silent_ms,
        last_failed_at_ms=NOW - silent_ms,
    )


def test_silent_engines_are_marked_dead_and_gone_engines_lose_their_redrives():
    engine("live", EngineStatus.ACTIVE, silent_ms=1_000)
    engine("silent", EngineStatus.ACTIVE, silent_ms=DEAD_AFTER_TTLS * TTL + 1)
    engine("stopped", EngineStatus.STOPPED, silent_ms=5_000)
    engine("late", EngineStatus.ACTIVE, silent_ms=2 * TTL)  # late, not yet dead

    assert engines_mark_silent_dead(now_ms=NOW, ttl_ms=TTL) == 1

    assert Engine.objects.get(engine_id="silent").status == EngineStatus.DEAD
    assert sorted(PendingRedrive.objects.values_list("engine_id", flat=True)) == ["late", "live"]
