"""An engine's drain (docs/design.md §7, "Actions"): while an operator has it draining,
the engine takes no new claim, its drives pause at their next checkpoint, and every claim
it is not driving is released; it keeps renewing what it still drives.

The request arrives as a claims.drain message on the engine's own queue, and the engine
also reads its flag at every tick, so a lost message is healed one tick later.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from claims.protocol import ClaimRegistry
from claims.selectors.engines.actions import engine_drain_requested

logger = logging.getLogger("weftboard.claims")


class EngineDrain:
    def __init__(
        self,
        registry: ClaimRegistry,
        *,
        disposing: Callable[[], bool],
        wake: Callable[[], None],
    ) -> None:
        self.registry = registry
        self._disposing = disposing
        self._wake = wake  # runs the passes now, so a drain starts without waiting a tick
        self._requested = threading.Event()
        # Guards _driving against release_idle: a drive either starts before the drain
        # (and is left to reach its checkpoint) or sees the drain and does not start.
        self._lock = threading.Lock()
        self._driving: set[str] = set()

    @property
    def active(self) -> bool:
        return self._requested.is_set()

    def drives_pause(self) -> bool:
        """Drives stop at their next checkpoint when the engine leaves or drains."""
        return self._disposing() or self.active

    def set(self, draining: bool) -> None:
        """An operator's drain or undrain (claims.drain / claims.undrain, or the flag)."""
        if draining == self.active:
            return
        if draining:
            self._requested.set()
        else:
            self._requested.clear()
        self._wake()
        logger.info(
            "engine %s %s",
            self.registry.engine_id,
            "drains: no new claims; releasing what it holds"
            if draining
            else "is undrained: acquiring again",
        )

    def sync(self) -> None:
        """Read the operator's flag (at every tick); a failed read keeps the last known."""
        try:
            self.set(engine_drain_requested(self.registry.engine_id))
        except Exception:
            logger.exception("engine %s could not read its drain flag", self.registry.engine_id)

    @contextmanager
    def driving(self, workflow_id: str) -> Iterator[bool]:
        """Around one drive: yields False (do not drive) while draining."""
        with self._lock:
            may_drive = not self.active
            if may_drive:
                self._driving.add(workflow_id)
        try:
            yield may_drive
        finally:
            if may_drive:
                with self._lock:
                    self._driving.discard(workflow_id)

    def release_idle(self) -> int:
        """Release every held claim no drive is running on; returns how many were released."""
        with self._lock:
            idle = [w for w in self.registry.held_workflow_ids() if w not in self._driving]
        released = 0
        for workflow_id in idle:
            if not self.active:
                break  # undrained meanwhile: keep the rest
            try:
                released += self.registry.release(workflow_id).status == "released"
            except Exception:
                logger.exception(
                    "engine %s could not release %s", self.registry.engine_id, workflow_id
                )
        return released
