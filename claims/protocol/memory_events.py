"""The claim event log of the in-memory store."""

from __future__ import annotations

import threading

from .records import MOVE_KINDS, ClaimEventRecord


class MemoryEventLog:
    """Mixed into ``MemoryClaimStore``, which owns the lock and the list."""

    _lock: threading.RLock
    _events: list[ClaimEventRecord]

    @property
    def events(self) -> list[ClaimEventRecord]:
        with self._lock:
            return list(self._events)

    def record_event(self, event: ClaimEventRecord) -> None:
        self._append(event)

    def read_claim_moves(
        self, *, since_ms: int, moved_from: str | None = None
    ) -> list[tuple[str, int]]:
        return [
            (e.workflow_id, e.epoch_after)
            for e in self.events
            if e.kind in MOVE_KINDS
            and e.at_ms >= since_ms
            and e.epoch_after is not None
            and (moved_from is None or e.holder_before in (None, moved_from))
        ]

    def _append(self, event: ClaimEventRecord | None) -> None:
        if event is not None:
            with self._lock:
                self._events.append(event)
