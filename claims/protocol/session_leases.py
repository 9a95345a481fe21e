"""The engine-lease mode: every claim names the engine's session and lives while it does
(docs/design.md §12).

A renew pass renews the session alone: one statement whatever is held. A lost session
loses every claim cached under it at once; the engine counts each of them, stops driving
them and opens the next session, without a write per claim. Takeovers close an expired
session once, with a compare-and-swap on the expiry read, before granting its claims: a
renewal that landed first keeps them all.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Literal

from .errors import SessionRenewalError, SessionUnavailableError
from .fleet_share import FleetShare
from .held_claims import HeldClaims
from .liveness import RenewPassResult, SessionRenewal
from .log_events import log_event
from .metrics import ClaimMetrics
from .records import ClaimResult, ClaimRow, Holder
from .session_lease import EngineSessionLease
from .session_takeover import close_expired_sessions_for

logger = logging.getLogger("weftboard.claims")

# Opening a session is retried once: it fails only if another writer moved this engine's
# row between the read and the write, which nothing but a second process with this
# engine's id does.
OPEN_TRIES = 2


class SessionLeases:
    """Liveness through one session lease per engine: claims carry no expiry of their own,
    and the local deadline of every claim is the session's."""

    def __init__(self, session: EngineSessionLease) -> None:
        self.session = session
        self._claims: HeldClaims | None = None
        self._moves_read_at_ms: int | None = None  # forget_moved_claims' last look

    def bind(self, held: HeldClaims) -> None:
        if self._claims is not None:
            raise ValueError("a liveness strategy serves one registry")
        if self.session.engine_id != held.engine_id:
            raise ValueError("the session must belong to the registry's engine")
        self._claims = held

    @property
    def claims(self) -> HeldClaims:
        assert self._claims is not None, "bind() first"
        return self._claims

    def start(self) -> None:
        """Open the session at boot, so the pages show it before the first grant; a failure
        here is not fatal, as the first grant opens it (and says so if it cannot)."""
        try:
            self.session_epoch()
        except Exception:
            logger.exception("engine %s could not open its session at start", self.engine_id)

    @property
    def engine_id(self) -> str:
        return self.session.engine_id

    def session_epoch(self) -> int | None:
        """The open session's epoch, opening one first if none is open."""
        for _ in range(OPEN_TRIES):
            epoch = self.session.epoch
            if epoch is not None:
                return epoch
            opened = self.session.ensure_open()
            if opened.status == "opened" and opened.epoch is not None:
                epoch = opened.epoch
                log_event(
                    logger, logging.INFO, "session-opened", engine=self.engine_id, epoch=epoch
                )
                return epoch
        raise SessionUnavailableError(f"engine {self.engine_id} could not open a session")

    def names_current(self, holder: Holder) -> bool:
        """Only a claim naming the open session: one naming a session lost since is
        takeover-eligible at once, and one with an expiry of its own would lapse here,
        since nothing renews it."""
        return holder.session_epoch == self.session.epoch

    def within_deadline(self, workflow_id: str) -> bool:
        """While the claim names the open session and that session's last renewal cannot
        yet have lapsed."""
        held = self.claims.held_claim(workflow_id)
        if held is None or held.session_epoch != self.session.epoch:
            return False
        return self.session.within_deadline()

    def prepare_takeover(self, rows: Mapping[str, ClaimRow], now_ms: int) -> dict[str, ClaimRow]:
        """Close the expired sessions the rows name, once each."""
        return close_expired_sessions_for(self.claims, rows, now_ms)

    # -- renewal ---------------------------------------------------------------------

    def renew_session(self) -> SessionRenewal:
        """The renew pass of this mode: one statement, whatever is held."""
        claims = self.claims
        with claims._lock:
            held = len(claims._held)
        try:
            result = self.session.renew()
        except Exception:
            logger.exception("session renewal of engine %s failed", self.engine_id)
            self._count_session("failed")
            return SessionRenewal("failed", self.session.epoch, held)
        if result.status == "renewed":
            self._count_session("renewed")
            return SessionRenewal("renewed", result.epoch, held)
        if result.status == "not-open":
            return SessionRenewal("not-open", None, held)
        self._count_session("lost")
        lost = self._lose_session(result.epoch)
        try:
            self.session_epoch()
        except Exception:
            logger.exception("engine %s could not open its next session", self.engine_id)
        return SessionRenewal("lost", result.epoch, held - lost, lost)

    def renew_pass(self, metrics: ClaimMetrics | None) -> RenewPassResult:
        """The one session renewal; its result carries counts only."""
        renewal = self.renew_session()
        # Per workflow, as the per-workflow pass counts: a lost session fails each claim it
        # held, and a renewal that raised fails each claim it was renewing.
        failed = renewal.lost if renewal.status == "lost" else 0
        if renewal.status == "failed":
            failed = renewal.held
        renewed = renewal.held if renewal.status == "renewed" else 0
        if renewal.status == "renewed":
            # The session's renewal reads no claim row: a release whose answer was lost
            # would be kept, and driven, until a later call happened to read it.
            self.claims.settle_held_doubts()
        if metrics is not None:
            if failed:
                metrics.record_renewal_failure(failed)
            metrics.set_active_claims(len(self.claims.held_workflow_ids()))
        return RenewPassResult([], renewed, failed)

    def renew(self, workflow_id: str) -> ClaimResult:
        """Renewing any claim renews the session, and with it every claim."""
        held = self.claims.held_claim(workflow_id)
        if held is None:
            return ClaimResult("not-held", workflow_id)
        outcome = self.renew_session()
        if outcome.status == "renewed" and self.claims.held_claim(workflow_id) is held:
            expires = self.session.expires_at_ms
            return ClaimResult("renewed", workflow_id, held.epoch, None, expires)
        if outcome.status == "failed":
            raise SessionRenewalError(f"the session of engine {self.engine_id} was not renewed")
        return ClaimResult("lost", workflow_id, held.epoch)

    def renew_all(self, *, chunk_size: int = 0) -> list[tuple[str, ClaimResult | None]]:
        """Per-claim answers from one session renewal (the renew pass itself calls
        ``renew_session``, which builds no per-claim list); ``chunk_size`` is moot."""
        claims = self.claims
        with claims._lock:
            before = dict(claims._held)
        outcome = self.renew_session()
        expires = self.session.expires_at_ms
        results: list[tuple[str, ClaimResult | None]] = []
        for workflow_id, held in before.items():
            if outcome.status == "failed":
                results.append((workflow_id, None))
            elif outcome.status == "renewed" and claims.held_claim(workflow_id) is held:
                results.append(
                    (workflow_id, ClaimResult("renewed", workflow_id, held.epoch, None, expires))
                )
            else:
                results.append((workflow_id, ClaimResult("lost", workflow_id, held.epoch)))
        return results

    # -- losing claims -----------------------------------------------------------------

    def _lose_session(self, epoch: int | None) -> int:
        """Drop every claim cached under the lost session, counting each as deposed, as a
        per-workflow renewal that failed would (the renew pass counts the renewal
        failures)."""
        claims = self.claims
        lost_at = claims.clock()
        with claims._lock:
            lost = [
                workflow_id
                for workflow_id, held in claims._held.items()
                if held.session_epoch is None or epoch is None or held.session_epoch <= epoch
            ]
            for workflow_id in lost:
                claims._forget(workflow_id)
                claims._cooldown_from_ms[workflow_id] = lost_at
        if claims.metrics is not None and lost:
            claims.metrics.record_attempt("deposed", len(lost))
        log_event(
            logger,
            logging.WARNING,
            "session-lost",
            engine=self.engine_id,
            epoch=epoch,
            claims=len(lost),
        )
        if claims._on_claim_lost is not None:
            for workflow_id in lost:
                try:
                    claims._on_claim_lost(workflow_id)
                except Exception:
                    logger.exception("on_claim_lost failed for workflow %s", workflow_id)
        return len(lost)

    def forget_moved_claims(self, share: FleetShare | None = None) -> int:
        """Drop the cached claims another writer moved to a newer epoch (a takeover,
        cancel, forced release or takeover), and count each as deposed and as a renewal
        failure, as a failed per-claim renewal would have. Reads the claim events since the
        last look, overlapping it by one TTL, since an event's time is taken before its
        statement commits: only the moves whose row named this engine before (and those
        naming none), a read as long as the moves of its own claims, not the fleet's
        (behind a mass failure, the dead engines' claims moving are not its news). Beat's
        ``share`` of the moves stands in for the read when it reaches back as far (this
        engine's look then ends where beat's did). Returns how many were dropped."""
        claims = self.claims
        now = claims.clock()
        since = now if self._moves_read_at_ms is None else self._moves_read_at_ms
        given = None if share is None else share.moves_cover(since - claims.timing.ttl_ms)
        if given is not None and share is not None:
            moves: Sequence[tuple[str, int]] = given
            self._moves_read_at_ms = min(now, share.read_at_ms)
        else:
            moves = claims.store.read_claim_moves(
                since_ms=since - claims.timing.ttl_ms, moved_from=claims.engine_id
            )
            self._moves_read_at_ms = now
        lost: list[tuple[str, Holder]] = []
        with claims._lock:
            for workflow_id, epoch_after in moves:
                held = claims._held.get(workflow_id)
                if held is None or workflow_id in claims._releasing:
                    continue
                if held.epoch is not None and held.epoch < epoch_after:
                    claims._forget(workflow_id)
                    claims._cooldown_from_ms[workflow_id] = now
                    lost.append((workflow_id, held))
        for workflow_id, held in lost:
            claims._report_lost(workflow_id, held, now)
        if claims.metrics is not None and lost:
            # The per-workflow mode would have found each at its next renewal, and counted
            # a renewal failure there: keep the counter's meaning the same in both modes.
            claims.metrics.record_renewal_failure(len(lost))
        claims.settle_held_doubts()
        return len(lost)

    def give_up_all(self, release: Callable[[str], object]) -> None:
        """Close the session, which makes every claim of it takeover-eligible at once, and
        forget them all: one statement, whatever is held (``release`` is not needed)."""
        claims = self.claims
        with claims._lock:
            claims._held.clear()
            claims._deadline_ms.clear()
        try:
            closed = self.session.close()
        except Exception:
            logger.exception("engine %s could not close its session", self.engine_id)
            return
        log_event(logger, logging.INFO, "session-closed", engine=self.engine_id, epoch=closed.epoch)

    def _count_session(self, kind: Literal["renewed", "lost", "failed"]) -> None:
        metrics = self.claims.metrics
        if metrics is not None:
            metrics.record_session(kind)
