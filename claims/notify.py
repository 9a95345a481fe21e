"""Operator writes that must also tell an engine: the forced takeover and its adopt message."""

from __future__ import annotations

import logging

from django.db import transaction

from claims.models import Engine
from claims.protocol import Clock
from claims.services import claim_force_takeover

logger = logging.getLogger("weftboard.claims")


def claim_force_takeover_and_notify(
    workflow_id: str,
    *,
    expected_epoch: int,
    target_engine_id: str,
    actor: str | None,
    reason: str,
    clock: Clock | None = None,
) -> int:
    """Grant epoch + 1 to a live engine, then send `claims.adopt` to that engine's own queue.

    The message leaves only after the grant commits, so the engine never reads a claim
    that is not there yet. Raises what claim_force_takeover raises (StaleEpochError,
    ClaimConfigError for an engine that is not live, InvalidWorkflowIdError).
    """
    with transaction.atomic():
        epoch = claim_force_takeover(
            workflow_id,
            expected_epoch=expected_epoch,
            target_engine_id=target_engine_id,
            actor=actor,
            reason=reason,
            clock=clock,
        )
        queue = (
            Engine.objects.filter(engine_id=target_engine_id)
            .values_list("queue", flat=True)
            .first()
        )
        if queue:
            transaction.on_commit(lambda: _send_adopt(workflow_id, epoch, queue))
        else:
            # An engine without a queue (seeded demo rows) cannot be told; the claim
            # then expires unrenewed and the next reclaim pass takes it over.
            logger.warning(
                "engine %s has no queue to send adopt to; workflow %s waits for reclaim",
                target_engine_id,
                workflow_id,
            )
    return epoch


def _send_adopt(workflow_id: str, epoch: int, queue: str) -> None:
    """Tell the new holder, once; a broker that is down must not turn a committed takeover
    into an error for the operator (nor hold the request up retrying). Untold, the engine
    never renews the claim, so it expires and the next reclaim pass takes the workflow."""
    from claims.tasks import adopt

    try:
        adopt.apply_async(args=(workflow_id, epoch), queue=queue, retry=False)
    except Exception as error:
        logger.warning(
            "forced takeover of workflow %s at epoch %s committed, but the adopt message to %s"
            " could not be sent (%s); the claim expires unrenewed and reclaim takes it over",
            workflow_id,
            epoch,
            queue,
            error,
        )
