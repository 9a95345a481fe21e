"""Beat's reads for the whole fleet, once per tick, each engine's share sent with its tick
(docs/design.md §4, "Beat reads for the fleet"; the share itself:
claims/protocol/fleet_share.py).

Each read asks the question an engine's own pass would, for every engine at once, and
bounds its answer: a list past SHARE_LIMIT is left out of the share, and the engines read
that part for themselves, as they do behind a mass failure. The reads run in the process
that runs the fan-out; its store keeps its own memory of the session pairs and its own
place in the ownerless marks, as an engine's does.
"""

from __future__ import annotations

import threading
import time
from collections import defaultdict

from django.db.models import Min, OuterRef, Q, Subquery

from claims.models import (
    ClaimEvent,
    Engine,
    EngineSession,
    Workflow,
    WorkflowClaim,
    WorkflowStatus,
)
from claims.models.claims import HOLDER_PRESENT, MOVED_FROM_KINDS
from claims.protocol import ClaimTiming
from claims.protocol.constants import AUTHORITATIVE_SCAN_LIMIT
from claims.protocol.discovery import CURSOR_NAME
from claims.protocol.fleet_share import SHARE_LIMIT, FleetShare, ids_within_limit
from claims.selectors.engines.liveness import heard_since_ms
from claims.store import OrmClaimStore

# Who the reclaim cursor names as the last to read a page, when beat read it.
BEAT_SCANNER = "beat"
# How far back the moves and grants reach before the read: an engine's own look reaches
# back a TTL before its last (an event's time is taken before it commits), and its last
# look was a tick ago for the moves, an audit interval (TTL / 3) ago for the grants; two
# intervals more leave one tick lost on the way. With only two intervals, an engine whose
# audit came every other tick found the grants a few milliseconds short a quarter of the
# time, and read them itself (BENCHMARKS.md, "Fleet discovery").
LOOK_BACK_INTERVALS = 2


def look_back_ms(timing: ClaimTiming) -> int:
    return timing.ttl_ms + timing.ttl_ms // 3 + LOOK_BACK_INTERVALS * timing.renew_interval_ms


# The share of an interval beat's reads may take before the rest is left to the engines.
READ_BUDGET = 0.1

_store_lock = threading.Lock()
_store: OrmClaimStore | None = None


def _fleet_store() -> OrmClaimStore:
    global _store
    with _store_lock:
        if _store is None:
            _store = OrmClaimStore()
        return _store


def fleet_shares(
    *, now_ms: int, timing: ClaimTiming, engine_ids: list[str]
) -> dict[str, FleetShare]:
    """Each engine's share of one read of each source for the fleet, at ``now_ms``. The
    ticks wait for these reads, so they stop at READ_BUDGET of an interval: the parts not
    read by then are left out, and the engines read them for themselves (behind a mass
    failure the due and granted lists run long, on a machine the takeovers keep busy)."""
    store = _fleet_store()
    deadline = time.monotonic() + timing.renew_interval_ms * READ_BUDGET / 1000

    def in_time() -> bool:
        return time.monotonic() < deadline

    quiet_until = _quiet_until(store, now_ms, timing)
    unheld = ids_within_limit(store.list_unheld_running_indexed()) if in_time() else None
    moves_since = now_ms - look_back_ms(timing)
    moves = _moves(_heard_lately(engine_ids, now_ms, timing), moves_since) if in_time() else None
    grants_since = now_ms - look_back_ms(timing)
    grants = _by_engine(_grants(engine_ids, grants_since), engine_ids) if in_time() else None
    due = _by_engine(_due(engine_ids, now_ms), engine_ids) if in_time() else None
    scanned: tuple[str, ...] | None = None
    if in_time():
        # Last: once it moves the cursor, nothing here fails before the page goes out.
        page = store.scan_unheld_running(
            cursor_name=CURSOR_NAME,
            limit=AUTHORITATIVE_SCAN_LIMIT,
            scanned_by=BEAT_SCANNER,
            now_ms=now_ms,
            # The pace the engines keep: with beat's page read, theirs is not due.
            paced_ms=timing.renew_interval_ms // 2,
        )
        # A page holds at most AUTHORITATIVE_SCAN_LIMIT (500) ids, within SHARE_LIMIT.
        scanned = tuple(page.candidates)
    shares = {}
    for engine_id in engine_ids:
        mine = None if grants is None else grants.get(engine_id, ())
        moved = None if moves is None else moves.get(engine_id)
        shares[engine_id] = FleetShare(
            read_at_ms=now_ms,
            quiet_until_ms=quiet_until,
            unheld=unheld,
            scanned=scanned,
            moves_since_ms=None if moved is None else moves_since,
            moves=moved,
            grants_since_ms=None if mine is None else grants_since,
            grants=mine,
            due=None if due is None else due.get(engine_id, ()),
        )
    return shares


