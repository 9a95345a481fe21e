"""Claims granted but not yet driven, kept so the next reclaim pass drives them again
(docs/design.md §4): never a claim held and idle."""

from __future__ import annotations

import logging
import threading

from .offset_clock import Clock
from .store import ClaimStore

logger = logging.getLogger("weftboard.claims")


class PendingRedrives:
    """Per workflow, the epoch to drive again. The in-memory record is what counts; the
    store's row is the dashboard's copy, written if the store answers."""

    def __init__(self, store: ClaimStore, *, engine_id: str, clock: Clock) -> None:
        self.store = store
        self._engine_id = engine_id
        self._clock = clock
        self._lock = threading.Lock()
        self._pending: dict[str, int] = {}

    def snapshot(self) -> dict[str, int]:
        with self._lock:
            return dict(self._pending)

    def forget(self, workflow_id: str) -> None:
        with self._lock:
            had = self._pending.pop(workflow_id, None)
        if had is not None:
            try:
                self.store.drop_pending_redrive(engine_id=self._engine_id, workflow_id=workflow_id)
            except Exception:
                logger.exception("could not drop the re-drive record of %s", workflow_id)

    def keep(
        self, workflow_id: str, epoch: int, error: BaseException, *, drive_failed: bool = False
    ) -> None:
        """The next pass drives it again."""
        with self._lock:
            if not drive_failed and self._pending.get(workflow_id) == epoch:
                return  # the drive recorded it already
            self._pending[workflow_id] = epoch
        self._persist(workflow_id, epoch, error)

    def _persist(self, workflow_id: str, epoch: int, error: BaseException) -> None:
        try:
            self.store.save_pending_redrive(
                engine_id=self._engine_id,
                workflow_id=workflow_id,
                epoch=epoch,
                error=f"{type(error).__name__}: {error}"[:2000],
                now_ms=self._clock(),
            )
        except Exception:
            logger.exception("could not persist the re-drive record of %s", workflow_id)
