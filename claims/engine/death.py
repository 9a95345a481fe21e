"""An engine that beat marked dead stays dead (docs/design.md §4, "Dead engines stay
dead").

Beat marks an engine dead after 3 x TTL without a heartbeat. By then its claims were
takeable long ago, and the fleet may have switched its ownership mode since (§12: the
switch waits for exactly this). An engine that was only paused (SIGSTOP, a frozen VM, a
long swap) and wakes up must not take work again under the id, and in the mode, of a
process the fleet wrote off. It learns of it in two places: before each reclaim pass (the
one pass that acquires and takes over) it reads its own row, and every heartbeat is an
UPDATE that applies only to a live row, so one that applies nothing tells it.

On finding itself dead it logs ``event=engine-revived-dead`` once and leaves: the engine
takes nothing new, its drives pause at their next checkpoint, what it still holds is
released by compare-and-swap, and its worker exits non-zero (claims/engine/worker.py) so
that the supervisor starts a fresh process, which registers under a new engine id in the
fleet's current mode, or is refused by the ownership gate with its message.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from claims.protocol.log_events import log_event
from claims.selectors.engines.actions import engine_status
from claims.selectors.engines.liveness import LIVE_ENGINE_STATUSES

logger = logging.getLogger("weftboard.claims")

REVIVED_DEAD_EVENT = "engine-revived-dead"


class DeathWatch:
    """One engine's watch on its own row; ``on_dead`` runs once, on the thread that found out."""

    def __init__(self, engine_id: str, *, mode: str, on_dead: Callable[[], None]) -> None:
        self.engine_id = engine_id
        self.mode = mode
        self._on_dead = on_dead
        self._lock = threading.Lock()
        self._found = False

    @property
    def found(self) -> bool:
        return self._found

    def confirm_alive(self, *, before: str) -> bool:
        """Read the own row before a pass named ``before``: True while it is active or
        disposing. A read that raises answers nothing and the pass does not run (the
        caller's error path), so no grant rests on an unknown status."""
        status = engine_status(self.engine_id)
        if status in LIVE_ENGINE_STATUSES:
            return True
        self.found_dead(found_by=f"{before}-check", status=status or "gone")
        return False

    def found_dead(self, *, found_by: str, status: str | None = None) -> None:
        """Once: log the event and hand over to ``on_dead``."""
        with self._lock:
            if self._found:
                return
            self._found = True
        log_event(
            logger,
            logging.ERROR,
            REVIVED_DEAD_EVENT,
            engine=self.engine_id,
            mode=self.mode,
            found_by=found_by,
            status=status,
            then="release-and-exit",
        )
        self._on_dead()
