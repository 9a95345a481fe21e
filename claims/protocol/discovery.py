"""Finding the workflows a reclaim pass should attempt (docs/design.md §4).

A candidate comes from one of three sources: expired or invalid holders,
running workflows the visibility index shows without a holder, and a bounded
cursor-rotated page of the authoritative workflow table (for workflows the
index has never seen). Grants in doubt, rows naming this engine that it does not
hold (every audit interval) and pending re-drives join them.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field

from .fleet_share import FleetShare
from .records import ScanPage, SessionPair, StaleHolders
from .registry import ClaimRegistry
from .store import ClaimStore

CURSOR_NAME = "default"
# Every this many audits (each an audit interval apart, TTL / 3 by default), the audit
# reads every row naming the engine, not only the recent grants: a grant whose claim time
# lies further back than the margin is found then.
FULL_AUDIT_EVERY = 10
# At most this many of the candidates every engine sees alike (stale holders, ownerless
# marks) are attempted in one pass: a window of them starting at a random
# place. When thousands are stranded at once, the live engines then take mostly different
# parts, and the set-based takeover skips rows another engine is writing (FOR UPDATE SKIP
# LOCKED): the failure is split between the engines, not repeated by each. The rest wait
# for the next pass (docs/design.md §4). 20,000: one engine takes over 10,000 in one pass
# of under two seconds (BENCHMARKS.md, "Failover"), so a lone live engine is not slowed.
# Twenty engines each judging a window of 20,000 at once do outgrow an interval on two
# cores (BENCHMARKS.md, "Misses": chunks under a time budget per pass are the plan).
SHARED_CANDIDATE_LIMIT = 20_000


def scan_is_paced(moved_at_ms: int, now_ms: int, paced_ms: int) -> bool:
    """Whether a scan page is not due yet: some engine moved the shared cursor less than
    ``paced_ms`` ago. A cursor moved in this clock's future (another engine's clock ahead
    of this one) counts as just moved: the wait is bounded by the skew."""
    return paced_ms > 0 and now_ms - moved_at_ms < paced_ms


@dataclass
class Discovery:
    """How many candidates each source found in the last pass (for the dashboard)."""

    stale_holders: int = 0
    unheld_indexed: int = 0
    authoritative_scan: int = 0
    pending_redrives: int = 0
    mine_unheld: int = 0  # rows naming this engine that it did not hold, or grants in doubt
    deferred: int = 0  # shared candidates beyond this pass's window, left for later passes
    # The first this many candidates are attempted whatever the pass's budget: the ones no
    # other engine can settle (grants in doubt, rows naming this engine, its re-drives) and
    # the scan's page (the cursor has moved on). The shared window follows them.
    must_attempt: int = 0
    scanned: int = 0
    wrapped: bool = False
    candidates: list[str] = field(default_factory=list)
    # Dead sessions whose claims are taken over by the session, a chunk a statement, with
    # how many claims each named (counted in ``stale_holders``; none is in ``candidates``).
    swept: dict[SessionPair, int] = field(default_factory=dict)


class CandidateFinder:
    """One engine's discovery: the sources above, each id once, none it holds already
    (except a pending re-drive, which is its own)."""

    def __init__(
        self,
        registry: ClaimRegistry,
        store: ClaimStore,
        *,
        scan_limit: int,
        audit_interval_ms: int,
        scan_paced_ms: int = 0,
        shared_limit: int = SHARED_CANDIDATE_LIMIT,
        rng: random.Random | None = None,
        sweep_above: int | None = None,
    ) -> None:
        self.registry = registry
        self.store = store
        self._sweep_above = sweep_above
        self._shared_limit = shared_limit
        self._rng = rng if rng is not None else random.Random()
        self._scan_limit = scan_limit
        # A page of the authoritative scan per pace for the whole fleet, not one per engine
        # per pass: the scan is for workflows the index never saw, and its cost must not
        # grow with the number of engines (docs/design.md §4). 0: a page every pass.
        self._scan_paced_ms = scan_paced_ms
        # How often discovery also asks which rows name this engine: one it does not hold
        # (an adopt order that never arrived) is adopted long before it would expire.
        self._audit_interval_ms = audit_interval_ms
        self._next_audit_ms: int | None = None
        self._last_audit_ms: int | None = None
        self._audits = 0

    def find(
        self, pending_redrives: Callable[[], dict[str, int]], share: FleetShare | None = None
    ) -> Discovery:
        """``share``: what beat read for the fleet; each part that covers one of the reads
        below stands in for it (claims/protocol/fleet_share.py)."""
        registry, store = self.registry, self.store
        held = set(registry.held_workflow_ids())
        now = registry.clock()
        if share is not None and share.quiet_at(now):
            found = StaleHolders([], {})
        else:
            # The same rule takeover applies, so a pass costs O(stale), not O(all claims).
            # Under a session of its own, an engine takes a dead session naming more than a
            # chunk of claims by the session (``Discovery.swept``), and never lists them.
            found = store.find_stale_holders(
                expired_before_ms=now - registry.timing.grace_ms,
                sweep_above=self._sweep_above if registry.session is not None else None,
                listing_engine=registry.engine_id,
                # After passes that beat's quiet shares spared this read, the sessions seen
                # open are old news: a session opened and closed meanwhile is in no list.
                pairs_fresh_within_ms=registry.timing.renew_interval_ms * 3 // 2,
            )
        stale = found.workflow_ids
        if share is not None and share.unheld is not None:
            unheld = list(share.unheld)
        else:
            unheld = store.list_unheld_running_indexed()
        # The scan's page is attempted whatever the budget, never deferred: the cursor has
        # moved on. One beat read goes to every engine (the strays it finds are few, and a
        # page left to one engine would be lost with that engine's tick).
        beat_page: list[str] = []
        if share is not None and share.scanned is not None:
            page, beat_page = ScanPage([], 0, False), list(share.scanned)
        else:
            page = store.scan_unheld_running(
                cursor_name=CURSOR_NAME,
                limit=self._scan_limit,
                scanned_by=registry.engine_id,
                now_ms=now,
                paced_ms=self._scan_paced_ms,
            )
        shared = [
            workflow_id
            for workflow_id in dict.fromkeys([*stale, *unheld])
            if workflow_id not in held
        ]
        window = self._window(shared)
        # Grants whose answer was lost, and rows naming me that I do not hold: each is
        # settled by an attempt (a read), and driven if it is mine. Never deferred: no other
        # engine can settle them.
        unknown = [wf for wf in registry.doubted_workflow_ids() if wf not in held]
        unknown += [wf for wf in self._audit(now, share) if wf not in held]
        pending = pending_redrives()
        candidates = dict.fromkeys(
            wf for wf in [*unknown, *page.candidates, *beat_page] if wf not in held
        )
        for workflow_id in pending:
            candidates.setdefault(workflow_id)
        must_attempt = len(candidates)
        for workflow_id in window:
            candidates.setdefault(workflow_id)
        return Discovery(
            stale_holders=found.count,
            unheld_indexed=len(unheld),
            authoritative_scan=len(page.candidates) + len(beat_page),
            pending_redrives=len(pending),
            mine_unheld=len(unknown),
            deferred=len(shared) - len(window),
            must_attempt=must_attempt,
            scanned=page.scanned,
            wrapped=page.wrapped,
            candidates=list(candidates),
            swept=self._from_random_place(found.swept),
        )

    def _window(self, shared: list[str]) -> list[str]:
        """All of ``shared`` in order when they fit the limit; else ``shared_limit`` of
        them in order from a random place, wrapping round."""
        if len(shared) <= self._shared_limit:
            return shared
        start = self._rng.randrange(len(shared))
        window = shared[start : start + self._shared_limit]
        return window + shared[: self._shared_limit - len(window)]

    def _from_random_place(self, swept: dict[SessionPair, int]) -> dict[SessionPair, int]:
        """The dead sessions in order from a random one, wrapping round: when several
        engines died, the live ones start on different sessions, and fewer of them skip
        each other's locked rows in the same one."""
        pairs = list(swept)
        if len(pairs) < 2:
            return dict(swept)
        start = self._rng.randrange(len(pairs))
        return {pair: swept[pair] for pair in pairs[start:] + pairs[:start]}

    def _audit(self, now_ms: int, share: FleetShare | None = None) -> list[str]:
        """Every audit interval, and at once after a takeover by session whose answer was
        lost (``ClaimRegistry.audit_due``): the ids whose row names this engine and was
        granted since the last look (less a TTL: a grant commits after the time it names,
        and writers' clocks differ), a read as long as this engine's recent grants; the
        first look and every FULL_AUDIT_EVERY-th read every row naming this engine,
        whenever granted. Beat's share of the grants stands in for the recent ones when it
        reaches back as far, except for a look due at once (the grant it looks for may
        have landed after beat read); the look then ends at beat's read."""
        due_now, self.registry.audit_due = self.registry.audit_due, False
        if not due_now and self._next_audit_ms is not None and now_ms < self._next_audit_ms:
            return []
        since = self._last_audit_ms
        audits = self._audits + 1
        engine_id = self.registry.engine_id
        looked_until = now_ms
        try:
            if since is None or audits % FULL_AUDIT_EVERY == 0:
                found = self.store.list_held_by(engine_id=engine_id)
            else:
                claimed_since = since - self.registry.timing.ttl_ms
                given = None
                if share is not None and not due_now:
                    given = share.grants_cover(claimed_since)
                if given is not None and share is not None:
                    found, looked_until = list(given), min(now_ms, share.read_at_ms)
                else:
                    found = self.store.list_granted_to(
                        engine_id=engine_id, claimed_since_ms=claimed_since
                    )
        except Exception:
            # Not looked: the next pass looks again, from the same place.
            self.registry.audit_due = self.registry.audit_due or due_now
            raise
        self._next_audit_ms = now_ms + self._audit_interval_ms
        self._last_audit_ms, self._audits = looked_until, audits
        return found
