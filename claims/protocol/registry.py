"""One engine's view of the claims it holds, and the compare-and-swap calls on them.

The registry caches, per held workflow, the exact holder values it last wrote;
every CAS compares all of them, so any foreign write (takeover, rotation,
operator action) makes this engine's next renew or release fail cleanly.
Statements run on the calling thread: Django connections are per thread.
Grants are judged by ``decisions``; the cache and doubts live in ``held_claims``,
renewal in ``renewal`` (docs/design.md §3).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import TypeVar

from .decisions import Decide, decide_acquire, decide_takeover
from .doubts import Doubt
from .errors import EngineDeposedError
from .records import ClaimResult, ClaimRow, ClaimStatus, GrantPlan, Holder
from .renewal import ClaimRenewals

logger = logging.getLogger("weftboard.claims")
T = TypeVar("T")


class ClaimRegistry(ClaimRenewals):
    """Grants, adoption, release and fenced writes; renewal is inherited."""

    # -- grants ----------------------------------------------------------------

    def acquire(self, workflow_id: str) -> ClaimResult:
        """Claim a workflow nobody holds. Never judges expiry: any holder present wins."""
        session_epoch = self.session_epoch()
        now, sent = self.clock(), self._monotonic()
        row = self.store.read_claim(workflow_id)
        if self._settle(workflow_id, row) == "written":
            return self._granted_earlier(workflow_id)
        decided = self._judge(decide_acquire, workflow_id, row, now, session_epoch)
        if isinstance(decided, ClaimResult):
            return decided
        return self._grant_one(decided, sent, insert=row is None)

    def takeover(self, workflow_id: str) -> ClaimResult:
        """Steal an expired or invalid claim, minting the next epoch from the epoch column."""
        session_epoch = self.session_epoch()
        now, sent = self.clock(), self._monotonic()
        if self.in_cooldown(workflow_id, now):
            return ClaimResult("backoff-skipped", workflow_id)
        row = self.store.read_claim(workflow_id)
        if self._settle(workflow_id, row) == "written":
            return self._granted_earlier(workflow_id)
        if row is not None:
            row = self._close_expired_sessions({workflow_id: row}, now)[workflow_id]
        decided = self._judge(decide_takeover, workflow_id, row, now, session_epoch)
        if isinstance(decided, ClaimResult):
            return decided
        return self._grant_one(decided, sent, insert=False)

    def takeover_many(self, workflow_ids: list[str]) -> dict[str, ClaimResult]:
        """``takeover`` for many ids: one read and one set-based grant for them all.

        Same judgement, per id, as ``takeover``; a ``lost-race`` here carries no
        ``held_by`` (no re-read), and a caller wanting one retries with ``takeover``.
        """
        session_epoch = self.session_epoch()
        now, sent = self.clock(), self._monotonic()
        results: dict[str, ClaimResult] = {}
        waiting = [wf for wf in workflow_ids if not self.in_cooldown(wf, now)]
        for workflow_id in set(workflow_ids) - set(waiting):
            results[workflow_id] = ClaimResult("backoff-skipped", workflow_id)
        rows = self._close_expired_sessions(self.store.read_claims(waiting), now)
        plans: list[GrantPlan] = []
        for workflow_id in waiting:
            row = rows.get(workflow_id)
            if self._settle(workflow_id, row) == "written":
                results[workflow_id] = self._granted_earlier(workflow_id)
                continue
            decided = self._judge(decide_takeover, workflow_id, row, now, session_epoch)
            if isinstance(decided, ClaimResult):
                results[workflow_id] = decided
            else:
                plans.append(decided)
        granted = self._grant_planned(self.store.grant_many, plans, sent)
        results.update(self._results_of(plans, granted, sent))
        return results

    def acquire_many(self, workflow_ids: list[str]) -> dict[str, ClaimResult]:
        """``acquire`` for many ids: one read, then one set-based grant for the rows with
        no holder and one insert for the ids with no row. Never judges expiry."""
        session_epoch = self.session_epoch()
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
            decided = self._judge(decide_acquire, workflow_id, row, now, session_epoch)
            if isinstance(decided, ClaimResult):
                results[workflow_id] = decided
            else:
                (inserts if row is None else grants).append(decided)
        granted = self._grant_planned(self.store.grant_many, grants, sent)
        granted |= self._grant_planned(self.store.insert_many, inserts, sent)
        results.update(self._results_of([*grants, *inserts], granted, sent))
        return results

    def _judge(
        self,
        decide: Decide,
        workflow_id: str,
        row: ClaimRow | None,
        now: int,
        session_epoch: int | None,
    ) -> ClaimResult | GrantPlan:
        """One grant judged by ``decisions``, as this engine at ``now``."""
        return decide(
            workflow_id,
            row,
            engine_id=self.engine_id,
            now_ms=now,
            timing=self.timing,
            session_epoch=session_epoch,
        )

    def _grant_one(self, plan: GrantPlan, sent: int, *, insert: bool) -> ClaimResult:
        """Carry out one planned grant: an insert for an id with no row, else a CAS on the
        epoch and the holder as read."""
        workflow_id, holder = plan.workflow_id, plan.holder
        assert holder.epoch is not None
        with self._in_doubt_on_error(workflow_id, holder.epoch, holder, sent):
            if insert:
                granted = self.store.cas_insert(workflow_id, holder=holder, event=plan.event)
            else:
                granted = self.store.cas_grant(
                    workflow_id,
                    expected_epoch=plan.expected_epoch,
                    expected_holder=plan.expected_holder,
                    holder=holder,
                    event=plan.event,
                )
        if not granted:
            return self._lost_race(workflow_id)
        return self._granted(workflow_id, holder, sent_monotonic_ms=sent)

    def _results_of(
        self, plans: list[GrantPlan], granted: set[str], sent: int
    ) -> dict[str, ClaimResult]:
        """Per planned id of a set-based grant: ``acquired`` and cached, or ``lost-race``."""
        results: dict[str, ClaimResult] = {}
        for plan in plans:
            if plan.workflow_id in granted:
                results[plan.workflow_id] = self._granted(
                    plan.workflow_id, plan.holder, sent_monotonic_ms=sent
                )
            else:
                results[plan.workflow_id] = ClaimResult("lost-race", plan.workflow_id)
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
            or holder.session_epoch != (None if self.session is None else self.session.epoch)
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
        # The grant was written earlier by someone else: trust only what is left of it
        # (under a session, the session's deadline is the claim's).
        remaining = self.timing.ttl_ms
        if holder.expires_at_ms is not None:
            remaining = max(0, holder.expires_at_ms - now)
        sent = self._monotonic() - self.timing.ttl_ms + remaining
        result = self._granted(workflow_id, holder, sent_monotonic_ms=sent)
        return replace(result, status="adopted")

    # -- release ---------------------------------------------------------------

    @contextmanager
    def _releasing_claim(
        self, workflow_id: str, expected_epoch: int | None = None
    ) -> Iterator[Holder | ClaimResult]:
        """The preamble of ``release`` and ``finish``: mark the id releasing, so no renewal
        starts, wait for one already in flight, and yield the claim as held when the
        release began; unmark on the way out. Yields the ``not-held`` refusal instead,
        marking nothing, when the claim is not held (at ``expected_epoch``, if given) or
        is being released already."""
        flight = None
        with self._lock:
            held = self._held.get(workflow_id)
            if held is None or workflow_id in self._releasing:
                began: Holder | ClaimResult = ClaimResult("not-held", workflow_id)
            elif expected_epoch is not None and held.epoch != expected_epoch:
                began = ClaimResult("not-held", workflow_id, epoch=held.epoch)
            else:
                began = held
                self._releasing.add(workflow_id)
                flight = self._renewals.get(workflow_id)
        if isinstance(began, ClaimResult):
            yield began
            return
        try:
            if flight is not None:
                flight.wait_quietly()
            yield began
        finally:
            with self._lock:
                self._releasing.discard(workflow_id)

    def release(self, workflow_id: str, expected_epoch: int | None = None) -> ClaimResult:
        """Give the claim up; the epoch stays. Waits for an in-flight renewal first."""
        with self._releasing_claim(workflow_id, expected_epoch) as began:
            if isinstance(began, ClaimResult):
                return began
            if self._settle_by_reading(workflow_id) == "released":
                return ClaimResult("released", workflow_id, epoch=began.epoch)
            held = self.held_claim(workflow_id)
            if held is None or (expected_epoch is not None and held.epoch != expected_epoch):
                return ClaimResult("not-held", workflow_id)
            sent = self._monotonic()
            event = self._event(workflow_id, "released", held.epoch, held.epoch, self.clock())
            with self._in_doubt_on_error(workflow_id, held.epoch or 0, None, sent):
                released = self.store.cas_release(workflow_id, held=held, event=event)
            self._forget_released(workflow_id, held)
            status: ClaimStatus = "released" if released else "lost-race"
            return ClaimResult(status, workflow_id, epoch=held.epoch)

    def release_all(self) -> None:
        """Best effort at shutdown: one failure never keeps the others held. Under a
        session, closing the session gives every claim up in one statement."""
        if self.session is not None:
            self._close_own_session()
            return
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
        with self._releasing_claim(workflow_id) as began:
            if isinstance(began, ClaimResult):
                raise EngineDeposedError(workflow_id)
            held = self.held_claim(workflow_id)
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
            self._forget_released(workflow_id, held)
            return result
