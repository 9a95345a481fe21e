"""The claims one engine holds: its cache, its deadlines and its statements in doubt.

The registry caches, per held workflow, the exact holder values it last wrote;
every CAS compares all of them, so any foreign write (takeover, rotation,
operator action) makes this engine's next renew or release fail cleanly.
This is the state every registry call shares (docs/design.md §3), and the one way
each takes what a read shows of a statement in doubt. The liveness strategy
(``liveness.py``) works on this state too: it renews and judges what is cached here.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

from .doubts import Doubt, Doubts, Verdict
from .flight import Flight
from .log_events import log_event
from .metrics import ClaimMetrics
from .offset_clock import Clock
from .records import ClaimEventRecord, ClaimResult, ClaimRow, EventKind, GrantPlan, Holder
from .store import ClaimStore
from .timing import ClaimTiming

logger = logging.getLogger("weftboard.claims")


class HeldClaims:
    """The state a registry shares with its liveness strategy: held claims in grant order,
    their deadlines and cooldowns, renewals in flight, releases begun, statements in doubt.
    ``is_current`` is the strategy's judgement of a holder (``Liveness.names_current``)."""

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
        is_current: Callable[[Holder], bool],
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
        # The liveness strategy's judgement of a holder: whether a claim it names may be
        # kept and driven now (one naming a session no longer open may not).
        self._is_current = is_current
        self._lock = threading.Lock()
        self._held: dict[str, Holder] = {}  # insertion order is grant order
        self._cooldown_from_ms: dict[str, int] = {}
        self._renewals: dict[str, Flight] = {}
        self._releasing: set[str] = set()
        # Per held claim: the monotonic reading before the statement that last granted
        # or renewed it, plus the TTL. Past it the claim may have lapsed unseen.
        self._deadline_ms: dict[str, int] = {}
        self._doubts = Doubts()
        # Per id: the kind of the doubted grant the last settling read found committed.
        self._landed_as: dict[str, EventKind | None] = {}
        # A set-based takeover by session whose answer was lost: the ids it may have
        # granted are unknown, so discovery audits the rows naming this engine at once.
        self.audit_due = False

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

    def monotonic_ms(self) -> int:
        """This process's clock for durations (a pass's budget), which no calibration moves."""
        return self._monotonic()

    def doubted_workflow_ids(self) -> list[str]:
        """Ids with a claim statement whose outcome is not known yet (it raised). A doubt
        older than a few TTLs is dropped: whatever it wrote has lapsed by then."""
        return self._doubts.ids(sent_after_ms=self._monotonic() - 3 * self.timing.ttl_ms)

    def in_cooldown(self, workflow_id: str, now_ms: int) -> bool:
        with self._lock:
            lost_at = self._cooldown_from_ms.get(workflow_id)
        return lost_at is not None and lost_at <= now_ms < lost_at + self.timing.renew_interval_ms

    def cooling_down(self, now_ms: int) -> list[str]:
        """The ids ``in_cooldown`` now."""
        with self._lock:
            lost = list(self._cooldown_from_ms.items())
        interval = self.timing.renew_interval_ms
        return [wf for wf, lost_at in lost if lost_at <= now_ms < lost_at + interval]

    # -- the cache -------------------------------------------------------------

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
        if self._drop_if_not_current(workflow_id, holder):
            # Granted under a session lost meanwhile: the claim is takeover-eligible at
            # once, so it is not this engine's to drive; a later takeover can make it so.
            return ClaimResult("lost-race", workflow_id)
        return ClaimResult(
            "acquired", workflow_id, epoch=holder.epoch, expires_at_ms=holder.expires_at_ms
        )

    def _drop_if_not_current(self, workflow_id: str, holder: Holder) -> bool:
        """Forget ``holder`` if the liveness strategy no longer keeps a claim naming it (one
        naming a session that is no longer the open one). Checked after caching: a lost
        session's sweep runs after the session forgot its epoch, so a holder cached before
        this check is swept, and one cached after it is dropped here."""
        if self._is_current(holder):
            return False
        with self._lock:
            if self._held.get(workflow_id) is holder:
                self._forget(workflow_id)
        self._doubts.clear(workflow_id)
        return True

    def _granted_earlier(self, workflow_id: str) -> ClaimResult:
        """The result of a grant whose answer was lost, found committed by a later read
        (``_settle`` has cached it)."""
        holder = self.held_claim(workflow_id)
        assert holder is not None
        self._doubts.clear(workflow_id)
        with self._lock:
            kind = self._landed_as.pop(workflow_id, None)
        return ClaimResult(
            "acquired",
            workflow_id,
            epoch=holder.epoch,
            expires_at_ms=holder.expires_at_ms,
            granted_as=kind,
        )

    def _forget(self, workflow_id: str) -> None:
        """Drop a cache entry; caller holds the lock."""
        del self._held[workflow_id]
        self._deadline_ms.pop(workflow_id, None)
        self._landed_as.pop(workflow_id, None)

    def _forget_released(self, workflow_id: str, held: Holder) -> None:
        """After a release statement answered: drop the entry unless a newer grant replaced
        it meanwhile; the statement's outcome is known, so nothing about it is in doubt."""
        with self._lock:
            if self._held.get(workflow_id) is held:
                self._forget(workflow_id)
        self._doubts.clear(workflow_id)

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

    def _lost_race(self, workflow_id: str) -> ClaimResult:
        row: ClaimRow | None = self.store.read_claim(workflow_id)
        if self._settle(workflow_id, row) == "written":
            return self._granted_earlier(workflow_id)  # an earlier try landed meanwhile
        held_by = None if row is None else row.valid_holder_engine()
        return ClaimResult("lost-race", workflow_id, held_by=held_by)

    # -- outcomes in doubt -------------------------------------------------------

    @contextmanager
    def _in_doubt_on_error(
        self,
        workflow_id: str,
        epoch: int,
        intended: Holder | None,
        sent_monotonic_ms: int,
        kind: EventKind | None = None,
    ) -> Iterator[None]:
        """A statement that raises may have committed: remember what it meant to write."""
        try:
            yield
        except Exception:
            self._doubts.add(workflow_id, Doubt(epoch, intended, sent_monotonic_ms, kind))
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
                kind = None if plan.event is None else plan.event.kind
                doubt = Doubt(epoch, plan.holder, sent_monotonic_ms, kind)
                self._doubts.add(plan.workflow_id, doubt)
            raise

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

    def _settle_by_reading(self, workflow_id: str) -> Verdict | None:
        """``_settle`` with the row read now, only if something about it is in doubt."""
        if not self._doubts.has(workflow_id):
            return None
        return self._settle(workflow_id, self.store.read_claim(workflow_id))

    def _settle(self, workflow_id: str, row: ClaimRow | None) -> Verdict | None:
        """Take what ``row`` shows of this id's statements in doubt: a grant or renewal
        that landed becomes the cached claim, a release that landed drops it. None when
        nothing about this id is in doubt. A grant in doubt that landed naming a session
        lost since is not this engine's: the row names a closed session, so the caller
        takes it over afresh, under the open one (``not-written``)."""
        if not self._doubts.has(workflow_id):
            return None
        verdict, doubt = self._doubts.judge(workflow_id, row)
        with self._lock:
            if verdict == "written":
                assert doubt is not None
                assert doubt.holder is not None
                if doubt.kind in ("acquired", "takeover"):
                    self._landed_as[workflow_id] = doubt.kind
                self._held[workflow_id] = doubt.holder  # in place if cached, else appended
                self._deadline_ms[workflow_id] = doubt.sent_monotonic_ms + self.timing.ttl_ms
                self._cooldown_from_ms.pop(workflow_id, None)
            elif verdict == "released" and workflow_id in self._held:
                self._forget(workflow_id)
        if verdict == "released" or (
            row is not None and all(row.epoch > d for d in self._doubts.epochs(workflow_id))
        ):
            self._doubts.clear(workflow_id)  # settled for good: nothing of it can land later
        held = self.held_claim(workflow_id)
        if (
            verdict == "written"
            and held is not None
            and self._drop_if_not_current(workflow_id, held)
        ):
            return "not-written"
        return verdict

    def settle_held_doubts(self) -> set[str]:
        """Read, in one statement, the held ids with a statement in doubt (not those being
        released or renewed, which that call settles) and take what the rows show; none
        when nothing held is in doubt. An id whose cached claim changed while the rows were
        read is left to the next look: a stale read must not undo a newer grant. Returns
        the ids left unsettled (the read failed too)."""
        with self._lock:
            doubted = {
                wf: self._held[wf]
                for wf in self._doubts.ids()
                if wf in self._held and wf not in self._releasing and wf not in self._renewals
            }
        if not doubted:
            return set()
        try:
            rows = self.store.read_claims(list(doubted))
        except Exception:
            logger.exception("could not read %d claims in doubt", len(doubted))
            return set(doubted)
        for workflow_id, cached in doubted.items():
            if self.held_claim(workflow_id) is cached:
                self._settle(workflow_id, rows.get(workflow_id))
        return set()

    def _report_lost(self, workflow_id: str, held: Holder, at_ms: int) -> None:
        if self.metrics is not None:
            self.metrics.record_attempt("deposed")
        log_event(
            logger,
            logging.WARNING,
            "claim-lost",
            workflow=workflow_id,
            epoch=held.epoch,
            engine=self.engine_id,
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
