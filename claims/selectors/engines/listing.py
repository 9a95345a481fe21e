"""Engines as the fleet sees them: liveness, skew, counters, passes, and what each holds."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from django.db.models import Case, Count, IntegerField, Value, When, Window

from claims.models import (
    ClaimCounter,
    ClaimEvent,
    CounterName,
    Engine,
    EngineStatus,
    PendingRedrive,
    WorkflowClaim,
)
from claims.protocol.pass_histogram import BUCKETS_S
from claims.protocol.sessions import SessionRow
from claims.protocol.states import CLAIM_STATES, ClaimState
from claims.protocol.timing import ClaimTiming
from claims.selectors.claims.state_counts import claims_by_state
from claims.selectors.fleet.snapshot import snapshot_engine_states, snapshot_holdings

from .health import SILENT, silent_holdings_of
from .liveness import LATE_INTERVALS, LIVE_ENGINE_STATUSES
from .passes import PASS_NAMES, pass_part
from .sessions import session_of, with_sessions

ENGINE_LIMIT = 200
RECENT_EVENTS = 25
RECENT_WINDOW_MS = 3_600_000
STATUS_ORDER = (
    EngineStatus.ACTIVE,
    EngineStatus.DISPOSING,
    EngineStatus.DEAD,
    EngineStatus.STOPPED,
)


@dataclass(frozen=True)
class PassView:
    name: str
    at_ms: int | None
    duration_ms: float | None
    late: bool
    details: dict[str, Any]


@dataclass(frozen=True)
class EngineRow:
    engine: Engine
    holding: int  # claim rows naming this engine as holder, as stored now
    counters: dict[str, int]
    passes: list[PassView]
    heartbeat_late: bool
    skew_over: bool
    # Silent: live by status, but no heartbeat for TTL + 2 x renew interval (engines.health).
    silent: bool = False
    takeover_at_ms: int | None = None  # when a silent engine's last claim can be taken over
    # Its session lease in the engine-lease mode (None in the workflow-lease mode).
    session: SessionRow | None = None

    @property
    def live(self) -> bool:
        return self.engine.status in LIVE_ENGINE_STATUSES

    @property
    def display_status(self) -> str:
        """The status shown: the stored one, or ``silent``."""
        return SILENT if self.silent else self.engine.status


@dataclass(frozen=True)
class EngineList:
    rows: list[EngineRow]
    total: int
    capped: bool
    as_of_ms: int

    @property
    def live_rows(self) -> list[EngineRow]:
        """Active and disposing engines, silent ones included: shown first."""
        return [row for row in self.rows if row.live]

    @property
    def history_rows(self) -> list[EngineRow]:
        """Stopped and dead engines, folded into the page's history section."""
        return [row for row in self.rows if not row.live]


@dataclass(frozen=True)
class HistogramBar:
    bound: str
    count: int
    pct: float


@dataclass(frozen=True)
class EngineDetail:
    row: EngineRow
    claims_by_state: dict[ClaimState, int]
    histograms: dict[str, list[HistogramBar]]
    redrives: list[PendingRedrive]
    events: list[ClaimEvent]
    as_of_ms: int
    extra: dict[str, Any] = field(default_factory=dict)


def _passes(engine: Engine, now_ms: int, timing: ClaimTiming) -> list[PassView]:
    late_before = now_ms - LATE_INTERVALS * timing.renew_interval_ms
    views = []
    for name in PASS_NAMES:
        part = pass_part(engine.pass_summary, name)
        at = part.get("at_ms")
        details = {k: v for k, v in part.items() if k not in {"at_ms", "duration_ms"}}
        views.append(
            PassView(
                name,
                at,
                part.get("duration_ms"),
                engine.status in LIVE_ENGINE_STATUSES
                and (at or engine.heartbeat_at_ms) < late_before,
                details,
            )
        )
    return views


def _rows(engines: Sequence[Engine], now_ms: int, timing: ClaimTiming) -> list[EngineRow]:
    ids = [engine.engine_id for engine in engines]
    names = CounterName.values
    counters: dict[str, dict[str, int]] = {i: dict.fromkeys(names, 0) for i in ids}
    for engine_id, name, value in ClaimCounter.objects.filter(engine_id__in=ids).values_list(
        "engine_id", "name", "value"
    ):
        counters[engine_id][name] = value
    holding = _holdings(ids, now_ms, timing)
    late_before = now_ms - LATE_INTERVALS * timing.renew_interval_ms
    silent = silent_holdings_of(list(engines), now_ms, timing)
    return [
        EngineRow(
            engine=engine,
            holding=holding.get(engine.engine_id, 0),
            counters=counters[engine.engine_id],
            passes=_passes(engine, now_ms, timing),
            heartbeat_late=engine.status in LIVE_ENGINE_STATUSES
            and engine.heartbeat_at_ms < late_before,
            skew_over=engine.clock_skew_ms is not None
            and abs(engine.clock_skew_ms) > timing.safe_skew_ms,
            silent=engine.engine_id in silent,
            takeover_at_ms=(
                silent[engine.engine_id].takeover_at_ms if engine.engine_id in silent else None
            ),
            session=session_of(engine),
        )
        for engine in engines
    ]


