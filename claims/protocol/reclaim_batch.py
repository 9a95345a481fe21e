"""The set-based half of reclaim: many candidates in a few statements (docs/design.md §4).

A reclaim pass tries its candidates here first; whatever this leaves (held by me,
pending re-drives, lost races, live rows naming me) goes to ``ReclaimTarget.attempt``
one by one. What to do with the registry's answer to a takeover is the same pure
judgement on both paths (``decisions.after_takeover``).
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Literal

from .decisions import after_takeover
from .log_events import log_takeovers
from .metrics import ClaimMetrics
from .records import ClaimResult, SessionPair
from .redrives import PendingRedrives
from .registry import ClaimRegistry
from .store import ClaimStore

AttemptStatus = Literal["reclaimed", "not-eligible", "backoff-skipped", "lost-race"]
Settled = dict[str, AttemptStatus | Exception]


class SetBasedReclaim:
    """``attempt_batch``, and the drive both paths end in; ``ReclaimTarget`` sets the state."""

    registry: ClaimRegistry
    store: ClaimStore
    metrics: ClaimMetrics | None
    _on_reclaimed: Callable[[str], object] | None
    _is_type_registered: Callable[[str], bool] | None
    _registered_types: Callable[[], Collection[str]] | None
    _redrives: PendingRedrives
    _disposing: bool

    @property
    def pending_redrives(self) -> dict[str, int]:
        return self._redrives.snapshot()

    def attempt_batch(self, workflow_ids: list[str]) -> Settled:
        """Take over expired and invalid holders, and acquire running workflows nobody
        holds, set-based, as ``attempt`` would one by one.

        Returns the ids it settled; the rest (held by me, pending re-drives, rows
        nobody holds that another engine acquired first, live rows naming me) are left
        for ``attempt``, which retries. A takeover lost to another writer is settled
        "lost-race", left to the next pass.
        A drive that raised is returned as its exception, its re-drive recorded.
        """
        if self._disposing:
            return {}
        pending = self.pending_redrives
        held = set(self.registry.held_workflow_ids())
        ids = [wf for wf in workflow_ids if wf not in held and wf not in pending]
        settled: Settled = {}
        if not ids:
            return settled
        if self._is_type_registered is not None:
            ids = self._batch_registered(ids, settled)
        if self._disposing or not ids:
            return settled
        granted: dict[str, int] = {}
        no_claim = self._batch_takeover(ids, granted, settled)
        if no_claim and not self._disposing:
            self._batch_acquire(no_claim, granted, settled)
        if granted:
            self._batch_drive(granted, settled)
        return settled

    def _batch_registered(self, ids: list[str], settled: Settled) -> list[str]:
        """The ids of a type this engine can run; the others are settled not eligible."""
        assert self._is_type_registered is not None
        infos = self.store.read_workflows(ids)
        for wf in ids:
            info = infos.get(wf)
            if info is None or not self._is_type_registered(info.workflow_type):
                settled[wf] = "not-eligible"
        return [wf for wf in ids if wf not in settled]

    def _batch_takeover(
        self, ids: list[str], granted: dict[str, int], settled: Settled
    ) -> list[str]:
        """One set-based takeover; returns the ids nobody holds. A live row naming me is
        left to ``attempt``, which takes it back at its epoch: these ids were not held
        here when the batch began."""
        no_claim: list[str] = []
        taken: dict[str, int] = {}
        for wf, result in self.registry.takeover_many(ids).items():
            step = after_takeover(result, engine_id=self.registry.engine_id, held_here=False)
            if step == "drive":
                self._record_grant(result, "takeover")
                assert result.epoch is not None
                taken[wf] = granted[wf] = result.epoch
            elif step == "backoff-skipped":
                self._record("backoff_skipped")
                settled[wf] = "backoff-skipped"
            elif step == "not-eligible":
                settled[wf] = "not-eligible"
            elif step == "retry":
                # Another engine was writing the row (SKIP LOCKED) or it changed since the
                # read: whoever wrote it holds it now, or it is still stale and the next
                # pass finds it again. Not retried one by one: when thousands are
                # stranded, the live engines' chunks overlap, and a retry per lost row
                # would wait on the other engine's locks and repeat its work.
                self._record("lost_race")
                settled[wf] = "lost-race"
            elif step == "acquire":
                no_claim.append(wf)
        log_takeovers(taken, self.registry.engine_id)
        return no_claim

    def _batch_acquire(
        self, no_claim: list[str], granted: dict[str, int], settled: Settled
    ) -> None:
        """Nobody holds these: running ones are acquired, the others are not ours to take."""
        infos = self.store.read_workflows(no_claim)
        running = [wf for wf in no_claim if getattr(infos.get(wf), "status", None) == "running"]
        for wf in no_claim:
            if wf not in running:
                settled[wf] = "not-eligible"
        if not running or self._disposing:
            return
        for wf, result in self.registry.acquire_many(running).items():
            if result.status == "acquired":
                self._record_grant(result, "acquired")
                assert result.epoch is not None
                granted[wf] = result.epoch
            else:
                self._record("lost_race")

    def _batch_drive(self, granted: dict[str, int], settled: Settled) -> None:
        """Confirm, with one fresh read, that each is still running before driving it."""
        try:
            confirmed = {} if self._disposing else self.store.read_workflows(list(granted))
        except Exception as exc:
            for wf, epoch in granted.items():
                self._redrives.keep(wf, epoch, exc)
                settled[wf] = exc
            return
        statuses = {wf: info.status for wf, info in confirmed.items()}
        self._drive_running(granted, statuses, settled)

    # -- by the session ---------------------------------------------------------------

    def sweep_session(self, pair: SessionPair, limit: int) -> tuple[Settled, bool]:
        """Take over up to ``limit`` claims of the dead session ``pair`` in one statement
        (``ClaimRegistry.take_over_session``) and drive those of running workflows; the
        others are handed straight back. Returns what it settled, and whether the session
        may name more for this engine (the statement took as many as it could)."""
        if self._disposing:
            return {}, False
        types = None if self._registered_types is None else list(self._registered_types())
        skip = [*self.pending_redrives, *self.registry.cooling_down(self.registry.clock())]
        taken = self.registry.take_over_session(pair, limit=limit, workflow_types=types, skip=skip)
        settled: Settled = {}
        granted: dict[str, int] = {}
        statuses: dict[str, str] = {}
        for wf, (result, status) in taken.items():
            if result.status == "acquired" and result.epoch is not None:
                self._record("takeover")
                granted[wf], statuses[wf] = result.epoch, status
            else:
                # Granted under a session this engine lost meanwhile: not its to drive.
                self._record("lost_race")
                settled[wf] = "lost-race"
        log_takeovers(granted, self.registry.engine_id)
        self._drive_running(granted, statuses, settled)
        return settled, len(taken) >= limit

    # -- shared by both paths -------------------------------------------------------

    def _drive_running(
        self, granted: dict[str, int], statuses: dict[str, str], settled: Settled
    ) -> None:
        """Drive each claim just granted whose workflow is running (``statuses``, read after
        or with the grant) and hand the others straight back; a failure on the way keeps a
        re-drive, never a claim held and idle."""
        for wf, epoch in granted.items():
            try:
                if self._disposing or statuses.get(wf) != "running":
                    if self.registry.current_epoch(wf) == epoch:
                        self.registry.release(wf, expected_epoch=epoch)
                    settled[wf] = "not-eligible"
                    continue
                settled[wf] = self._drive(wf, epoch)
            except Exception as exc:
                self._redrives.keep(wf, epoch, exc)
                settled[wf] = exc

    def _drive(self, workflow_id: str, epoch: int) -> AttemptStatus:
        if self._on_reclaimed is not None:
            try:
                self._on_reclaimed(workflow_id)
            except Exception as exc:
                # User code may already have started: keep the claim and its fence,
                # and drive again next pass rather than let another engine in.
                self._redrives.keep(workflow_id, epoch, exc, drive_failed=True)
                raise
        self._redrives.forget(workflow_id)
        return "reclaimed"

    def _record_grant(self, result: ClaimResult, asked: str) -> None:
        """A grant counts as what landed: an earlier one whose answer was lost may have
        been the other kind (an acquisition found by a takeover's read, or the reverse)."""
        self._record(result.granted_as or asked)

    def _record(self, outcome: str) -> None:
        if self.metrics is not None:
            self.metrics.record_attempt(outcome)
