"""One engine's view of the claims it holds, and the compare-and-swap calls on them.

The registry caches, per held workflow, the exact holder values it last wrote;
every CAS compares all of them, so any foreign write (takeover, rotation,
operator action) makes this engine's next renew or release fail cleanly.
Statements run on the calling thread: Django connections are per thread.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import replace
from typing import TypeVar

from .clock import Clock
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
    ) -> None:
        if not engine_id:
            raise ValueError("engine_id must be a non-empty string")
        self.store = store
        self.engine_id = engine_id
        self.clock = clock
        self.timing = timing
        self.metrics = metrics
        self._on_claim_lost = on_claim_lost
        self._lock = threading.Lock()
        self._held: dict[str, Holder] = {}  # insertion order is grant order
        self._cooldown_from_ms: dict[str, int] = {}
        self._renewals: dict[str, _Flight] = {}
        self._releasing: set[str] = set()
        # Per held claim: the clock reading before the statement that last granted
        # or renewed it, plus the TTL. Past it the claim may have lapsed unseen.
        self._deadline_ms: dict[str, int] = {}

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

    def within_deadline(self, workflow_id: str) -> bool:
        """True while my last successful grant or renewal cannot yet have lapsed.

        Measured from before that statement was sent, so a stalled engine stops
        starting side effects before anyone could have taken the claim over.
        """
        with self._lock:
            deadline = self._deadline_ms.get(workflow_id)
        return deadline is not None and self.clock() < deadline

    def in_cooldown(self, workflow_id: str, now_ms: int) -> bool:
        with self._lock:
            lost_at = self._cooldown_from_ms.get(workflow_id)
        return lost_at is not None and lost_at <= now_ms < lost_at + self.timing.renew_interval_ms

    # -- grants ----------------------------------------------------------------

    def acquire(self, workflow_id: str) -> ClaimResult:
        """Claim a workflow nobody holds. Never judges expiry: any holder present wins."""
        now = self.clock()
        row = self.store.read_claim(workflow_id)
        if row is None:
            holder = self._new_holder(1, now)
            event = self._event(workflow_id, "acquired", None, 1, now)
            if self.store.cas_insert(workflow_id, holder=holder, event=event):
                return self._granted(workflow_id, holder, sent_at_ms=now)
            return self._lost_race(workflow_id)
        if row.holder is not None:
            return ClaimResult("lost-race", workflow_id, held_by=row.valid_holder_engine())
        holder = self._new_holder(row.epoch + 1, now)
        event = self._event(workflow_id, "acquired", row.epoch, row.epoch + 1, now)
        granted = self.store.cas_grant(
            workflow_id, expected_epoch=row.epoch, expected_holder=None, holder=holder, event=event
        )
        if not granted:
            return self._lost_race(workflow_id)
        return self._granted(workflow_id, holder, sent_at_ms=now)

    def takeover(self, workflow_id: str) -> ClaimResult:
        """Steal an expired or invalid claim, minting the next epoch from the epoch column."""
        now = self.clock()
        if self.in_cooldown(workflow_id, now):
            return ClaimResult("backoff-skipped", workflow_id)
        row = self.store.read_claim(workflow_id)
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
        granted = self.store.cas_grant(
            workflow_id,
            expected_epoch=row.epoch,
            expected_holder=observed,
            holder=holder,
            event=event,
        )
        if not granted:
            return self._lost_race(workflow_id)
        return self._granted(workflow_id, holder, sent_at_ms=now)

    def takeover_many(self, workflow_ids: list[str]) -> dict[str, ClaimResult]:
        """``takeover`` for many ids: one read and one set-based grant for them all.

        Same judgement, per id, as ``takeover``; a ``lost-race`` here carries no
        ``held_by`` (no re-read), and a caller wanting one retries with ``takeover``.
        """
        now = self.clock()
        results: dict[str, ClaimResult] = {}
        waiting = [wf for wf in workflow_ids if not self.in_cooldown(wf, now)]
        for workflow_id in set(workflow_ids) - set(waiting):
            results[workflow_id] = ClaimResult("backoff-skipped", workflow_id)
        rows = self.store.read_claims(waiting)
        plans: list[GrantPlan] = []
        for workflow_id in waiting:
            row = rows.get(workflow_id)
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
        granted = self.store.grant_many(plans) if plans else set()
        for plan in plans:
            if plan.workflow_id in granted:
                results[plan.workflow_id] = self._granted(
                    plan.workflow_id, plan.holder, sent_at_ms=now
                )
            else:
                results[plan.workflow_id] = ClaimResult("lost-race", plan.workflow_id)
        return results

    def acquire_many(self, workflow_ids: list[str]) -> dict[str, ClaimResult]:
        """``acquire`` for many ids: one read, then one set-based grant for the rows with
        no holder and one insert for the ids with no row. Never judges expiry."""
        now = self.clock()
        rows = self.store.read_claims(workflow_ids)
        results: dict[str, ClaimResult] = {}
        grants: list[GrantPlan] = []
        inserts: list[GrantPlan] = []
        for workflow_id in workflow_ids:
            row = rows.get(workflow_id)
            if row is not None and row.holder is not None:
                held_by = row.valid_holder_engine()
                results[workflow_id] = ClaimResult("lost-race", workflow_id, held_by=held_by)
                continue
            before = None if row is None else row.epoch
            epoch = 1 if row is None else row.epoch + 1
            event = self._event(workflow_id, "acquired", before, epoch, now)
            planned = GrantPlan(workflow_id, before or 0, None, self._new_holder(epoch, now), event)
            (inserts if row is None else grants).append(planned)
        granted = self.store.grant_many(grants) if grants else set()
        granted |= self.store.insert_many(inserts) if inserts else set()
        for planned in (*grants, *inserts):
            workflow_id = planned.workflow_id
            if workflow_id in granted:
                results[workflow_id] = self._granted(workflow_id, planned.holder, sent_at_ms=now)
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
        result = self._granted(workflow_id, holder, sent_at_ms=now - self.timing.ttl_ms + remaining)
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
        store error (logged), which leaves that claim cached for the next pass.
        The per-id rules of ``renew`` hold: an id being released is skipped, an
        id with a renewal in flight shares that renewal's result.
        """
        chunks: list[tuple[_Flight, list[tuple[str, Holder]]]] = []
        joined: dict[str, _Flight] = {}
        with self._lock:
            order = [wf for wf in self._held if wf not in self._releasing]
            mine: list[tuple[str, Holder]] = []
            for workflow_id in order:
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
        results: dict[str, ClaimResult | None] = {}
        for flight, chunk in chunks:
            results.update(self._renew_chunk(flight, chunk))
        for workflow_id, in_flight in joined.items():
            try:
                results[workflow_id] = in_flight.wait(workflow_id)
            except Exception:
                results[workflow_id] = None
        return [(workflow_id, results[workflow_id]) for workflow_id in order]

    def _renew_chunk(
        self, flight: _Flight, chunk: list[tuple[str, Holder]]
    ) -> dict[str, ClaimResult | None]:
        sent_at = self.clock()
        expires_at = sent_at + self.timing.ttl_ms
        error: Exception | None = None
        try:
            renewed = self.store.renew_many(chunk, expires_at_ms=expires_at)
        except Exception as exc:
            logger.exception("renewal of %d claims failed", len(chunk))
            error, renewed = exc, set()
        lost_at = self.clock()
        results: dict[str, ClaimResult] = {}
        lost: list[tuple[str, Holder]] = []
        with self._lock:
            for workflow_id, held in chunk:
                if self._renewals.get(workflow_id) is flight:
                    del self._renewals[workflow_id]
                if error is not None:
                    continue
                still_ours = self._held.get(workflow_id) is held
                if workflow_id in renewed:
                    if still_ours:
                        # Built directly: dataclasses.replace costs too much per claim here.
                        self._held[workflow_id] = Holder(
                            held.engine_id, held.epoch, expires_at, held.claimed_at_ms
                        )
                        self._deadline_ms[workflow_id] = expires_at
                    results[workflow_id] = ClaimResult(
                        "renewed", workflow_id, held.epoch, None, expires_at
                    )
                else:
                    if still_ours:
                        self._forget(workflow_id)
                        self._cooldown_from_ms[workflow_id] = lost_at
                        lost.append((workflow_id, held))
                    results[workflow_id] = ClaimResult("lost", workflow_id, held.epoch)
        flight.finish(results, error)
        for workflow_id, held in lost:
            self._report_lost(workflow_id, held, lost_at)
        if error is not None:
            return dict.fromkeys((workflow_id for workflow_id, _ in chunk), None)
        return dict(results)

    def _renew_once(self, workflow_id: str, held: Holder) -> ClaimResult:
        sent_at = self.clock()
        expires_at = sent_at + self.timing.ttl_ms
        renewed = self.store.cas_renew(workflow_id, held=held, expires_at_ms=expires_at)
        lost_at = self.clock()
        with self._lock:
            still_ours = self._held.get(workflow_id) is held
            if renewed:
                if still_ours:
                    self._held[workflow_id] = replace(held, expires_at_ms=expires_at)
                    self._deadline_ms[workflow_id] = expires_at
                return ClaimResult(
                    "renewed", workflow_id, epoch=held.epoch, expires_at_ms=expires_at
                )
            if still_ours:
                # A newer grant cached meanwhile must survive this stale failure.
                self._forget(workflow_id)
                self._cooldown_from_ms[workflow_id] = lost_at
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
            with self._lock:
                held = self._held.get(workflow_id)
            if held is None or (expected_epoch is not None and held.epoch != expected_epoch):
                return ClaimResult("not-held", workflow_id)
            event = self._event(workflow_id, "released", held.epoch, held.epoch, self.clock())
            released = self.store.cas_release(workflow_id, held=held, event=event)
            with self._lock:
                if self._held.get(workflow_id) is held:
                    self._forget(workflow_id)
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

        Raises EngineDeposedError, committing nothing, if the claim moved on.
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

            result = self.store.fenced_write(workflow_id, held.epoch, write_then_release)
            with self._lock:
                if self._held.get(workflow_id) is held:
                    self._forget(workflow_id)
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

    def _granted(self, workflow_id: str, holder: Holder, *, sent_at_ms: int) -> ClaimResult:
        with self._lock:
            self._held.pop(workflow_id, None)  # a re-grant moves to the end of grant order
            self._held[workflow_id] = holder
            self._deadline_ms[workflow_id] = sent_at_ms + self.timing.ttl_ms
            self._cooldown_from_ms.pop(workflow_id, None)
        return ClaimResult(
            "acquired", workflow_id, epoch=holder.epoch, expires_at_ms=holder.expires_at_ms
        )

    def _forget(self, workflow_id: str) -> None:
        """Drop a cache entry; caller holds the lock."""
        del self._held[workflow_id]
        self._deadline_ms.pop(workflow_id, None)

    def _lost_race(self, workflow_id: str) -> ClaimResult:
        row: ClaimRow | None = self.store.read_claim(workflow_id)
        held_by = None if row is None else row.valid_holder_engine()
        return ClaimResult("lost-race", workflow_id, held_by=held_by)
