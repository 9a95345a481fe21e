"""One engine's view of the claims it holds, and the compare-and-swap calls on them.

The registry caches, per held workflow, the exact holder values it last wrote;
every CAS compares all of them, so any foreign write (takeover, rotation,
operator action) makes this engine's next renew or release fail cleanly.
Statements run on the calling thread: Django connections are per thread.
Grants are judged by ``decisions``; the cache and doubts live in ``held_claims``.
What the ownership modes differ in (the holder a grant mints, renewal, the local
deadline, preparing a takeover, giving up at shutdown) is the one liveness strategy
the registry is built with (``liveness.py``, docs/design.md §3).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TypeVar

from .decisions import Decide, decide_acquire, decide_takeover, new_holder
from .doubts import Doubt
from .errors import EngineDeposedError
from .fleet_share import FleetShare
from .held_claims import HeldClaims
from .liveness import Liveness, SessionRenewal
from .metrics import ClaimMetrics
from .offset_clock import Clock
from .per_claim_leases import PerClaimLeases
from .records import ClaimResult, ClaimRow, ClaimStatus, GrantPlan, SessionPair, SessionTakeover
from .renewal import RENEW_CHUNK
from .session_lease import EngineSessionLease
from .session_takeover import session_closed_for_sweep
from .store import ClaimStore
from .timing import ClaimTiming
from .transitions import carry_out_grant

T = TypeVar("T")


class ClaimRegistry(HeldClaims):
    """Grants, adoption, release and fenced writes on the held claims' cache; liveness is
    the strategy's (``PerClaimLeases`` unless another is given)."""

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
        liveness: Liveness | None = None,
    ) -> None:
        self.liveness: Liveness = liveness if liveness is not None else PerClaimLeases()
        super().__init__(
            store,
            engine_id=engine_id,
            clock=clock,
            timing=timing,
            metrics=metrics,
            on_claim_lost=on_claim_lost,
            monotonic=monotonic,
            is_current=self.liveness.names_current,
        )
        self.liveness.bind(self)

    # -- liveness: the strategy's ------------------------------------------------------

    @property
    def session(self) -> EngineSessionLease | None:
        """The engine's session lease, for reading; None in a mode without one."""
        return self.liveness.session

    def session_epoch(self) -> int | None:
        """The session grants name now (None: they carry their own expiry)."""
        return self.liveness.session_epoch()

    def within_deadline(self, workflow_id: str) -> bool:
        return self.liveness.within_deadline(workflow_id)

    def renew(self, workflow_id: str) -> ClaimResult:
        return self.liveness.renew(workflow_id)

    def renew_all(self, *, chunk_size: int = RENEW_CHUNK) -> list[tuple[str, ClaimResult | None]]:
        return self.liveness.renew_all(chunk_size=chunk_size)

    def renew_session(self) -> SessionRenewal:
        return self.liveness.renew_session()

    def forget_moved_claims(self, share: FleetShare | None = None) -> int:
        return self.liveness.forget_moved_claims(share)

    # -- grants ----------------------------------------------------------------

    def acquire(self, workflow_id: str) -> ClaimResult:
        """Claim a workflow nobody holds. Never judges expiry: any holder present wins."""
        session_epoch = self.liveness.session_epoch()
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
        session_epoch = self.liveness.session_epoch()
        now, sent = self.clock(), self._monotonic()
        if self.in_cooldown(workflow_id, now):
            return ClaimResult("backoff-skipped", workflow_id)
        row = self.store.read_claim(workflow_id)
        if self._settle(workflow_id, row) == "written":
            return self._granted_earlier(workflow_id)
        if row is not None:
            row = self.liveness.prepare_takeover({workflow_id: row}, now)[workflow_id]
        decided = self._judge(decide_takeover, workflow_id, row, now, session_epoch)
        if isinstance(decided, ClaimResult):
            return decided
        return self._grant_one(decided, sent, insert=False)

    def takeover_many(self, workflow_ids: list[str]) -> dict[str, ClaimResult]:
        """``takeover`` for many ids: one read and one set-based grant for them all.

        Same judgement, per id, as ``takeover``; a ``lost-race`` here carries no
        ``held_by`` (no re-read), and a caller wanting one retries with ``takeover``.
        """
        session_epoch = self.liveness.session_epoch()
        now, sent = self.clock(), self._monotonic()
        results: dict[str, ClaimResult] = {}
        waiting = [wf for wf in workflow_ids if not self.in_cooldown(wf, now)]
        for workflow_id in set(workflow_ids) - set(waiting):
            results[workflow_id] = ClaimResult("backoff-skipped", workflow_id)
        rows = self.liveness.prepare_takeover(self.store.read_claims(waiting), now)
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

    def take_over_session(
        self,
        pair: SessionPair,
        *,
        limit: int,
        workflow_types: Sequence[str] | None,
        skip: Sequence[str] = (),
    ) -> dict[str, tuple[ClaimResult, str]]:
        """Take over up to ``limit`` claims naming the dead session ``pair`` in one
        statement, without reading them first (``ClaimStore.take_over_session_claims``):
        per id taken, the grant as ``takeover`` answers it, and the workflow's status.

        Only under a session of this engine's own (the engine-lease mode), and only once
        the dead session is closed: this closes it if it is expired by the rule, and takes
        nothing if it was renewed. A statement that raised may have committed: the ids
        are unknown, so the next audit of the rows naming this engine is due at once
        (``audit_due``), and takes back what landed.
        """
        if pair[0] == self.engine_id:
            # Never its own: the rows would be written back naming the same closed session
            # (one this engine has not yet learnt it lost) and picked again, an epoch a time.
            return {}
        session_epoch = self.liveness.session_epoch()
        if session_epoch is None or limit < 1:
            return {}
        now, sent = self.clock(), self._monotonic()
        if not session_closed_for_sweep(self, pair, now):
            return {}
        takeover = SessionTakeover(self.engine_id, session_epoch, now)
        try:
            taken = self.store.take_over_session_claims(
                pair, takeover, limit=limit, workflow_types=workflow_types, skip=skip
            )
        except Exception:
            self.audit_due = True
            raise
        results: dict[str, tuple[ClaimResult, str]] = {}
        for workflow_id, (epoch, status) in taken.items():
            holder = new_holder(
                self.engine_id, epoch, now, ttl_ms=self.timing.ttl_ms, session_epoch=session_epoch
            )
            granted = self._granted(workflow_id, holder, sent_monotonic_ms=sent)
            results[workflow_id] = (granted, status)
        return results

    def acquire_many(self, workflow_ids: list[str]) -> dict[str, ClaimResult]:
        """``acquire`` for many ids: one read, then one set-based grant for the rows with
        no holder and one insert for the ids with no row. Never judges expiry."""
        session_epoch = self.liveness.session_epoch()
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
        self, decide: Decide, workflow_id: str, row: ClaimRow | None, now: int, session: int | None
    ) -> ClaimResult | GrantPlan:
        """One grant judged by ``decisions``, as this engine at ``now``; the holder it plans
        names ``session``, the one the liveness strategy gave (None: its own expiry)."""
        return decide(
            workflow_id,
            row,
            engine_id=self.engine_id,
            now_ms=now,
            timing=self.timing,
            session_epoch=session,
        )

    def _grant_one(self, plan: GrantPlan, sent: int, *, insert: bool) -> ClaimResult:
        """Carry out one planned grant: an insert for an id with no row, else a CAS on the
        epoch and the holder as read."""
        workflow_id, holder = plan.workflow_id, plan.holder
        assert holder.epoch is not None
        kind = None if plan.event is None else plan.event.kind
        with self._in_doubt_on_error(workflow_id, holder.epoch, holder, sent, kind):
            granted = carry_out_grant(self.store, plan, insert=insert)
        if not granted:
            return self._lost_race(workflow_id)
        return self._granted(workflow_id, holder, sent_monotonic_ms=sent)

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
            or not self.liveness.names_current(holder)
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
        """At shutdown, the strategy's way: each claim released (one failure never keeps
        the others held), or the session closed, which gives every claim up at once."""
        self.liveness.give_up_all(self.release)

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
