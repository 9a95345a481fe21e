"""The Celery app: one worker process is one engine (docs/design.md §1)."""

from __future__ import annotations

import os
from typing import Any

from celery import Celery

from claims.engine.outages import BrokerReconnectLog
from weftboard.broker import register_transports

# `celery -A weftboard worker` starts without manage.py, so it needs the default too.
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "weftboard.settings")

# How often beat looks for a due or orphaned visibility backfill.
BACKFILL_POLL_S = 15.0
# How often beat prunes stopped and dead engines past WEFTBOARD_ENGINE_HISTORY_DAYS.
ENGINE_HISTORY_PRUNE_S = 3600.0

register_transports()  # spool://, the embedded broker
app = Celery("weftboard")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
# One `event=broker-reconnected` line each time a worker's broker connection comes back.
app.steps["consumer"].add(BrokerReconnectLog)


@app.on_after_finalize.connect
def schedule_passes(sender: Celery, **kwargs: Any) -> None:
    """Beat ticks every engine once per renew interval (read when beat starts, not at import)."""
    from claims.conf import claim_timing

    timing = claim_timing()
    renew_s, ttl_s = timing.renew_interval_ms / 1000, timing.ttl_ms / 1000
    sender.conf.beat_schedule = {
        "fan-out-engine-ticks": _every(renew_s, "claims.fan_out_ticks"),
        "fleet-snapshot": _every(renew_s, "claims.fleet_snapshot"),
        "mark-silent-engines-dead": _every(ttl_s, "claims.mark_silent_engines_dead"),
        "prune-engine-history": _every(ENGINE_HISTORY_PRUNE_S, "claims.prune_engine_history"),
        # Starts scheduled backfills when due and resumes one whose runner died; a live
        # runner holds the backfill lease, so this returns at once while one is working.
        "backfill-run-due": _every(BACKFILL_POLL_S, "claims.backfill_run_due"),
        # The same for bulk jobs: a job whose runner died resumes from its cursor.
        "bulk-run-due": _every(BACKFILL_POLL_S, "claims.bulk_run_due"),
    }
    from django.conf import settings

    per_minute = settings.WEFTBOARD_DEMO_RATE
    if per_minute > 0:
        sender.conf.beat_schedule["demo-start-workflows"] = _every(
            10.0, "claims.demo_start_workflows", args=(max(1, round(per_minute / 6)),)
        )


def _every(seconds: float, task: str, **entry: Any) -> dict[str, Any]:
    """A beat entry run every ``seconds``; a run still queued when the next is due expires,
    so a stalled worker does not come back to a backlog of the same task."""
    return {"task": task, "schedule": seconds, "options": {"expires": seconds}, **entry}
