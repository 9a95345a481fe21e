"""Beat marks silent engines dead, and drops the pending re-drives of dead and stopped
engines, which nobody will drive again; a live engine's re-drives stay. A dead engine
stays dead: neither its heartbeat nor its own steps out write over that."""

from __future__ import annotations

import pytest

from claims.models import Engine, EngineStatus, PendingRedrive
from claims.services.engines import (
    DEAD_AFTER_TTLS,
    engine_heartbeat,
    engine_set_status,
    engines_mark_silent_dead,
)

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


def heartbeat(engine_id: str) -> bool:
    return engine_heartbeat(
        engine_id=engine_id,
        now_ms=NOW + 1,
        held_count=7,
        clock_skew_ms=3,
        clock_error_ms=2,
        pass_summary={"renew": {"renewed": 7}},
    )


def row(engine_id: str) -> tuple[str, int, int]:
    found = Engine.objects.get(engine_id=engine_id)
    return found.status, found.heartbeat_at_ms, found.held_count


def test_a_dead_engines_heartbeat_leaves_it_dead_and_says_so():
    """A paused engine marked dead, then resumed: its heartbeat applies nothing."""
    engine("paused", EngineStatus.ACTIVE, silent_ms=DEAD_AFTER_TTLS * TTL + 1)
    assert engines_mark_silent_dead(now_ms=NOW, ttl_ms=TTL) == 1

    assert heartbeat("paused") is False
    assert row("paused") == (EngineStatus.DEAD, NOW - DEAD_AFTER_TTLS * TTL - 1, 0)


@pytest.mark.parametrize(
    ("status", "applied"),
    [
        (EngineStatus.ACTIVE, True),
        (EngineStatus.DISPOSING, True),  # still alive while it leaves
        (EngineStatus.STOPPED, False),
        (EngineStatus.DEAD, False),
    ],
)
def test_a_heartbeat_records_a_live_engine_and_never_changes_a_status(status, applied):
    engine("e", status, silent_ms=5_000)

    assert heartbeat("e") is applied

    assert row("e") == ((status, NOW + 1, 7) if applied else (status, NOW - 5_000, 0))


def test_a_heartbeat_of_an_engine_whose_row_is_gone_applies_nothing():
    assert heartbeat("pruned") is False
    assert not Engine.objects.exists()


def test_a_dead_engines_steps_out_leave_it_dead():
    """Disposal writes disposing, then stopped: neither over beat's dead."""
    engine("paused", EngineStatus.DEAD, silent_ms=DEAD_AFTER_TTLS * TTL + 1)

    engine_set_status(engine_id="paused", status=EngineStatus.DISPOSING, now_ms=NOW)
    engine_set_status(engine_id="paused", status=EngineStatus.STOPPED, now_ms=NOW)

    assert row("paused") == (EngineStatus.DEAD, NOW - DEAD_AFTER_TTLS * TTL - 1, 0)
