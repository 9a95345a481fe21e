"""Drain and undrain an engine (docs/design.md §7, "Actions"): an operator's request,
committed with its audit event, then told to the engine on its own queue, as adopt is.

A draining engine stops acquiring and taking over, lets its drives reach their next
checkpoint and releases the claims it holds; it keeps renewing what it still drives.
It also reads the flag at every tick, so a lost message is healed by the next tick.
"""

from __future__ import annotations

import logging

from django.db import transaction

from claims.fleet_clock import fleet_clock
from claims.models import Engine, EngineEvent, EngineEventKind, EngineStatus
from claims.protocol import Clock
from claims.protocol.ids import check_engine_id

from .errors import EngineDrainConflictError
from .rules import operator_reason, refuse_if_read_only

logger = logging.getLogger("weftboard.claims")


def engine_drain(
    engine_id: str, *, actor: str, reason: str, clock: Clock | None = None
) -> str | None:
    """Ask a live engine to drain; returns the queue told (None: it has none and learns
    at its next tick). Raises Engine.DoesNotExist, EngineDrainConflictError."""
    return _set_draining(engine_id, True, actor=actor, reason=reason, clock=clock)


def engine_undrain(
    engine_id: str, *, actor: str, reason: str, clock: Clock | None = None
) -> str | None:
    """Put a draining engine back to acquiring and taking over."""
    return _set_draining(engine_id, False, actor=actor, reason=reason, clock=clock)


def _set_draining(
    engine_id: str, drain: bool, *, actor: str, reason: str, clock: Clock | None
) -> str | None:
    refuse_if_read_only()
    engine_id = check_engine_id(engine_id)
    reason = operator_reason(reason)
    now_ms = (clock or fleet_clock())()
    with transaction.atomic():
        engine = Engine.objects.select_for_update().get(engine_id=engine_id)
        if drain and engine.status != EngineStatus.ACTIVE:
            raise EngineDrainConflictError(
                engine_id, f"engine {engine_id} is {engine.status}: only a live engine drains"
            )
        if engine.draining == drain:
            state = "draining" if drain else "not draining"
            raise EngineDrainConflictError(engine_id, f"engine {engine_id} is already {state}")
        engine.drain_requested_at_ms = now_ms if drain else None
        engine.save(update_fields=["drain_requested_at_ms"])
        kind = EngineEventKind.DRAIN if drain else EngineEventKind.UNDRAIN
        EngineEvent.objects.create(
            engine_id=engine_id, kind=kind, actor=actor, reason=reason, at_ms=now_ms
        )
        queue = engine.queue or None
        if queue is not None:
            transaction.on_commit(lambda: _tell_engine(engine_id, drain, queue))
    return queue


def _tell_engine(engine_id: str, drain: bool, queue: str) -> None:
    """Best effort, as _send_adopt: the engine also reads the flag at its next tick."""
    from claims.tasks import drain as drain_task
    from claims.tasks import undrain as undrain_task

    task = drain_task if drain else undrain_task
    try:
        task.apply_async(args=(engine_id,), queue=queue, retry=False)
    except Exception as error:
        logger.warning(
            "engine %s: the %s message to %s could not be sent (%s); it learns at its next tick",
            engine_id,
            task.name,
            queue,
            error,
        )
