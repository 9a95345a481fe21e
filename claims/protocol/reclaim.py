"""Finding stranded workflows and taking their claims over (docs/design.md §4).

A candidate comes from one of three sources: expired or invalid holders,
running workflows the visibility index shows without a holder, and a bounded
cursor-rotated page of the authoritative workflow table (for workflows the
index has never seen). Each attempt decides eligibility before any CAS and
re-checks "disposing" after every database round trip, so a claim granted
while the engine shuts down is released at once instead of being driven.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from .constants import AUTHORITATIVE_SCAN_LIMIT, TAKEOVER_MAX_ATTEMPTS
from .metrics import ClaimMetrics
from .registry import ClaimRegistry
from .store import ClaimStore

logger = logging.getLogger("weftboard.claims")

AttemptStatus = Literal["reclaimed", "not-eligible", "backoff-skipped", "lost-race"]
CURSOR_NAME = "default"


@dataclass
class Discovery:
    """How many candidates each source found in the last pass (for the dashboard)."""

    stale_holders: int = 0
    unheld_indexed: int = 0
    authoritative_scan: int = 0
    pending_redrives: int = 0
    mine_unheld: int = 0  # rows naming this engine that it did not hold, or grants in doubt
    scanned: int = 0
    wrapped: bool = False
    candidates: list[str] = field(default_factory=list)


class ReclaimTarget:
    def __init__(
        self,
        registry: ClaimRegistry,
        store: ClaimStore,
        *,
        metrics: ClaimMetrics | None = None,
        on_reclaimed: Callable[[str], object] | None = None,
        is_type_registered: Callable[[str], bool] | None = None,
        scan_limit: int = AUTHORITATIVE_SCAN_LIMIT,
        audit_interval_ms: int | None = None,
    ) -> None:
        self.registry = registry
        self.store = store
        self.metrics = metrics
        self._on_reclaimed = on_reclaimed
        self._is_type_registered = is_type_registered
        self._scan_limit = scan_limit
        self._lock = threading.Lock()
        self._pending: dict[str, int] = {}
        self._disposing = False
        self.last_discovery = Discovery()
        # How often discovery also asks which rows name this engine: one it does not hold
        # (an adopt order that never arrived) is adopted long before it would expire.
        self._audit_interval_ms = (
            registry.timing.ttl_ms // 3 if audit_interval_ms is None else audit_interval_ms
        )
        self._next_audit_ms: int | None = None

    # -- state -------------------------------------------------------------------

    @property
    def pending_redrives(self) -> dict[str, int]:
        with self._lock:
            return dict(self._pending)

    @property
    def disposing(self) -> bool:
        return self._disposing

    def mark_disposing(self) -> None:
        """Permanent: later attempts do nothing; a grant that lands now is released."""
        self._disposing = True

    # -- discovery -----------------------------------------------------------------

    def list_candidates(self) -> list[str]:
        if self._disposing:
            return []
        registry, store = self.registry, self.store
        held = set(registry.held_workflow_ids())
        now = registry.clock()
        # The same rule takeover applies, so a pass costs O(stale), not O(all claims).
        stale = store.list_stale_holders(expired_before_ms=now - registry.timing.grace_ms)
        unheld = store.list_unheld_running_indexed()
        page = store.scan_unheld_running(
            cursor_name=CURSOR_NAME,
            limit=self._scan_limit,
            scanned_by=registry.engine_id,
            now_ms=now,
        )
        # Grants whose answer was lost, and rows naming me that I do not hold: each is
        # settled by an attempt (a read), and driven if it is mine.
        unknown = [wf for wf in registry.doubted_workflow_ids() if wf not in held]
        unknown += [wf for wf in self._audit(now) if wf not in held]
        candidates: dict[str, None] = {}
        for workflow_id in [*stale, *unheld, *page.candidates, *unknown]:
            if workflow_id not in held:
                candidates.setdefault(workflow_id)
        pending = self.pending_redrives
        for workflow_id in pending:
            candidates.setdefault(workflow_id)
        self.last_discovery = Discovery(
            stale_holders=len(stale),
            unheld_indexed=len(unheld),
            authoritative_scan=len(page.candidates),
            pending_redrives=len(pending),
            mine_unheld=len(unknown),
            scanned=page.scanned,
            wrapped=page.wrapped,
            candidates=list(candidates),
        )
        return list(candidates)

    def _audit(self, now_ms: int) -> list[str]:
        """Every audit interval: the ids whose row names this engine."""
        if self._next_audit_ms is not None and now_ms < self._next_audit_ms:
            return []
        self._next_audit_ms = now_ms + self._audit_interval_ms
        return self.store.list_held_by(engine_id=self.registry.engine_id)

    # -- many attempts at once ------------------------------------------------------

    def attempt_batch(self, workflow_ids: list[str]) -> dict[str, AttemptStatus | Exception]:
        """Take over expired and invalid holders, and acquire running workflows nobody
        holds, set-based, as ``attempt`` would one by one.

        Returns the ids it settled; the rest (held by me, pending re-drives, lost
        races) are left for ``attempt``, which retries.
        A drive that raised is returned as its exception, its re-drive recorded.
        """
        if self._disposing:
            return {}
        pending = self.pending_redrives
        held = set(self.registry.held_workflow_ids())
        ids = [wf for wf in workflow_ids if wf not in held and wf not in pending]
        settled: dict[str, AttemptStatus | Exception] = {}
        if not ids:
            return settled
        if self._is_type_registered is not None:
            infos = self.store.read_workflows(ids)
            for wf in ids:
                info = infos.get(wf)
                if info is None or not self._is_type_registered(info.workflow_type):
                    settled[wf] = "not-eligible"
            ids = [wf for wf in ids if wf not in settled]
        if self._disposing or not ids:
            return settled
        granted: dict[str, int] = {}
        no_claim: list[str] = []
        for wf, result in self.registry.takeover_many(ids).items():
            if result.status == "acquired":
                self._record("takeover")
                assert result.epoch is not None
                granted[wf] = result.epoch
            elif result.status == "backoff-skipped":
                self._record("backoff_skipped")
                settled[wf] = "backoff-skipped"
            elif result.status == "not-expired":
                # A live row naming me that I do not hold (a forced takeover whose adopt
                # order was lost) is left to ``attempt``, which takes it back at its epoch.
                if result.held_by != self.registry.engine_id:
                    settled[wf] = "not-eligible"
            elif result.status == "lost-race":
                self._record("lost_race")
            elif result.status == "no-claim":
                no_claim.append(wf)
        if no_claim and not self._disposing:
            # Nobody holds these: running ones are acquired, the others are not ours to take.
            infos = self.store.read_workflows(no_claim)
            running = [wf for wf in no_claim if getattr(infos.get(wf), "status", None) == "running"]
            for wf in no_claim:
                if wf not in running:
                    settled[wf] = "not-eligible"
            if running and not self._disposing:
                for wf, result in self.registry.acquire_many(running).items():
                    if result.status == "acquired":
                        self._record("acquired")
                        assert result.epoch is not None
                        granted[wf] = result.epoch
                    else:
                        self._record("lost_race")
        if not granted:
            return settled
        # Confirm, with one fresh read, that each is still running before driving it.
        try:
            confirmed = {} if self._disposing else self.store.read_workflows(list(granted))
        except Exception as exc:
            for wf, epoch in granted.items():
                self._keep_for_redrive(wf, epoch, exc)
                settled[wf] = exc
            return settled
        for wf, epoch in granted.items():
            info = confirmed.get(wf)
            try:
                if self._disposing or info is None or info.status != "running":
                    if self.registry.current_epoch(wf) == epoch:
                        self.registry.release(wf, expected_epoch=epoch)
                    settled[wf] = "not-eligible"
                    continue
                settled[wf] = self._drive(wf, epoch)
            except Exception as exc:
                self._keep_for_redrive(wf, epoch, exc)
                settled[wf] = exc
        return settled

    # -- one attempt -----------------------------------------------------------------

    def attempt(self, workflow_id: str) -> AttemptStatus:
        if self._disposing:
            return "not-eligible"
        held_epoch = self.registry.current_epoch(workflow_id)
        if held_epoch is not None:
            pending_epoch = self.pending_redrives.get(workflow_id)
            if pending_epoch is None or pending_epoch == held_epoch:
                return self._redrive(workflow_id, held_epoch)
        # A re-drive recorded for an epoch I no longer hold is stale.
        self._forget_redrive(workflow_id)
        return self._take_over(workflow_id)

    def _redrive(self, workflow_id: str, epoch: int) -> AttemptStatus:
        if not self._is_running(workflow_id):
            self._forget_redrive(workflow_id)
            if self.registry.current_epoch(workflow_id) == epoch:
                self.registry.release(workflow_id, expected_epoch=epoch)
            return "not-eligible"
        if self._disposing:
            return "not-eligible"
        return self._drive(workflow_id, epoch)

    def _take_over(self, workflow_id: str) -> AttemptStatus:
        if self._is_type_registered is not None:
            info = self.store.read_workflow(workflow_id)
            if info is None or not self._is_type_registered(info.workflow_type):
                return "not-eligible"
        for _ in range(TAKEOVER_MAX_ATTEMPTS):
            if self._disposing:
                return "not-eligible"
            result = self.registry.takeover(workflow_id)
            if result.status == "acquired":
                self._record("takeover")
                assert result.epoch is not None
                return self._after_grant(workflow_id, result.epoch)
            if result.status == "backoff-skipped":
                self._record("backoff_skipped")
                return "backoff-skipped"
            if result.status == "not-expired":
                if self._is_ghost(workflow_id, result.held_by) and result.epoch is not None:
                    return self._adopt_own(workflow_id, result.epoch)
                return "not-eligible"
            if result.status == "lost-race":
                self._record("lost_race")
                continue
            # no-claim: nobody holds it, so a running workflow is simply acquired.
            if self._disposing or not self._is_running(workflow_id):
                return "not-eligible"
            if self._disposing:
                return "not-eligible"
            acquired = self.registry.acquire(workflow_id)
            if self._is_ghost(workflow_id, acquired.held_by):
                return self._adopt_own(workflow_id, None)
            if acquired.status != "acquired":
                self._record("lost_race")
                continue
            self._record("acquired")
            assert acquired.epoch is not None
            return self._after_grant(workflow_id, acquired.epoch)
        return "lost-race"

    def _is_ghost(self, workflow_id: str, held_by: str | None) -> bool:
        """The row names this engine, but the engine does not hold the claim."""
        return (
            held_by == self.registry.engine_id and self.registry.current_epoch(workflow_id) is None
        )

    def _adopt_own(self, workflow_id: str, epoch: int | None) -> AttemptStatus:
        """A row names this engine but it does not hold it (a grant whose answer was lost
        and not settled yet, or a forced takeover whose adopt order never came): take it
        back at its epoch and drive it, instead of waiting for it to expire."""
        if epoch is None:
            row = self.store.read_claim(workflow_id)
            if row is None or row.valid_holder_engine() != self.registry.engine_id:
                return "lost-race"
            epoch = row.epoch
        if self.registry.adopt(workflow_id, epoch).status != "adopted":
            return "lost-race"
        logger.warning(
            "engine %s took back its own claim on workflow %s at epoch %s",
            self.registry.engine_id,
            workflow_id,
            epoch,
        )
        return self._after_grant(workflow_id, epoch)

    def _after_grant(self, workflow_id: str, epoch: int) -> AttemptStatus:
        """Confirm and drive a claim just granted; any failure on the way leaves a re-drive
        recorded, never a claim held and idle."""
        try:
            return self._confirm_and_drive(workflow_id, epoch)
        except Exception as error:
            self._keep_for_redrive(workflow_id, epoch, error)
            raise

    def _confirm_and_drive(self, workflow_id: str, epoch: int) -> AttemptStatus:
        if self._disposing:
            self.registry.release(workflow_id, expected_epoch=epoch)
            return "not-eligible"
        if not self._is_running(workflow_id):
            # Finished or cancelled between discovery and the grant: hand it straight back.
            if self.registry.current_epoch(workflow_id) == epoch:
                self.registry.release(workflow_id, expected_epoch=epoch)
            return "not-eligible"
        if self._disposing:
            self.registry.release(workflow_id, expected_epoch=epoch)
            return "not-eligible"
        return self._drive(workflow_id, epoch)

    def _drive(self, workflow_id: str, epoch: int) -> AttemptStatus:
        if self._on_reclaimed is not None:
            try:
                self._on_reclaimed(workflow_id)
            except Exception as exc:
                # User code may already have started: keep the claim and its fence,
                # and drive again next pass rather than let another engine in.
                self._keep_for_redrive(workflow_id, epoch, exc, drive_failed=True)
                raise
        self._forget_redrive(workflow_id)
        return "reclaimed"

    # -- helpers ---------------------------------------------------------------------

    def _is_running(self, workflow_id: str) -> bool:
        info = self.store.read_workflow(workflow_id)
        return info is not None and info.status == "running"

    def _record(self, outcome: str) -> None:
        if self.metrics is not None:
            self.metrics.record_attempt(outcome)

    def _forget_redrive(self, workflow_id: str) -> None:
        with self._lock:
            had = self._pending.pop(workflow_id, None)
        if had is not None:
            try:
                self.store.drop_pending_redrive(
                    engine_id=self.registry.engine_id, workflow_id=workflow_id
                )
            except Exception:
                logger.exception("could not drop the re-drive record of %s", workflow_id)

    def _keep_for_redrive(
        self, workflow_id: str, epoch: int, error: BaseException, *, drive_failed: bool = False
    ) -> None:
        """The next pass drives it again (the in-memory record is what counts; the row is
        the dashboard's copy, written if the store answers)."""
        with self._lock:
            if not drive_failed and self._pending.get(workflow_id) == epoch:
                return  # the drive recorded it already
            self._pending[workflow_id] = epoch
        self._persist_redrive(workflow_id, epoch, error)

    def _persist_redrive(self, workflow_id: str, epoch: int, error: BaseException) -> None:
        try:
            self.store.save_pending_redrive(
                engine_id=self.registry.engine_id,
                workflow_id=workflow_id,
                epoch=epoch,
                error=f"{type(error).__name__}: {error}"[:2000],
                now_ms=self.registry.clock(),
            )
        except Exception:
            logger.exception("could not persist the re-drive record of %s", workflow_id)