def _holdings(ids: list[str], now_ms: int, timing: ClaimTiming) -> dict[str, int]:
    """Claim rows naming each engine as holder: as beat's fresh snapshot counted them (at
    most two renew intervals old, as the overview's), or counted now without one."""
    counted = snapshot_holdings(now_ms=now_ms, timing=timing)
    if counted is not None:
        return {engine_id: counted.get(engine_id, 0) for engine_id in ids}
    # COUNT(*) reads no column, so PostgreSQL may count from the holder index alone
    # (an index-only scan) wherever the visibility map lets it skip the table.
    rows = (
        WorkflowClaim.objects.filter(holder_engine_id__in=ids)
        .values("holder_engine_id")
        .annotate(n=Count("*"))
        .order_by()
        .values_list("holder_engine_id", "n")
    )
    return {str(engine_id): int(n) for engine_id, n in rows}


def engines_with_sessions(*, status: str | None = None) -> list[Engine]:
    """Every engine (a fleet is tens, not thousands), in id order, with its session: the
    API's listing, which judges silence itself; one query."""
    engines = with_sessions(Engine.objects.order_by("engine_id"))
    if status:
        engines = engines.filter(status=status)
    return list(engines)


def engine_list(*, now_ms: int, timing: ClaimTiming, status: str | None = None) -> EngineList:
    """Live engines first, then the dead, then the stopped, newest first within each, so
    rows keep their place across refreshes; three queries with a fresh fleet snapshot, four
    without, and one more when some are silent."""
    order = Case(
        *(When(status=s, then=Value(i)) for i, s in enumerate(STATUS_ORDER)),
        default=Value(len(STATUS_ORDER)),
        output_field=IntegerField(),
    )
    rows = with_sessions(Engine.objects.all())
    if status:
        rows = rows.filter(status=status)
    engines = list(
        rows.annotate(status_order=order)
        .order_by("status_order", "-started_at_ms", "engine_id")
        .annotate(total=Window(Count("pk")))[:ENGINE_LIMIT]
    )
    total = engines[0].total if engines else 0
    return EngineList(_rows(list(engines), now_ms, timing), total, total > len(engines), now_ms)


def live_engine_statuses() -> dict[str, str]:
    """Active and disposing engines by id, in id order; one query."""
    return dict(
        Engine.objects.filter(status__in=LIVE_ENGINE_STATUSES)
        .order_by("engine_id")
        .values_list("engine_id", "status")
    )


def live_engine_ids() -> list[str]:
    """Engines that can take a forced claim: active and not draining (a disposing engine is
    leaving; a draining one would release the claim at its next tick)."""
    return list(
        Engine.objects.filter(status=EngineStatus.ACTIVE, drain_requested_at_ms__isnull=True)
        .order_by("engine_id")
        .values_list("engine_id", flat=True)
    )


def _claims_by_state_of(engine_id: str, now_ms: int, timing: ClaimTiming) -> dict[ClaimState, int]:
    """An engine's claims per derived state: as beat's fresh snapshot counted them (at most
    two renew intervals old, as its holding column), or counted now without one."""
    counted = snapshot_engine_states(engine_id, now_ms=now_ms, timing=timing)
    if counted is None:
        held = WorkflowClaim.objects.filter(holder_engine_id=engine_id)
        return claims_by_state(held, now_ms, timing)
    return {state: counted.get(state, 0) for state in CLAIM_STATES}


def engine_detail(engine_id: str, *, now_ms: int, timing: ClaimTiming) -> EngineDetail | None:
    engine = with_sessions(Engine.objects.filter(engine_id=engine_id)).first()
    if engine is None:
        return None
    (row,) = _rows([engine], now_ms, timing)
    by_state = _claims_by_state_of(engine_id, now_ms, timing)
    histograms = {}
    summary = engine.pass_summary if isinstance(engine.pass_summary, dict) else {}
    for name in PASS_NAMES:
        data = (summary.get("histograms") or {}).get(name) or {}
        counts = data.get("counts") or []
        if len(counts) != len(BUCKETS_S) + 1:
            continue
        peak = max(counts) or 1
        bounds = [f"≤ {b * 1000:g} ms" if b < 1 else f"≤ {b:g} s" for b in BUCKETS_S]
        histograms[name] = [
            HistogramBar(bound, count, round(100 * count / peak, 1))
            for bound, count in zip([*bounds, "> 10 s"], counts, strict=True)
        ]
    events = list(
        ClaimEvent.objects.filter(
            engine_id=engine_id, at_ms__gte=engine.heartbeat_at_ms - RECENT_WINDOW_MS
        ).order_by("-at_ms", "-id")[:RECENT_EVENTS]
    )
    return EngineDetail(
        row=row,
        claims_by_state=by_state,
        histograms=histograms,
        redrives=list(
            PendingRedrive.objects.filter(engine_id=engine_id).order_by("first_failed_at_ms")[:50]
        ),
        events=events,
        as_of_ms=now_ms,
    )
