"""Engine names recorded at registration, and beat's pruning of old stopped and dead engines:
Engine rows only, so claims, their events and the fleet counters stay as they were."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, cast

import pytest

from claims import tasks
from claims.conf import DAY_MS
from claims.fleet_clock import fleet_clock
from claims.models import ClaimCounter, ClaimEvent, Engine, EngineStatus, WorkflowClaim
from claims.selectors import fleet_metrics
from claims.services.engines import engine_register, engines_prune_history
from tests.factories import make_claim
from weftboard.celery import schedule_passes

pytestmark = pytest.mark.django_db


def engine(engine_id: str, status: str, heard_days_ago: float) -> Engine:
    now = fleet_clock()()
    return Engine.objects.create(
        engine_id=engine_id,
        hostname="h",
        pid=1,
        started_at_ms=0,
        heartbeat_at_ms=now - int(heard_days_ago * DAY_MS),
        status=status,
    )


def test_registration_records_the_worker_name() -> None:
    registered = engine_register(engine_id="e-1", queue="q", now_ms=1, name="engine1@host")

    assert Engine.objects.get(engine_id="e-1").name == registered.name == "engine1@host"


def test_pruning_drops_only_stopped_and_dead_engines_past_the_retention() -> None:
    engine("e-old-dead", EngineStatus.DEAD, 8)
    engine("e-old-stopped", EngineStatus.STOPPED, 8)
    engine("e-new-dead", EngineStatus.DEAD, 6)
    engine("e-silent-long", EngineStatus.ACTIVE, 30)  # beat marks it dead first
    engine("e-leaving", EngineStatus.DISPOSING, 30)

    pruned = engines_prune_history(now_ms=fleet_clock()(), keep_ms=7 * DAY_MS)

    assert pruned == 2
    assert set(Engine.objects.values_list("engine_id", flat=True)) == {
        "e-new-dead",
        "e-silent-long",
        "e-leaving",
    }


def test_pruning_keeps_claims_events_and_counters_so_fleet_counters_never_go_down() -> None:
    engine("e-gone", EngineStatus.DEAD, 10)
    make_claim("wf-1", engine="e-gone")
    ClaimEvent.objects.create(workflow_id="wf-1", kind="acquired", at_ms=0, engine_id="e-gone")
    ClaimCounter.objects.create(engine_id="e-gone", name="acquired", value=7)
    ClaimCounter.objects.create(engine_id="e-gone", name="takeover", value=2)
    before = fleet_metrics().counters

    assert engines_prune_history(now_ms=fleet_clock()(), keep_ms=7 * DAY_MS) == 1

    after = fleet_metrics().counters
    assert not Engine.objects.exists()
    assert WorkflowClaim.objects.get().holder_engine_id == "e-gone"
    assert ClaimEvent.objects.count() == 1
    assert ClaimCounter.objects.count() == 2
    assert after == before
    assert all(after[name] >= before[name] for name in before)


def test_the_beat_task_reads_the_retention_setting(settings: Any) -> None:
    engine("e-3-days", EngineStatus.STOPPED, 3)
    engine("e-1-day", EngineStatus.STOPPED, 1)

    assert tasks.prune_engine_history.run() == 0  # default: 7 days
    settings.WEFTBOARD_ENGINE_HISTORY_DAYS = 2
    assert tasks.prune_engine_history.run() == 1
    assert list(Engine.objects.values_list("engine_id", flat=True)) == ["e-1-day"]


def test_beat_prunes_engine_history_hourly() -> None:
    sender = SimpleNamespace(conf=SimpleNamespace())
    schedule_passes(cast(Any, sender))
    entry = sender.conf.beat_schedule["prune-engine-history"]
    assert entry["task"] == "claims.prune_engine_history"
    assert entry["schedule"] == 3600
