"""One engine's view of the claims it holds, and the compare-and-swap calls on them.

The registry caches, per held workflow, the exact holder values it last wrote;
every CAS compares all of them, so any foreign write (takeover, rotation,
operator action) makes this engine's next renew or release fail cleanly.
Statements run on the calling thread: Django connections are per thread.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from typing import TypeVar

from .clock import Clock
from .doubts import Doubt, Doubts, Verdict
from .errors import EngineDeposedError
from .metrics import ClaimMetrics
from .records import (
    ClaimEventRecord,
    ClaimResult,
    ClaimRow,
    ClaimStatus,
    EventKind,
    GrantPlan,
    Holder,
)
from .store import ClaimStore
from .timing import ClaimTiming, is_claim_expired

logger = logging.getLogger("weftboard.claims")
T = TypeVar("T")


class _Flight:
    """One in-flight renewal statement (of one id, or of a whole chunk of ids) that
    concurrent callers for any of those ids wait on and share."""

    def __init__(self) -> None:
        self._done = threading.Event()
        self._results: dict[str, ClaimResult] = {}
        self._error: BaseException | None = None

    def finish(self, results: dict[str, ClaimResult], error: BaseException | None) -> None:
        self._results, self._error = results, error
        self._done.set()

    def wait(self, workflow_id: str) -> ClaimResult:
        self._done.wait()
        if self._error is not None:
            raise self._error
        return self._results[workflow_id]

    def wait_quietly(self) -> None:
        self._done.wait()


class ClaimRegistry:
    def __init__(
        self,
        store: ClaimStore,
        *,
        engine_id: str,
        clock: Clock,
        timing: ClaimTiming,
        metrics: ClaimMetrics | None = None,
        on_claim_lost: Callable[[str], object] | None = None,
        monotonic: Clock | None = None,
    ) -> None:
        if not engine_id:
            raise ValueError("engine_id must be a non-empty string")
        self.store = store
        self.engine_id = engine_id
        self.clock = clock
        # Deadlines are this process's own: measured on a clock no calibration moves.
        self._monotonic = monotonic if monotonic is not None else clock
        self.timing = timing
        self.metrics = metrics
        self._on_claim_lost = on_claim_lost
        self._lock = threading.Lock()
        self._held: dict[str, Holder] = {}  # insertion order is grant order
        self._cooldown_from_ms: dict[str, int] = {}
        self._renewals: dict[str, _Flight] = {}
        self._releasing: set[str] = set()
        # Per held claim: the monotonic reading before the statement that last granted
        # or renewed it, plus the TTL. Past it the claim may have lapsed unseen.
        self._deadline_ms: dict[str, int] = {}
        self._doubts = Doubts()

    # -- local reads ---------------------------------------------------------

    def current_epoch(self, workflow_id: str) -> int | None:
        with self._lock:
            held = self._held.get(workflow_id)
        return None if held is None else held.epoch

    def held_workflow_ids(self) -> list[str]:
        with self._lock:
            return list(self._held)

    def held_claim(self, workflow_id: str) -> Holder | None:
        with self._lock:
            return self._held.get(workflow_id)

    def doubted_workflow_ids(self) -> list[str]:
        """Ids with a claim statement whose outcome is not known yet (it raised). A doubt
        older than a few TTLs is dropped: whatever it wrote has lapsed by then."""
        return self._doubts.ids(sent_after_ms=self._monotonic() - 3 * self.timing.ttl_ms)

    def within_deadline(self, workflow_id: str) -> bool:
        """True while my last successful grant or renewal cannot yet have lapsed.

        Measured from before that statement was sent, so a stalled engine stops
        starting side effects before anyone could have taken the claim over.
        """
        with self._lock:
            deadline = self._deadline_ms.get(workflow_id)
        return deadline is not None and self._monotonic() < deadline

    def in_cooldown(self, workflow_id: str, now_ms: int) -> bool:
        with self._lock:
            lost_at = self._cooldown_from_ms.get(workflow_id)
        return lost_at is not None and lost_at <= now_ms < lost_at + self.timing.renew_interval_ms

    # -- grants ----------------------------------------------------------------

    def acquire(self, workflow_id: str) -> ClaimResult:
        """Claim a workflow nobody holds. Never judges expiry: any holder present wins."""
        now, sent = self.clock(), self._monotonic()
        row = self.store.read_claim(workflow_id)
        if self._settle(workflow_id, row) == "written":
            return self._granted_earlier(workflow_id)
        if row is None:
            holder = self._new_holder(1, now)
            event = self._event(workflow_id, "acquired", None, 1, now)
            with self._in_doubt_on_error(workflow_id, 1, holder, sent):
                inserted = self.store.cas_insert(workflow_id, holder=holder, event=event)
            if inserted:
                return self._granted(workflow_id, holder, sent_monotonic_ms=sent)
            return self._lost_race(workflow_id)
        if row.holder is not None:
            return ClaimResult("lost-race", workflow_id, held_by=row.valid_holder_engine())
        holder = self._new_holder(row.epoch + 1, now)
        event = self._event(workflow_id, "acquired", row.epoch, row.epoch + 1, now)
        with self._in_doubt_on_error(workflow_id, row.epoch + 1, holder, sent):
            granted = self.store.cas_grant(
                workflow_id,
                expected_epoch=row.epoch,
                expected_holder=None,
                holder=holder,
                event=event,
            )
        if not granted:
            return self._lost_race(workflow_id)
        return self._granted(workflow_id, holder, sent_monotonic_ms=sent)

    def takeover(self, workflow_id: str) -> ClaimResult:
        """Steal an expired or invalid claim, minting the next epoch from the epoch column."""
        now, sent = self.clock(), self._monotonic()
        if self.in_cooldown(workflow_id, now):
            return ClaimResult("backoff-skipped", workflow_id)
        row = self.store.read_claim(workflow_id)
        if self._settle(workflow_id, row) == "written":
            return self._granted_earlier(workflow_id)
        if row is None or row.holder is None:
            return ClaimResult("no-claim", workflow_id, epoch=None if row is None else row.epoch)
        observed = row.holder
        if row.holder_is_valid():
            assert observed.expires_at_ms is not None
            if not is_claim_expired(observed.expires_at_ms, now, self.timing):
                return ClaimResult(
                    "not-expired",
                    workflow_id,
                    epoch=row.epoch,
                    held_by=observed.engine_id,
                    expires_at_ms=observed.expires_at_ms,
                )
        holder = self._new_holder(row.epoch + 1, now)
        event = self._event(workflow_id, "takeover", row.epoch, row.epoch + 1, now)
        with self._in_doubt_on_error(workflow_id, row.epoch + 1, holder, sent):
            granted = self.store.cas_grant(
                workflow_id,
                expected_epoch=row.epoch,
                expected_holder=observed,
                holder=holder,
                event=event,
            )
        if not granted:
            return self._lost_race(workflow_id)
        return self._granted(workflow_id, holder, sent_monotonic_ms=sent)

    def takeover_many(self, workflow_ids: list[str]) -> dict[str, ClaimResult]:
        """``takeover`` for many ids: one read and one set-based grant for them all.

        Same judgement, per id, as ``takeover``; a ``lost-race`` here carries no
        ``held_by`` (no re-read), and a caller wanting one retries with ``takeover``.
        """
        now, sent = self.clock(), self._monotonic()
        results: dict[str, ClaimResult] = {}
        waiting = [wf for wf in workflow_ids if not self.in_cooldown(wf, now)]
        for workflow_id in set(workflow_ids) - set(waiting):
            results[workflow_id] = ClaimResult("backoff-skipped", workflow_id)
        rows = self.store.read_claims(waiting)
        plans: list[GrantPlan] = []
        for workflow_id in waiting:
            row = rows.get(workflow_id)
            if self._settle(workflow_id, row) == "written":
                results[workflow_id] = self._granted_earlier(workflow_id)
                continue
            if row is None or row.holder is None:
                epoch = None if row is None else row.epoch
                results[workflow_id] = ClaimResult("no-claim", workflow_id, epoch=epoch)
                continue
            observed = row.holder
            if row.holder_is_valid():
                assert observed.expires_at_ms is not None
                if not is_claim_expired(observed.expires_at_ms, now, self.timing):
                    results[workflow_id] = ClaimResult(
                        "not-expired",
                        workflow_id,
                        epoch=row.epoch,
                        held_by=observed.engine_id,
                        expires_at_ms=observed.expires_at_ms,
                    )
                    continue
            epoch = row.epoch + 1
            plans.append(
                GrantPlan(
                    workflow_id,
                    row.epoch,
                    observed,
                    self._new_holder(epoch, now),
                    self._event(workflow_id, "takeover", row.epoch, epoch, now),
                )
            )
        granted = self._grant_planned(self.store.grant_many, plans, sent)
        for plan in plans:
            if plan.workflow_id in granted:
                results[plan.workflow_id] = self._granted(
                    plan.workflow_id, plan.holder, sent_monotonic_ms=sent
                )
            else:
                results[plan.workflow_id] = ClaimResult("lost-race", plan.workflow_id)
        return results

    def acquire_many(self, workflow_ids: list[str]) -> dict[str, ClaimResult]:
        """``acquire`` for many ids: one read, then one set-based grant for the rows with
        no holder and one insert for the ids with no row. Never judges expiry."""
        now, sent = self.clock(), self._monotonic()
        rows = self.store.read_claims(workflow_ids)
        results: dict[str, ClaimResult] = {}
        grants: list[GrantPlan] = []
        inserts: list[GrantPlan] = []
        for workflow_id in workflow_ids:
            row = rows.get(workflow_id)
            if self._settle(workflow_id, row) == "written":
                results[workflow_id] = self._granted_earlier(workflow_id)
                continue
            if row is not None and row.holder is not None:
                held_by = row.valid_holder_engine()
                results[workflow_id] = ClaimResult("lost-race", workflow_id, held_by=held_by)
                continue
            before = None if row is None else row.epoch
            epoch = 1 if row is None else row.epoch + 1
            event = self._event(workflow_id, "acquired", before, epoch, now)
            planned = GrantPlan(workflow_id, before or 0, None, self._new_holder(epoch, now), event)
            (inserts if row is None else grants).append(planned)
        granted = self._grant_planned(self.store.grant_many, grants, sent)
        granted |= self._grant_planned(self.store.insert_many, inserts, sent)
        for planned in (*grants, *inserts):
            workflow_id = planned.workflow_id
            if workflow_id in granted:
                results[workflow_id] = self._granted(
                    workflow_id, planned.holder, sent_monotonic_ms=sent
                )
            else:
                results[workflow_id] = ClaimResult("lost-race", workflow_id)
        return results

    def adopt(self, workflow_id: str, epoch: int) -> ClaimResult:
        """Cache a claim that an operator granted to this engine at ``epoch``."""
        row = self.store.read_claim(workflow_id)
        holder = None if row is None else row.holder
        if (
            row is None
            or holder is None
            or not row.holder_is_valid()
            or holder.engine_id != self.engine_id
            or row.epoch != epoch
        ):
            held_by = None if row is None else row.valid_holder_engine()
            return ClaimResult("not-held", workflow_id, held_by=held_by)
        now = self.clock()
        with self._lock:
            cached = self._held.get(workflow_id)
        if cached is not None and cached.epoch == epoch:
            # Already mine at this epoch (a repeated adopt message): the cache may be
            # newer than the row just read, since a renewal can land in between.
            return ClaimResult(
                "adopted", workflow_id, epoch=epoch, expires_at_ms=cached.expires_at_ms
            )
        self.store.record_event(self._event(workflow_id, "adopted", epoch, epoch, now))
        # The grant was written earlier by someone else: trust only what is left of it.
        assert holder.expires_at_ms is not None
        remaining = max(0, holder.expires_at_ms - now)
        sent = self._monotonic() - self.timing.ttl_ms + remaining
        result = self._granted(workflow_id, holder, sent_monotonic_ms=sent)
        return replace(result, status="adopted")

    # -- renewal ---------------------------------------------------------------

    def renew(self, workflow_id: str) -> ClaimResult:
        """Extend my claim. One renewal per id is in flight; concurrent callers share it."""
        with self._lock:
            if workflow_id in self._releasing:
                return ClaimResult("not-held", workflow_id)
            joined = self._renewals.get(workflow_id)
            held = self._held.get(workflow_id)
            if joined is None:
                if held is None:
                    return ClaimResult("not-held", workflow_id)
                flight = self._renewals[workflow_id] = _Flight()
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
        unsettled = self._settle_held_doubts()
        chunks: list[tuple[_Flight, list[tuple[str, Holder]]]] = []
        joined: dict[str, _Flight] = {}
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
                flight, chunk = _Flight(), mine[start : start + chunk_size]
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
        self, flight: _Flight, chunk: list[tuple[str, Holder]]
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

    def _report_lost(self, workflow_id: str, held: Holder, at_ms: int) -> None:
        if self.metrics is not None:
            self.metrics.record_attempt("deposed")
        logger.warning(
            "engine %s lost its claim on workflow %s at epoch %s",
            self.engine_id,
            workflow_id,
            held.epoch,
        )
        try:
            self.store.record_event(self._event(workflow_id, "deposed", held.epoch, None, at_ms))
        except Exception:
            logger.exception("could not record the deposition of workflow %s", workflow_id)
        if self._on_claim_lost is not None:
            try:
                self._on_claim_lost(workflow_id)
            except Exception:
                logger.exception("on_claim_lost failed for workflow %s", workflow_id)

    # -- release ---------------------------------------------------------------

    def release(self, workflow_id: str, expected_epoch: int | None = None) -> ClaimResult:
        """Give the claim up; the epoch stays. Waits for an in-flight renewal first."""
        with self._lock:
            held = self._held.get(workflow_id)
            if held is None or workflow_id in self._releasing:
                return ClaimResult("not-held", workflow_id)
            if expected_epoch is not None and held.epoch != expected_epoch:
                return ClaimResult("not-held", workflow_id, epoch=held.epoch)
            self._releasing.add(workflow_id)
            flight = self._renewals.get(workflow_id)
        try:
            if flight is not None:
                flight.wait_quietly()
            if self._settle_by_reading(workflow_id) == "released":
                return ClaimResult("released", workflow_id, epoch=held.epoch)
            with self._lock:
                held = self._held.get(workflow_id)
            if held is None or (expected_epoch is not None and held.epoch != expected_epoch):
                return ClaimResult("not-held", workflow_id)
            sent = self._monotonic()
            event = self._event(workflow_id, "released", held.epoch, held.epoch, self.clock())
            with self._in_doubt_on_error(workflow_id, held.epoch or 0, None, sent):
                released = self.store.cas_release(workflow_id, held=held, event=event)
            with self._lock:
                if self._held.get(workflow_id) is held:
                    self._forget(workflow_id)
            self._doubts.clear(workflow_id)
            status: ClaimStatus = "released" if released else "lost-race"
            return ClaimResult(status, workflow_id, epoch=held.epoch)
        finally:
            with self._lock:
                self._releasing.discard(workflow_id)

    def release_all(self) -> None:
        """Best effort at shutdown: one failure never keeps the others held."""
        for workflow_id in self.held_workflow_ids():
            try:
                self.release(workflow_id)
            except Exception:
                logger.exception("could not release workflow %s at shutdown", workflow_id)

    # -- fenced writes ---------------------------------------------------------

    def fenced_write(self, workflow_id: str, fn: Callable[[], T]) -> T:
        """Run ``fn`` only while the claim is still at the epoch this engine holds."""
        epoch = self.current_epoch(workflow_id)
        if epoch is None:
            raise EngineDeposedError(workflow_id)
        return self.store.fenced_write(workflow_id, epoch, fn)

    def finish(self, workflow_id: str, fn: Callable[[], T]) -> T:
        """Run a terminal write and release the claim in ONE transaction.

        Raises EngineDeposedError, committing nothing, if the claim moved on. Any other
        error leaves the outcome in doubt until the row is read again.
        """
        with self._lock:
            if workflow_id not in self._held or workflow_id in self._releasing:
                raise EngineDeposedError(workflow_id)
            self._releasing.add(workflow_id)
            flight = self._renewals.get(workflow_id)
        try:
            if flight is not None:
                flight.wait_quietly()
            with self._lock:
                held = self._held.get(workflow_id)
            if held is None or held.epoch is None:
                raise EngineDeposedError(workflow_id)
            event = self._event(workflow_id, "released", held.epoch, held.epoch, self.clock())

            def write_then_release() -> T:
                result = fn()
                if not self.store.cas_release(workflow_id, held=held, event=event):
                    raise EngineDeposedError(workflow_id)
                return result

            sent = self._monotonic()
            try:
                result = self.store.fenced_write(workflow_id, held.epoch, write_then_release)
            except EngineDeposedError:
                raise
            except Exception:
                self._doubts.add(workflow_id, Doubt(held.epoch, None, sent))
                raise
            with self._lock:
                if self._held.get(workflow_id) is held:
                    self._forget(workflow_id)
            self._doubts.clear(workflow_id)
            return result
        finally:
            with self._lock:
                self._releasing.discard(workflow_id)

    # -- internals -------------------------------------------------------------

    def _new_holder(self, epoch: int, now_ms: int) -> Holder:
        return Holder(self.engine_id, epoch, now_ms + self.timing.ttl_ms, now_ms)

    def _event(
        self,
        workflow_id: str,
        kind: EventKind,
        epoch_before: int | None,
        epoch_after: int | None,
        at_ms: int,
    ) -> ClaimEventRecord:
        return ClaimEventRecord(workflow_id, kind, epoch_before, epoch_after, self.engine_id, at_ms)

    def _granted(self, workflow_id: str, holder: Holder, *, sent_monotonic_ms: int) -> ClaimResult:
        with self._lock:
            self._held.pop(workflow_id, None)  # a re-grant moves to the end of grant order
            self._held[workflow_id] = holder
            self._deadline_ms[workflow_id] = sent_monotonic_ms + self.timing.ttl_ms
            self._cooldown_from_ms.pop(workflow_id, None)
        self._doubts.clear(workflow_id)
        return ClaimResult(
            "acquired", workflow_id, epoch=holder.epoch, expires_at_ms=holder.expires_at_ms
        )

    def _granted_earlier(self, workflow_id: str) -> ClaimResult:
        """The result of a grant whose answer was lost, found committed by a later read
        (``_settle`` has cached it)."""
        holder = self.held_claim(workflow_id)
        assert holder is not None
        self._doubts.clear(workflow_id)
        return ClaimResult(
            "acquired", workflow_id, epoch=holder.epoch, expires_at_ms=holder.expires_at_ms
        )

    def _forget(self, workflow_id: str) -> None:
        """Drop a cache entry; caller holds the lock."""
        del self._held[workflow_id]
        self._deadline_ms.pop(workflow_id, None)

    def _lost_race(self, workflow_id: str) -> ClaimResult:
        row: ClaimRow | None = self.store.read_claim(workflow_id)
        if self._settle(workflow_id, row) == "written":
            return self._granted_earlier(workflow_id)  # an earlier try landed meanwhile
        held_by = None if row is None else row.valid_holder_engine()
        return ClaimResult("lost-race", workflow_id, held_by=held_by)

    # -- outcomes in doubt -------------------------------------------------------

    @contextmanager
    def _in_doubt_on_error(
        self, workflow_id: str, epoch: int, intended: Holder | None, sent_monotonic_ms: int
    ) -> Iterator[None]:
        """A statement that raises may have committed: remember what it meant to write."""
        try:
            yield
        except Exception:
            self._doubts.add(workflow_id, Doubt(epoch, intended, sent_monotonic_ms))
            raise

    def _grant_planned(
        self,
        grant: Callable[[Sequence[GrantPlan]], set[str]],
        plans: list[GrantPlan],
        sent_monotonic_ms: int,
    ) -> set[str]:
        if not plans:
            return set()
        try:
            return grant(plans)
        except Exception:
            for plan in plans:
                epoch = plan.holder.epoch or 0
                self._doubts.add(plan.workflow_id, Doubt(epoch, plan.holder, sent_monotonic_ms))
            raise

    def _settle_by_reading(self, workflow_id: str) -> Verdict | None:
        """``_settle`` with the row read now, only if something about it is in doubt."""
        if not self._doubts.has(workflow_id):
            return None
        return self._settle(workflow_id, self.store.read_claim(workflow_id))

    def _settle(self, workflow_id: str, row: ClaimRow | None) -> Verdict | None:
        """Take what ``row`` shows of this id's statements in doubt: a grant or renewal
        that landed becomes the cached claim, a release that landed drops it. None when
        nothing about this id is in doubt."""
        if not self._doubts.has(workflow_id):
            return None
        verdict, doubt = self._doubts.judge(workflow_id, row)
        with self._lock:
            if verdict == "written":
                assert doubt is not None
                assert doubt.holder is not None
                self._held[workflow_id] = doubt.holder  # in place if cached, else appended
                self._deadline_ms[workflow_id] = doubt.sent_monotonic_ms + self.timing.ttl_ms
                self._cooldown_from_ms.pop(workflow_id, None)
            elif verdict == "released" and workflow_id in self._held:
                self._forget(workflow_id)
        if verdict == "released" or (
            row is not None and all(row.epoch > d for d in self._doubts.epochs(workflow_id))
        ):
            self._doubts.clear(workflow_id)  # settled for good: nothing of it can land later
        return verdict
