"""Taking over the claims of stranded workflows (docs/design.md §4).

Candidates come from discovery (``discovery.py``). Each attempt decides
eligibility before any CAS and re-checks "disposing" after every database round
trip, so a claim granted while the engine shuts down is released at once instead
of being driven. What to do with the registry's answer to a takeover is one pure
judgement (``decisions.after_takeover``) for the single path and the set-based batch.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable, Collection

from .constants import AUTHORITATIVE_SCAN_LIMIT, RECLAIM_CHUNK, TAKEOVER_MAX_ATTEMPTS
from .decisions import after_takeover
from .discovery import CURSOR_NAME, SHARED_CANDIDATE_LIMIT, CandidateFinder, Discovery
from .fleet_share import FleetShare
from .log_events import log_takeover
from .metrics import ClaimMetrics
from .reclaim_batch import AttemptStatus, SetBasedReclaim
from .records import SessionPair
from .redrives import PendingRedrives
from .registry import ClaimRegistry
from .store import ClaimStore

__all__ = ["CURSOR_NAME", "AttemptStatus", "Discovery", "ReclaimTarget"]

logger = logging.getLogger("weftboard.claims")


class ReclaimTarget(SetBasedReclaim):
    """One engine's reclaim: discovery, the set-based batch and the attempt one by one."""

    def __init__(
        self,
        registry: ClaimRegistry,
        store: ClaimStore,
        *,
        metrics: ClaimMetrics | None = None,
        on_reclaimed: Callable[[str], object] | None = None,
        is_type_registered: Callable[[str], bool] | None = None,
        registered_types: Callable[[], Collection[str]] | None = None,
        scan_limit: int = AUTHORITATIVE_SCAN_LIMIT,
        scan_paced_ms: int = 0,
        audit_interval_ms: int | None = None,
        shared_candidate_limit: int = SHARED_CANDIDATE_LIMIT,
        rng: random.Random | None = None,
        chunk_size: int = RECLAIM_CHUNK,
        pass_budget_ms: int | None = None,
    ) -> None:
        if chunk_size < 1:
            raise ValueError("chunk_size must be at least 1")
        self.registry = registry
        self.store = store
        self.metrics = metrics
        self._on_reclaimed = on_reclaimed
        self._is_type_registered = is_type_registered
        self._registered_types = registered_types
        self._redrives = PendingRedrives(store, engine_id=registry.engine_id, clock=registry.clock)
        self._disposing = False
        # A pass attempts its candidates a chunk at a time and starts no new chunk of the
        # shared window once this much time has gone (half an interval by default): the
        # first grants land within a chunk's time, not after the whole window is judged,
        # and a pass never outgrows its interval however many are stranded. What is left
        # waits for the next pass (docs/design.md §4, "A mass failure is split").
        self.chunk_size = chunk_size
        self.pass_budget_ms = (
            registry.timing.renew_interval_ms // 2 if pass_budget_ms is None else pass_budget_ms
        )
        self.last_discovery = Discovery()
        self._carried: list[str] = []
        self._carried_sessions: dict[SessionPair, int] = {}
        # A dead session naming more than a chunk is taken over by the session, a chunk a
        # statement (``sweep_session``); its types filtered in the statement, so only
        # when the engine can name the types it runs.
        sweeps = is_type_registered is None or registered_types is not None
        self._finder = CandidateFinder(
            registry,
            store,
            scan_limit=scan_limit,
            scan_paced_ms=scan_paced_ms,
            shared_limit=shared_candidate_limit,
            rng=rng,
            sweep_above=chunk_size if sweeps else None,
            audit_interval_ms=(
                registry.timing.ttl_ms // 3 if audit_interval_ms is None else audit_interval_ms
            ),
        )

    # -- state -------------------------------------------------------------------

    @property
    def disposing(self) -> bool:
        return self._disposing

    def mark_disposing(self) -> None:
        """Permanent: later attempts do nothing; a grant that lands now is released."""
        self._disposing = True

    def list_candidates(self, share: FleetShare | None = None) -> list[str]:
        """Discovery: every source, the shared ones in a window (``Discovery``); beat's
        ``share`` stands in for the reads it covers."""
        self._carried, self._carried_sessions = [], {}
        if self._disposing:
            return []
        self.last_discovery = self._finder.find(self._redrives.snapshot, share)
        return list(self.last_discovery.candidates)

    # -- catching up -----------------------------------------------------------------

    @property
    def carried(self) -> int:
        """Candidates the last pass found but left when its budget ran out (a session's
        claims counted as its discovery did, less those taken since)."""
        return len(self._carried) + sum(self._carried_sessions.values())

    def carry(self, leftover: list[str], sessions: dict[SessionPair, int] | None = None) -> None:
        self._carried = list(leftover)
        self._carried_sessions = dict(sessions or {})

    def take_carried_sessions(self) -> dict[SessionPair, int]:
        """The dead sessions the last pass had no time to sweep to the end."""
        carried, self._carried_sessions = self._carried_sessions, {}
        return {} if self._disposing else carried

    def take_carried(self) -> list[str]:
        """The candidates the last pass left, less those held here now, for a catch-up
        pass: no discovery, only the attempts the last pass had no time for. The
        takeovers judge each row afresh, so a candidate settled meanwhile costs a read."""
        carried, self._carried = self._carried, []
        if self._disposing:
            return []
        held = set(self.registry.held_workflow_ids())
        return [workflow_id for workflow_id in carried if workflow_id not in held]

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
        self._redrives.forget(workflow_id)
        return self._take_over(workflow_id)

    def _redrive(self, workflow_id: str, epoch: int) -> AttemptStatus:
        if not self._is_running(workflow_id):
            self._redrives.forget(workflow_id)
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
            held_here = self.registry.current_epoch(workflow_id) is not None
            step = after_takeover(result, engine_id=self.registry.engine_id, held_here=held_here)
            if step == "drive":
                self._record_grant(result, "takeover")
                assert result.epoch is not None
                log_takeover(workflow_id, result.epoch, self.registry.engine_id)
                return self._after_grant(workflow_id, result.epoch)
            if step == "backoff-skipped":
                self._record("backoff_skipped")
                return "backoff-skipped"
            if step == "not-eligible":
                return "not-eligible"
            if step == "take-back":
                assert result.epoch is not None
                return self._adopt_own(workflow_id, result.epoch)
            if step == "retry":
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
            self._record_grant(acquired, "acquired")
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
            self._redrives.keep(workflow_id, epoch, error)
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

    # -- helpers ---------------------------------------------------------------------

    def _is_running(self, workflow_id: str) -> bool:
        info = self.store.read_workflow(workflow_id)
        return info is not None and info.status == "running"
