"""Switching a fleet from one ownership mode to the other, offline (docs/design.md §12).

Every engine refuses to start in a mode other than the marker's, so a fleet runs in one
mode at a time. The switch is offline: it is refused while any engine row is active or
disposing, so an operator stops every engine first (each releases its claims or closes
its session on the way out) and starts them again in the new mode.

Nothing else moves. The claims an engine left behind keep the holder they name, and the
engines of either mode judge them by the same rule: a per-workflow claim by its own expiry,
a session holder's by its session (an expired session is closed once, then its claims
are taken over). So whatever a crashed engine of the old mode still holds is taken over
by the new mode's engines as it would be by the old mode's, at the next epoch.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from django.db import transaction

from claims.models import Engine, OwnershipModeMarker
from claims.protocol.constants import ENGINE_OWNERSHIP_MODES
from claims.protocol.errors import ConflictError, InvalidInputError
from claims.protocol.log_events import log_event
from claims.selectors.engines.liveness import LIVE_ENGINE_STATUSES

logger = logging.getLogger("weftboard.claims")

NAMED_ENGINES = 10


@dataclass(frozen=True)
class ModeSwitch:
    previous: str | None  # None: no engine had established a mode yet
    mode: str
    switched: bool  # False: the fleet was in that mode already


def ownership_mode_switch(*, mode: str, now_ms: int, actor: str) -> ModeSwitch:
    """Set the fleet's ownership mode to ``mode`` while no engine runs.

    Raises InvalidInputError for a mode no engine runs, and ConflictError, naming them,
    while any engine is active or disposing (a silent one too: beat marks it dead after
    3 x TTL). The marker row is locked for the check and the write, so two switches
    serialise."""
    if mode not in ENGINE_OWNERSHIP_MODES:
        raise InvalidInputError(
            f"ownership mode must be one of {', '.join(ENGINE_OWNERSHIP_MODES)}; got {mode[:40]!r}"
        )
    with transaction.atomic():
        marker = OwnershipModeMarker.objects.select_for_update().filter(id=1).first()
        running = list(
            Engine.objects.filter(status__in=LIVE_ENGINE_STATUSES)
            .order_by("engine_id")
            .values_list("engine_id", flat=True)[: NAMED_ENGINES + 1]
        )
        if running:
            named = ", ".join(running[:NAMED_ENGINES]) + (
                ", ..." if len(running) > NAMED_ENGINES else ""
            )
            raise ConflictError(
                f"the ownership mode is switched only while no engine runs; stop these first "
                f"(an engine that died without stopping is marked dead by beat after 3 x TTL): "
                f"{named}"
            )
        previous = None if marker is None else marker.mode
        if previous == mode:
            return ModeSwitch(previous, mode, switched=False)
        OwnershipModeMarker.objects.update_or_create(
            id=1, defaults={"mode": mode, "established_at_ms": now_ms}
        )
    log_event(
        logger,
        logging.WARNING,
        "ownership-mode-switched",
        previous=previous,
        mode=mode,
        actor=actor,
    )
    return ModeSwitch(previous, mode, switched=True)
