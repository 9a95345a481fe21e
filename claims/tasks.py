"""Celery tasks: thin entry points that decode ids and call the engine or a service."""

from __future__ import annotations

import logging

from celery import shared_task

logger = logging.getLogger("weftboard.claims")


@shared_task(name="claims.engine_tick", ignore_result=True)
def engine_tick(share: object = None) -> None:
    """``share``: beat's reads for this engine (claims/protocol/fleet_share.py); a tick
    without one, or with one not shaped as beat makes it, leaves every read to the engine."""
    from claims.engine.worker import local_engine
    from claims.protocol.fleet_share import FleetShare

    engine = local_engine()
    if engine is None:
        logger.warning("an engine tick reached a worker that runs no engine")
        return
    engine.trigger(FleetShare.from_json(share) if share is not None else None)


@shared_task(name="claims.fan_out_ticks", ignore_result=True)
def fan_out_ticks() -> int:
    """Send a tick to the direct queue of every engine not known dead, each with its share
    of one read of the fleet (docs/design.md §4, "Beat reads for the fleet")."""
    from claims.conf import claim_timing
    from claims.fleet_clock import database_now_ms
    from claims.selectors.engines.tick_queues import engine_tick_targets
    from claims.services.fleet_share import fleet_shares

    timing = claim_timing()
    interval_s = timing.renew_interval_ms / 1000
    targets = engine_tick_targets()
    try:
        # The database's own clock, not this process's: the fan-out runs on whichever worker
        # takes it, and a share read at a time behind the real one would leave out what
        # came due since (each engine's wake takes the due list as it stands).
        now_ms = database_now_ms()
        shares = fleet_shares(
            now_ms=now_ms, timing=timing, engine_ids=[engine_id for engine_id, _ in targets]
        )
    except Exception:
        # The ticks matter more than the shares: without one, each engine reads for itself.
        logger.exception("beat could not read for the fleet; the ticks go without shares")
        shares = {}
    sent = 0
    for engine_id, queue in targets:
        share = shares.get(engine_id)
        # Expiring after one interval keeps ticks from piling up behind a stalled engine.
        engine_tick.apply_async(
            kwargs={} if share is None else {"share": share.as_json()},
            queue=queue,
            expires=interval_s,
        )
        sent += 1
    return sent


@shared_task(name="claims.mark_silent_engines_dead", ignore_result=True)
def mark_silent_engines_dead() -> int:
    from claims.fleet_clock import fleet_now
    from claims.services.engines import engines_mark_silent_dead

    now_ms, timing = fleet_now()
    return engines_mark_silent_dead(now_ms=now_ms, ttl_ms=timing.ttl_ms)


@shared_task(name="claims.prune_engine_history", ignore_result=True)
def prune_engine_history() -> int:
    """Beat: drop stopped and dead engines older than WEFTBOARD_ENGINE_HISTORY_DAYS."""
    from claims.conf import engine_history_ms
    from claims.fleet_clock import fleet_now
    from claims.services.engines import engines_prune_history

    now_ms, _ = fleet_now()
    return engines_prune_history(now_ms=now_ms, keep_ms=engine_history_ms())


@shared_task(name="claims.adopt", ignore_result=True)
def adopt(workflow_id: str, epoch: int) -> str:
    """Sent to one engine's queue after an operator forced a takeover to it."""
    from claims.engine.worker import local_engine

    engine = local_engine()
    if engine is None:
        return "no-engine"
    return engine.adopt(str(workflow_id), int(epoch))


@shared_task(name="claims.drain", ignore_result=True)
def drain(engine_id: str) -> str:
    """Sent to one engine's queue after an operator asked it to drain."""
    return _set_engine_draining(str(engine_id), True)


@shared_task(name="claims.undrain", ignore_result=True)
def undrain(engine_id: str) -> str:
    """Sent to one engine's queue after an operator put it back from draining."""
    return _set_engine_draining(str(engine_id), False)


def _set_engine_draining(engine_id: str, draining: bool) -> str:
    from claims.engine.worker import local_engine

    engine = local_engine()
    if engine is None or engine.engine_id != engine_id:
        # A message for an engine this worker no longer runs (it restarted): ignore it.
        return "no-engine"
    engine.drain.set(draining)
    return "draining" if draining else "undrained"


@shared_task(name="claims.demo_start_workflows", ignore_result=True)
def demo_start_workflows(count: int) -> int:
    """Keeps the demo fleet busy (scheduled only when WEFTBOARD_DEMO_RATE is set)."""
    from claims.services.demo_fleet import demo_trickle_start

    return len(demo_trickle_start(count=int(count)))


@shared_task(name="claims.backfill_run", acks_late=True, ignore_result=True)
def backfill_run(job_id: int) -> str:
    """Run or resume one visibility backfill; idempotent, so a redelivery is harmless."""
    from claims.backfill import backfill_run as run_backfill

    return run_backfill(int(job_id)).status


@shared_task(name="claims.backfill_run_due", ignore_result=True)
def backfill_run_due() -> str | None:
    """Beat: start the backfill that is due, or resume one whose runner died."""
    from claims.backfill import backfill_run_due as run_due

    job = run_due()
    return None if job is None else job.status


@shared_task(name="claims.fleet_snapshot", ignore_result=True)
def fleet_snapshot() -> None:
    """Beat takes the overview's fleet aggregates once per renew interval."""
    from claims.fleet_clock import fleet_now
    from claims.services.engines import fleet_snapshot_take

    now_ms, timing = fleet_now()
    fleet_snapshot_take(now_ms=now_ms, timing=timing)


@shared_task(name="claims.adopt_many", ignore_result=True)
def adopt_many(claims: list[tuple[str, int]]) -> int:
    """Sent to one engine's queue for each chunk of a bulk takeover to it: the claims it was
    granted, adopted one by one; returns how many it adopted."""
    from claims.engine.worker import local_engine

    engine = local_engine()
    if engine is None:
        return 0
    return sum(engine.adopt(str(wid), int(epoch)) == "adopted" for wid, epoch in claims)


@shared_task(name="claims.bulk_run", acks_late=True, ignore_result=True)
def bulk_run(job_id: int) -> str:
    """Run or resume one bulk job; idempotent, so a redelivery is harmless."""
    from claims.bulk import BulkHooks
    from claims.bulk import bulk_run as run_job

    return run_job(int(job_id), hooks=BulkHooks(send_adopts=send_adopts)).status


@shared_task(name="claims.bulk_run_due", ignore_result=True)
def bulk_run_due() -> str | None:
    """Beat: start a queued bulk job, or resume one whose runner died."""
    from claims.bulk import BulkHooks
    from claims.bulk import bulk_run_due as run_due

    job = run_due(hooks=BulkHooks(send_adopts=send_adopts))
    return None if job is None else job.status


def send_adopts(adopt: dict[str, list[tuple[str, int]]]) -> None:
    """A bulk takeover chunk's adopt messages, once it committed: one per engine. A broker
    that is down loses only the message (the engine's audit or reclaim takes the claims up)."""
    for queue, claims in adopt.items():
        try:
            adopt_many.apply_async(args=(claims,), queue=queue, retry=False)
        except Exception as error:
            logger.warning(
                "bulk takeover of %d claims committed, but the adopt message to %s could not be"
                " sent (%s); the engine's reclaim pass takes them up",
                len(claims),
                queue,
                error,
            )