def _quiet_until(store: OrmClaimStore, now_ms: int, timing: ClaimTiming) -> int | None:
    """Until when no stale-holder read finds anything: None if one would now. Otherwise
    the earliest claim or live session expiry plus the grace, and at most one interval on
    (a session closed after this read is stale at once; the next share shows it)."""
    grace = timing.grace_ms
    # The fan-out runs in whichever worker takes it: this process's memory of the sessions
    # may be several ticks old, and then every pair is read again.
    fresh = timing.renew_interval_ms * 3 // 2
    if store.stale_holder_exists(expired_before_ms=now_ms - grace, pairs_fresh_within_ms=fresh):
        return None
    earliest = [now_ms + timing.renew_interval_ms]
    claim_expiry = WorkflowClaim.objects.filter(holder_expires_at_ms__isnull=False).aggregate(
        at=Min("holder_expires_at_ms")
    )["at"]
    # Sessions past their grace were judged above, with their claims: a dead one naming
    # none stays unclosed and must not hold every later share back.
    session_expiry = EngineSession.objects.filter(
        closed_at_ms__isnull=True, expires_at_ms__gte=now_ms - grace
    ).aggregate(at=Min("expires_at_ms"))["at"]
    earliest += [at + grace for at in (claim_expiry, session_expiry) if at is not None]
    until = min(earliest)
    return until if until > now_ms else None


def _heard_lately(engine_ids: list[str], now_ms: int, timing: ClaimTiming) -> list[str]:
    """The engines heard from lately (``heard_since_ms``). Beat ticks an engine until it is
    marked dead, a TTL of silence; the moves of an engine killed a moment ago are its
    claims being taken over by the thousand, which no one reads."""
    heard = set(
        Engine.objects.filter(
            engine_id__in=engine_ids, heartbeat_at_ms__gte=heard_since_ms(now_ms, timing)
        ).values_list("engine_id", flat=True)
    )
    return [engine_id for engine_id in engine_ids if engine_id in heard]


def _moves(
    engine_ids: list[str], since_ms: int
) -> dict[str, tuple[tuple[str, int], ...] | None] | None:
    """Each engine's moves since then: those whose row named it before, and those naming
    no engine before (every engine's), along the moves' index. Behind a mass failure the
    dead engines' claims move by the thousand, and no live engine's list holds them (an
    engine left out here gets no moves in its share, and reads its own)."""
    rows = list(
        ClaimEvent.objects.filter(
            Q(holder_before__in=engine_ids) | Q(holder_before__isnull=True),
            at_ms__gte=since_ms,
            kind__in=MOVED_FROM_KINDS,
            epoch_after__isnull=False,
        ).values_list("holder_before", "workflow_id", "epoch_after")[: _total_limit(engine_ids) + 1]
    )
    if len(rows) > _total_limit(engine_ids):
        return None
    everyones: list[tuple[str, int]] = []
    own: dict[str, list[tuple[str, int]]] = defaultdict(list)
    for engine_id, workflow_id, epoch in rows:
        if epoch is None:
            continue
        if engine_id is None:
            everyones.append((workflow_id, epoch))
        else:
            own[engine_id].append((workflow_id, epoch))
    shares: dict[str, tuple[tuple[str, int], ...] | None] = {}
    for engine_id in engine_ids:
        mine = [*own.get(engine_id, []), *everyones]
        shares[engine_id] = tuple(mine) if len(mine) <= SHARE_LIMIT else None
    return shares


def _grants(engine_ids: list[str], since_ms: int) -> list[tuple[str, str]] | None:
    """(engine, workflow) of the claims granted to the engines since then: along the
    (engine, claim time) index, one range per engine."""
    rows = list(
        WorkflowClaim.objects.filter(
            HOLDER_PRESENT,
            holder_engine_id__in=engine_ids,
            holder_claimed_at_ms__gte=since_ms,
        )
        .order_by()
        .values_list("holder_engine_id", "workflow_id")[: _total_limit(engine_ids) + 1]
    )
    if len(rows) > _total_limit(engine_ids):
        return None
    return [(engine, workflow_id) for engine, workflow_id in rows if engine is not None]


def _due(engine_ids: list[str], now_ms: int) -> list[tuple[str, str]] | None:
    """(engine, workflow) of the running workflows due by now, along the due-time index,
    with the engine their claim names (the wake pass keeps those its registry holds)."""
    holder = WorkflowClaim.objects.filter(workflow_id=OuterRef("workflow_id")).values(
        "holder_engine_id"
    )[:1]
    rows = list(
        Workflow.objects.filter(status=WorkflowStatus.RUNNING, due_at_ms__lte=now_ms)
        .order_by("due_at_ms", "workflow_id")
        .annotate(holder=Subquery(holder))
        .values_list("holder", "workflow_id")[: _total_limit(engine_ids) + 1]
    )
    if len(rows) > _total_limit(engine_ids):
        return None
    wanted = set(engine_ids)
    return [(engine, workflow_id) for engine, workflow_id in rows if engine in wanted]


def _total_limit(engine_ids: list[str]) -> int:
    return SHARE_LIMIT * max(1, min(len(engine_ids), 10))


def _by_engine(
    rows: list[tuple[str, str]] | None, engine_ids: list[str]
) -> dict[str, tuple[str, ...] | None] | None:
    """Rows grouped by engine; an engine past SHARE_LIMIT gets None (it reads for itself)."""
    if rows is None:
        return None
    grouped: dict[str, list[str]] = defaultdict(list)
    for engine_id, workflow_id in rows:
        grouped[engine_id].append(workflow_id)
    return {engine_id: ids_within_limit(grouped.get(engine_id, [])) for engine_id in engine_ids}
