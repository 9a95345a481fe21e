"""The registry's claims under an engine session, in the engine-lease mode (docs/design.md §12).

Every claim this engine grants names its current session and lives while the session
does, so a renew pass renews the session alone: one statement whatever is held. A lost
session loses every claim cached under it at once; the engine counts each of them, stops
driving them and opens the next session, without a write per claim. Takeovers close an
expired session once, with a compare-and-swap on the expiry read, before granting its
claims: a renewal that landed first keeps them all.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Literal

from .doubts import Verdict
from .held_claims import HeldClaims
from .log_events import log_event
from .records import ClaimResult, ClaimRow, Holder
from .session_lease import close_expired_session
from .sessions import SessionRow, may_close_for_takeover

logger = logging.getLogger("weftboard.claims")

# Opening a session is retried once: it fails only if another writer moved this engine's
# row between the read and the write, which nothing but a second process with this
# engine's id does.
OPEN_TRIES = 2


class SessionUnavailableError(RuntimeError):
    """This engine could not open a session, so it cannot grant claims now."""


@dataclass(frozen=True, slots=True)
class SessionRenewal:
    """One renew pass in the engine-lease mode: what the session renewal did, how many
    claims are held after it, and how many a lost session took with it."""

    status: Literal["renewed", "lost", "failed", "not-open"]
    epoch: int | None
    held: int
    lost: int = 0


class SessionHeldClaims(HeldClaims):
    """Session renewal, session-aware deadlines and the closing of expired sessions."""

    def session_epoch(self) -> int | None:
        """The epoch grants name now: None outside the engine-lease mode; the open session's,
        opening one first if none is open."""
        if self.session is None:
            return None
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

    def renew_session(self) -> SessionRenewal:
        """The renew pass of the engine-lease mode: one statement, whatever is held."""
        assert self.session is not None
        with self._lock:
            held = len(self._held)
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

    def _lose_session(self, epoch: int | None) -> int:
        """Drop every claim cached under the lost session, counting each as deposed, as a
        per-workflow renewal that failed would (the renew pass counts the renewal
        failures)."""
        lost_at = self.clock()
        with self._lock:
            lost = [
                workflow_id
                for workflow_id, held in self._held.items()
                if held.session_epoch is None or epoch is None or held.session_epoch <= epoch
            ]
            for workflow_id in lost:
                self._forget(workflow_id)
                self._cooldown_from_ms[workflow_id] = lost_at
        if self.metrics is not None and lost:
            self.metrics.record_attempt("deposed", len(lost))
        log_event(
            logger,
            logging.WARNING,
            "session-lost",
            engine=self.engine_id,
            epoch=epoch,
            claims=len(lost),
        )
        if self._on_claim_lost is not None:
            for workflow_id in lost:
                try:
                    self._on_claim_lost(workflow_id)
                except Exception:
                    logger.exception("on_claim_lost failed for workflow %s", workflow_id)
        return len(lost)

    def within_deadline(self, workflow_id: str) -> bool:
        """Under a session: while the claim names the open session and that session's last
        renewal cannot yet have lapsed."""
        if self.session is None:
            return super().within_deadline(workflow_id)
        with self._lock:
            held = self._held.get(workflow_id)
        if held is None or held.session_epoch != self.session.epoch:
            return False
        return self.session.within_deadline()

    def _granted(self, workflow_id: str, holder: Holder, *, sent_monotonic_ms: int) -> ClaimResult:
        result = super()._granted(workflow_id, holder, sent_monotonic_ms=sent_monotonic_ms)
        if self._drop_if_under_old_session(workflow_id, holder):
            # Granted under a session lost meanwhile: the claim is takeover-eligible at
            # once, so it is not this engine's to drive; a later takeover can make it so.
            return ClaimResult("lost-race", workflow_id)
        return result

    def _settle(self, workflow_id: str, row: ClaimRow | None) -> Verdict | None:
        """As ``HeldClaims._settle``; but a grant in doubt that landed under a session lost
        since is not this engine's: the row names a closed session, so the caller takes
        it over afresh, under the open one."""
        verdict = super()._settle(workflow_id, row)
        held = self.held_claim(workflow_id)
        if verdict != "written" or held is None:
            return verdict
        return "not-written" if self._drop_if_under_old_session(workflow_id, held) else verdict

    def _drop_if_under_old_session(self, workflow_id: str, holder: Holder) -> bool:
        """Forget ``holder`` if it names a session that is no longer the open one. Checked
        after caching: a lost session's sweep (``_lose_session``) runs after the session
        forgot its epoch, so a holder cached before this check is swept, and one cached
        after it is dropped here."""
        if self.session is None or holder.session_epoch == self.session.epoch:
            return False
        with self._lock:
            if self._held.get(workflow_id) is holder:
                self._forget(workflow_id)
        self._doubts.clear(workflow_id)
        return True

    def _close_expired_sessions(
        self, rows: Mapping[str, ClaimRow], now_ms: int
    ) -> dict[str, ClaimRow]:
        """Close, once each, the expired sessions the rows' holders name, and return the
        rows with each session as it now stands: closed by this engine, or as a fresh read
        shows it when the close did not apply (a renewal, or another engine, came first)."""
        expired: dict[tuple[str, int], SessionRow] = {}
        for row in rows.values():
            session = row.session
            if session is not None and may_close_for_takeover(session, now_ms, self.timing):
                expired[(session.engine_id, session.epoch)] = session
        if not expired:
            return dict(rows)
        now_known: dict[tuple[str, int], SessionRow | None] = {}
        for key, session in expired.items():
            try:
                closed = close_expired_session(
                    self.store, session, now_ms=now_ms, timing=self.timing, by=self.engine_id
                )
            except Exception:
                # It may have committed: the read below shows what the row holds now.
                logger.exception("could not close the expired session of %s", session.engine_id)
                closed = False
            if closed:
                self._count_session("closed-expired")
                log_event(
                    logger,
                    logging.WARNING,
                    "session-expired",
                    engine=session.engine_id,
                    epoch=session.epoch,
                    closed_by=self.engine_id,
                )
                now_known[key] = replace(session, closed_at_ms=now_ms, closed_by=self.engine_id)
            else:
                now_known[key] = self.store.read_session(session.engine_id)
        return {
            workflow_id: (
                row
                if row.session is None
                or (key := (row.session.engine_id, row.session.epoch)) not in now_known
                else replace(row, session=now_known[key])
            )
            for workflow_id, row in rows.items()
        }

    def forget_moved_claims(self) -> int:
        """Under a session: drop the cached claims another writer moved to a newer epoch
        (a takeover, cancel, forced release or takeover), and count each as deposed and as
        a renewal failure, as a failed per-claim renewal would have. Reads the claim events
        since the last look, overlapping it by one TTL, since an event's time is taken
        before its statement commits: a read as long as the fleet's moves, not the claims
        held. Returns how many were dropped."""
        if self.session is None:
            return 0
        now = self.clock()
        since = now if self._moves_read_at_ms is None else self._moves_read_at_ms
        moves = self.store.read_claim_moves(since_ms=since - self.timing.ttl_ms)
        self._moves_read_at_ms = now
        lost: list[tuple[str, Holder]] = []
        with self._lock:
            for workflow_id, epoch_after in moves:
                held = self._held.get(workflow_id)
                if held is None or workflow_id in self._releasing:
                    continue
                if held.epoch is not None and held.epoch < epoch_after:
                    self._forget(workflow_id)
                    self._cooldown_from_ms[workflow_id] = now
                    lost.append((workflow_id, held))
        for workflow_id, held in lost:
            self._report_lost(workflow_id, held, now)
        if self.metrics is not None and lost:
            # The per-workflow mode would have found each at its next renewal, and counted
            # a renewal failure there: keep the counter's meaning the same in both modes.
            self.metrics.record_renewal_failure(len(lost))
        return len(lost)

    def _close_own_session(self) -> None:
        """At shutdown: close the session, which makes every claim of it takeover-eligible
        at once, and forget them all."""
        assert self.session is not None
        with self._lock:
            self._held.clear()
            self._deadline_ms.clear()
        try:
            closed = self.session.close()
        except Exception:
            logger.exception("engine %s could not close its session", self.engine_id)
            return
        log_event(logger, logging.INFO, "session-closed", engine=self.engine_id, epoch=closed.epoch)

    def _count_session(self, kind: Literal["renewed", "lost", "failed", "closed-expired"]) -> None:
        if self.metrics is not None:
            self.metrics.record_session(kind)
