"""Renewing the claims one engine holds (docs/design.md §3).

One renewal per id is in flight at a time, and concurrent callers share it
(``Flight``); the passes renew every held claim set-based (``renew_all``), a chunk
per statement. A renewal that fails is a claim lost, but only once a read has
settled what any earlier statement in doubt did: a renewal wrongly taken as lost
would depose an owner.
"""

from __future__ import annotations

import logging
from dataclasses import replace

from .doubts import Doubt
from .flight import Flight
from .records import ClaimResult, Holder
from .session_claims import SessionHeldClaims

logger = logging.getLogger("weftboard.claims")


class SessionRenewalError(RuntimeError):
    """The session renewal raised (it is in doubt until the next one reads the row)."""


class ClaimRenewals(SessionHeldClaims):
    """The renewal calls of ``ClaimRegistry``: ``renew`` and the set-based ``renew_all``."""

    def renew(self, workflow_id: str) -> ClaimResult:
        """Extend my claim. One renewal per id is in flight; concurrent callers share it.
        Under a session, renewing any claim renews the session, and with it every claim."""
        if self.session is not None:
            return self._renew_through_session(workflow_id)
        with self._lock:
            if workflow_id in self._releasing:
                return ClaimResult("not-held", workflow_id)
            joined = self._renewals.get(workflow_id)
            held = self._held.get(workflow_id)
            if joined is None:
                if held is None:
                    return ClaimResult("not-held", workflow_id)
                flight = self._renewals[workflow_id] = Flight()
        if joined is not None:
            return joined.wait(workflow_id)
        assert held is not None
        results: dict[str, ClaimResult] = {}
        error: BaseException | None = None
        try:
            results[workflow_id] = self._renew_once(workflow_id, held)
            return results[workflow_id]
        except BaseException as exc:
            error = exc
            raise
        finally:
            with self._lock:
                if self._renewals.get(workflow_id) is flight:
                    del self._renewals[workflow_id]
            flight.finish(results, error)

    def renew_all(self, *, chunk_size: int = 5_000) -> list[tuple[str, ClaimResult | None]]:
        """Renew every held claim with one set-based statement per chunk.

        Results follow grant order; None marks a claim whose chunk failed with a
        store error (logged), which leaves that claim cached, its outcome in doubt,
        for the next pass; that pass first reads what it did.
        The per-id rules of ``renew`` hold: an id being released is skipped, an
        id with a renewal in flight shares that renewal's result.
        """
        if self.session is not None:
            return self._renew_all_through_session()
        unsettled = self._settle_held_doubts()
        chunks: list[tuple[Flight, list[tuple[str, Holder]]]] = []
        joined: dict[str, Flight] = {}
        with self._lock:
            order = [wf for wf in self._held if wf not in self._releasing]
            skipped = [wf for wf in order if wf in unsettled]
            mine: list[tuple[str, Holder]] = []
            for workflow_id in order:
                if workflow_id in unsettled:
                    continue
                in_flight = self._renewals.get(workflow_id)
                if in_flight is not None:
                    joined[workflow_id] = in_flight
                else:
                    mine.append((workflow_id, self._held[workflow_id]))
            for start in range(0, len(mine), chunk_size):
                # One flight per chunk: a concurrent renew() of any id in it waits on it.
                flight, chunk = Flight(), mine[start : start + chunk_size]
                for workflow_id, _ in chunk:
                    self._renewals[workflow_id] = flight
                chunks.append((flight, chunk))
        results: dict[str, ClaimResult | None] = dict.fromkeys(skipped)
        for flight, chunk in chunks:
            results.update(self._renew_chunk(flight, chunk))
        for workflow_id, in_flight in joined.items():
            try:
                results[workflow_id] = in_flight.wait(workflow_id)
            except Exception:
                results[workflow_id] = None
        return [(workflow_id, results[workflow_id]) for workflow_id in order]

    def _renew_through_session(self, workflow_id: str) -> ClaimResult:
        held = self.held_claim(workflow_id)
        if held is None:
            return ClaimResult("not-held", workflow_id)
        outcome = self.renew_session()
        if outcome.status == "renewed" and self.held_claim(workflow_id) is held:
            assert self.session is not None
            expires = self.session.expires_at_ms
            return ClaimResult("renewed", workflow_id, held.epoch, None, expires)
        if outcome.status == "failed":
            raise SessionRenewalError(f"the session of engine {self.engine_id} was not renewed")
        return ClaimResult("lost", workflow_id, held.epoch)

    def _renew_all_through_session(self) -> list[tuple[str, ClaimResult | None]]:
        """``renew_all``'s per-claim answers from one session renewal (the renew pass itself
        calls ``renew_session``, which builds no per-claim list)."""
        with self._lock:
            before = dict(self._held)
        outcome = self.renew_session()
        assert self.session is not None
        expires = self.session.expires_at_ms
        results: list[tuple[str, ClaimResult | None]] = []
        for workflow_id, held in before.items():
            if outcome.status == "failed":
                results.append((workflow_id, None))
            elif outcome.status == "renewed" and self.held_claim(workflow_id) is held:
                results.append(
                    (workflow_id, ClaimResult("renewed", workflow_id, held.epoch, None, expires))
                )
            else:
                results.append((workflow_id, ClaimResult("lost", workflow_id, held.epoch)))
        return results

    def _settle_held_doubts(self) -> set[str]:
        """Read, in one statement, the held ids whose last statement raised, and take
        what the rows show. Returns the ids left unsettled (the read failed too)."""
        with self._lock:
            doubted = [
                wf
                for wf in self._doubts.ids()
                if wf in self._held and wf not in self._releasing and wf not in self._renewals
            ]
        if not doubted:
            return set()
        try:
            rows = self.store.read_claims(doubted)
        except Exception:
            logger.exception("could not read %d claims whose renewal is in doubt", len(doubted))
            return set(doubted)
        for workflow_id in doubted:
            self._settle(workflow_id, rows.get(workflow_id))
        return set()

    def _renew_chunk(
        self, flight: Flight, chunk: list[tuple[str, Holder]]
    ) -> dict[str, ClaimResult | None]:
        sent_at, sent = self.clock(), self._monotonic()
        expires_at = sent_at + self.timing.ttl_ms
        renewed, error, settled = self._renew_statement(chunk, expires_at, sent)
        lost_at = self.clock()
        results: dict[str, ClaimResult] = {}
        lost: list[tuple[str, Holder]] = []
        with self._lock:
            for workflow_id, held in chunk:
                if self._renewals.get(workflow_id) is flight:
                    del self._renewals[workflow_id]
                if error is not None:
                    continue
                held = settled.get(workflow_id, held)
                still_ours = self._held.get(workflow_id) is held
                if workflow_id in renewed:
                    if still_ours:
                        # Built directly: dataclasses.replace costs too much per claim here.
                        self._held[workflow_id] = Holder(
                            held.engine_id, held.epoch, expires_at, held.claimed_at_ms
                        )
                        self._deadline_ms[workflow_id] = sent + self.timing.ttl_ms
                    results[workflow_id] = ClaimResult(
                        "renewed", workflow_id, held.epoch, None, expires_at
                    )
                else:
                    if still_ours:
                        self._forget(workflow_id)
                        self._cooldown_from_ms[workflow_id] = lost_at
                        lost.append((workflow_id, held))
                    results[workflow_id] = ClaimResult("lost", workflow_id, held.epoch)
        if error is None:
            for workflow_id in renewed:
                self._doubts.clear(workflow_id)
        flight.finish(results, error)
        for workflow_id, held in lost:
            self._report_lost(workflow_id, held, lost_at)
        if error is not None:
            return dict.fromkeys((workflow_id for workflow_id, _ in chunk), None)
        return dict(results)

    def _renew_statement(
        self, chunk: list[tuple[str, Holder]], expires_at: int, sent: int
    ) -> tuple[set[str], Exception | None, dict[str, Holder]]:
        """One set-based renewal; then, for the ids it missed whose earlier statement is in
        doubt, a read, and a second renewal of those the read shows were mine after all.
        Returns the renewed ids, the error if the first statement raised, and the held
        values the read replaced."""
        try:
            renewed = self.store.renew_many(chunk, expires_at_ms=expires_at)
        except Exception as exc:
            logger.exception("renewal of %d claims failed", len(chunk))
            for workflow_id, held in chunk:
                intended = Holder(held.engine_id, held.epoch, expires_at, held.claimed_at_ms)
                self._doubts.add(workflow_id, Doubt(held.epoch or 0, intended, sent))
            return set(), exc, {}
        missed = [wf for wf, _ in chunk if wf not in renewed and self._doubts.has(wf)]
        if not missed:
            return renewed, None, {}
        settled: dict[str, Holder] = {}
        try:
            rows = self.store.read_claims(missed)
            for workflow_id in missed:
                if self._settle(workflow_id, rows.get(workflow_id)) == "written":
                    current = self.held_claim(workflow_id)
                    if current is not None:
                        settled[workflow_id] = current
            if settled:
                renewed |= self.store.renew_many(list(settled.items()), expires_at_ms=expires_at)
        except Exception:
            logger.exception("could not settle %d renewals in doubt", len(missed))
        return renewed, None, settled

    def _renew_once(self, workflow_id: str, held: Holder, *, settled: bool = False) -> ClaimResult:
        if self._doubts.has(workflow_id):
            # An earlier statement on this claim raised: learn what it did first.
            self._settle_by_reading(workflow_id)
            with self._lock:
                current = self._held.get(workflow_id)
            if current is None:
                return ClaimResult("not-held", workflow_id)
            held = current
        sent_at, sent = self.clock(), self._monotonic()
        expires_at = sent_at + self.timing.ttl_ms
        intended = replace(held, expires_at_ms=expires_at)
        with self._in_doubt_on_error(workflow_id, held.epoch or 0, intended, sent):
            renewed = self.store.cas_renew(workflow_id, held=held, expires_at_ms=expires_at)
        lost_at = self.clock()
        with self._lock:
            still_ours = self._held.get(workflow_id) is held
            if renewed:
                if still_ours:
                    self._held[workflow_id] = intended
                    self._deadline_ms[workflow_id] = sent + self.timing.ttl_ms
                self._doubts.clear(workflow_id)
                return ClaimResult(
                    "renewed", workflow_id, epoch=held.epoch, expires_at_ms=expires_at
                )
            if still_ours:
                # A newer grant cached meanwhile must survive this stale failure.
                self._forget(workflow_id)
                self._cooldown_from_ms[workflow_id] = lost_at
        if still_ours and not settled and self._doubts.has(workflow_id):
            # An earlier statement still in doubt may have landed after the read above.
            self._settle_by_reading(workflow_id)
            current = self.held_claim(workflow_id)
            if current is not None and current is not held:
                return self._renew_once(workflow_id, current, settled=True)
        if still_ours:
            self._report_lost(workflow_id, held, lost_at)
        return ClaimResult("lost", workflow_id, epoch=held.epoch)
