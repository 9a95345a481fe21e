"""Renewing the claims of the workflow-lease mode one by one (docs/design.md §3).

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
from .held_claims import HeldClaims
from .records import ClaimResult, Holder

logger = logging.getLogger("weftboard.claims")

# Claims renewed per set-based statement.
RENEW_CHUNK = 5_000


class ClaimRenewals:
    """The per-claim renewals of one registry's cache: ``renew`` and the set-based
    ``renew_all``, which ``PerClaimLeases`` answers with."""

    def __init__(self, claims: HeldClaims) -> None:
        self.claims = claims

    def renew(self, workflow_id: str) -> ClaimResult:
        """Extend my claim. One renewal per id is in flight; concurrent callers share it."""
        claims = self.claims
        with claims._lock:
            if workflow_id in claims._releasing:
                return ClaimResult("not-held", workflow_id)
            joined = claims._renewals.get(workflow_id)
            held = claims._held.get(workflow_id)
            if joined is None:
                if held is None:
                    return ClaimResult("not-held", workflow_id)
                flight = claims._renewals[workflow_id] = Flight()
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
            with claims._lock:
                if claims._renewals.get(workflow_id) is flight:
                    del claims._renewals[workflow_id]
            flight.finish(results, error)

    def renew_all(self, *, chunk_size: int = RENEW_CHUNK) -> list[tuple[str, ClaimResult | None]]:
        """Renew every held claim with one set-based statement per chunk.

        Results follow grant order; None marks a claim whose chunk failed with a
        store error (logged), which leaves that claim cached, its outcome in doubt,
        for the next pass; that pass first reads what it did.
        The per-id rules of ``renew`` hold: an id being released is skipped, an
        id with a renewal in flight shares that renewal's result.
        """
        claims = self.claims
        unsettled = self.claims.settle_held_doubts()
        chunks: list[tuple[Flight, list[tuple[str, Holder]]]] = []
        joined: dict[str, Flight] = {}
        with claims._lock:
            order = [wf for wf in claims._held if wf not in claims._releasing]
            skipped = [wf for wf in order if wf in unsettled]
            mine: list[tuple[str, Holder]] = []
            for workflow_id in order:
                if workflow_id in unsettled:
                    continue
                in_flight = claims._renewals.get(workflow_id)
                if in_flight is not None:
                    joined[workflow_id] = in_flight
                else:
                    mine.append((workflow_id, claims._held[workflow_id]))
            for start in range(0, len(mine), chunk_size):
                # One flight per chunk: a concurrent renew() of any id in it waits on it.
                flight, chunk = Flight(), mine[start : start + chunk_size]
                for workflow_id, _ in chunk:
                    claims._renewals[workflow_id] = flight
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

    def _renew_chunk(
        self, flight: Flight, chunk: list[tuple[str, Holder]]
    ) -> dict[str, ClaimResult | None]:
        claims = self.claims
        sent_at, sent = claims.clock(), claims._monotonic()
        expires_at = sent_at + claims.timing.ttl_ms
        renewed, error, settled = self._renew_statement(chunk, expires_at, sent)
        lost_at = claims.clock()
        results: dict[str, ClaimResult] = {}
        lost: list[tuple[str, Holder]] = []
        with claims._lock:
            for workflow_id, held in chunk:
                if claims._renewals.get(workflow_id) is flight:
                    del claims._renewals[workflow_id]
                if error is not None:
                    continue
                held = settled.get(workflow_id, held)
                still_ours = claims._held.get(workflow_id) is held
                if workflow_id in renewed:
                    if still_ours:
                        # Built directly: dataclasses.replace costs too much per claim here.
                        claims._held[workflow_id] = Holder(
                            held.engine_id, held.epoch, expires_at, held.claimed_at_ms
                        )
                        claims._deadline_ms[workflow_id] = sent + claims.timing.ttl_ms
                    results[workflow_id] = ClaimResult(
                        "renewed", workflow_id, held.epoch, None, expires_at
                    )
                else:
                    if still_ours:
                        claims._forget(workflow_id)
                        claims._cooldown_from_ms[workflow_id] = lost_at
                        lost.append((workflow_id, held))
                    results[workflow_id] = ClaimResult("lost", workflow_id, held.epoch)
        if error is None:
            for workflow_id in renewed:
                claims._doubts.clear(workflow_id)
        flight.finish(results, error)
        for workflow_id, held in lost:
            claims._report_lost(workflow_id, held, lost_at)
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
        claims = self.claims
        try:
            renewed = claims.store.renew_many(chunk, expires_at_ms=expires_at)
        except Exception as exc:
            logger.exception("renewal of %d claims failed", len(chunk))
            for workflow_id, held in chunk:
                intended = Holder(held.engine_id, held.epoch, expires_at, held.claimed_at_ms)
                claims._doubts.add(workflow_id, Doubt(held.epoch or 0, intended, sent))
            return set(), exc, {}
        missed = [wf for wf, _ in chunk if wf not in renewed and claims._doubts.has(wf)]
        if not missed:
            return renewed, None, {}
        settled: dict[str, Holder] = {}
        try:
            rows = claims.store.read_claims(missed)
            for workflow_id in missed:
                if claims._settle(workflow_id, rows.get(workflow_id)) == "written":
                    current = claims.held_claim(workflow_id)
                    if current is not None:
                        settled[workflow_id] = current
            if settled:
                renewed |= claims.store.renew_many(list(settled.items()), expires_at_ms=expires_at)
        except Exception:
            logger.exception("could not settle %d renewals in doubt", len(missed))
        return renewed, None, settled

    def _renew_once(self, workflow_id: str, held: Holder, *, settled: bool = False) -> ClaimResult:
        claims = self.claims
        if claims._doubts.has(workflow_id):
            # An earlier statement on this claim raised: learn what it did first.
            claims._settle_by_reading(workflow_id)
            with claims._lock:
                current = claims._held.get(workflow_id)
            if current is None:
                return ClaimResult("not-held", workflow_id)
            held = current
        sent_at, sent = claims.clock(), claims._monotonic()
        expires_at = sent_at + claims.timing.ttl_ms
        intended = replace(held, expires_at_ms=expires_at)
        with claims._in_doubt_on_error(workflow_id, held.epoch or 0, intended, sent):
            renewed = claims.store.cas_renew(workflow_id, held=held, expires_at_ms=expires_at)
        lost_at = claims.clock()
        with claims._lock:
            still_ours = claims._held.get(workflow_id) is held
            if renewed:
                if still_ours:
                    claims._held[workflow_id] = intended
                    claims._deadline_ms[workflow_id] = sent + claims.timing.ttl_ms
                claims._doubts.clear(workflow_id)
                return ClaimResult(
                    "renewed", workflow_id, epoch=held.epoch, expires_at_ms=expires_at
                )
            if still_ours:
                # A newer grant cached meanwhile must survive this stale failure.
                claims._forget(workflow_id)
                claims._cooldown_from_ms[workflow_id] = lost_at
        if still_ours and not settled and claims._doubts.has(workflow_id):
            # An earlier statement still in doubt may have landed after the read above.
            claims._settle_by_reading(workflow_id)
            current = claims.held_claim(workflow_id)
            if current is not None and current is not held:
                return self._renew_once(workflow_id, current, settled=True)
        if still_ours:
            claims._report_lost(workflow_id, held, lost_at)
        return ClaimResult("lost", workflow_id, epoch=held.epoch)
