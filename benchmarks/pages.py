"""Pages: the claims page, every live fragment and /metrics, rendered server-side with
100,000 claims and 50 engines, through Django's test Client as a logged-in operator.

Server time is the wall time of ``Client.get`` in this process: URL resolution, middleware
(sessions, auth, CSRF, htmx, Prometheus), the view's queries and the template render; no
network and no browser. The test environment's template instrumentation (a signal per
render that the Client answers by copying the context) is switched off while timing, as
production has none.
"""

from __future__ import annotations

import datetime as dt
import gc
import logging
import math
import random
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.contrib.auth.models import Permission, User
from django.db import connection
from django.test import Client, override_settings
from django.test.utils import CaptureQueriesContext

from claims.fleet_clock import fleet_clock
from claims.models import (
    BackfillJob,
    BackfillStatus,
    ClaimCounter,
    ClaimEvent,
    CounterName,
    Engine,
    EngineSession,
    EngineStatus,
    FleetSnapshot,
    PendingRedrive,
    ReclaimCursor,
    VisibilityWatermark,
    Workflow,
    WorkflowClaim,
    WorkflowStatus,
    WorkflowVisibility,
)
from claims.protocol.pass_histogram import BUCKETS_S
from claims.protocol.reclaim import CURSOR_NAME
from claims.selectors.claim_order import SORT_KEYS, ClaimSort, encode_cursor

from .report import Section, Target, Timing, fmt
from .seed import add_parked, clear
from .setup import analyze, bulk_insert, timed_ms

CLAIMS = 100_000
ENGINES = 50
DEAD_ENGINES = 3
DISPOSING_ENGINES = 1
HELD_LIVE = 40_000  # running, held by a live engine, well inside the TTL
IN_GRACE = 500  # running, past expires_at but inside the grace
EXPIRED = 1_000  # running, held by a dead engine, past the grace
INVALID = 50  # running, a malformed holder
OWNERLESS_RUNNING = 200  # running, claim row without holder (stranded)
UNINDEXED = 300  # no visibility row
EVENTS_PER_FEATURED = 80  # the workflow whose detail fragments are measured
REDRIVES = 40
WARMUP = 3
REPS = 30
SNAPSHOT_REPS = 10
UNBOUNDED_REPS = 5
FRAGMENT_TARGET_MS = 50.0
METRICS_TARGET_MS = 100.0
SEED = 20_260_612
MINUTE_MS = 60_000


@dataclass(frozen=True)
class Endpoint:
    key: str
    label: str
    path: str
    target: str | None  # the HX-Target of a fragment request; None: a full page or /metrics
    limit_ms: float
    # Several views read the fleet snapshot beat takes every renew interval: "fresh" takes
    # one first, as beat would have; "none" deletes it (they then count for themselves).
    snapshot: str = "fresh"
    binding: bool = True
    # The answers that count as served: a hostile search may be refused (400).
    statuses: tuple[int, ...] = (200,)
    # Settings the endpoint is measured under, e.g. a smaller search budget.
    overrides: tuple[tuple[str, Any], ...] = ()


@dataclass
class Fleet:
    engines: list[str]
    live_engines: list[str]
    featured: str
    expired_holder: str


def _engine_ids() -> list[str]:
    rng = random.Random(SEED)
    return [f"{rng.getrandbits(128):032x}"[:8] + f"-bench-{n:02d}" for n in range(ENGINES)]


def _pass_summary(rng: random.Random, now: int) -> dict[str, Any]:
    def histogram() -> dict[str, Any]:
        counts = [rng.randint(0, 500) for _ in range(len(BUCKETS_S) + 1)]
        return {"counts": counts, "sum": round(sum(counts) * 0.01, 3)}

    return {
        "renew": {"renewed": 2_000, "failed": 0, "at_ms": now - 1_000, "duration_ms": 40.0},
        "reclaim": {
            "status": "completed",
            "reclaimed": 3,
            "attempted": 5,
            "errors": 0,
            "candidates": {
                "stale_holders": 4,
                "unheld_indexed": 1,
                "authoritative_scan": 0,
                "pending_redrives": 2,
            },
            "scanned": 500,
            "wrapped": False,
            "at_ms": now - 2_000,
            "duration_ms": 25.0,
        },
        "wake": {"driven": 2, "at_ms": now - 1_500, "duration_ms": 1.0},
        "histograms": {name: histogram() for name in ("renew", "reclaim", "wake")},
    }


def _clear() -> None:
    clear()  # the tables a fleet lives in, by TRUNCATE on PostgreSQL
    for model in (
        ReclaimCursor,
        PendingRedrive,
        ClaimCounter,
        Engine,
        BackfillJob,
        VisibilityWatermark,
        FleetSnapshot,
    ):
        model.objects.all().delete()
    User.objects.filter(username="bench-operator").delete()


def _arrange(sessions: bool = False, parked: int = 0) -> tuple[Fleet, dict[str, Any]]:
    """100,000 workflows, each with a claim row: 40,000 held live by 46 engines, some in
    grace, expired (held by the dead engines), invalid or stranded, the rest finished;
    and ``parked`` more, running and held live by the live engines (loaded in SQL).

    With ``sessions`` (the engine-lease mode) every holder names session 1 of its engine and
    stores no expiry: the live engines' sessions are live, the disposing engine's is in
    grace (the in-grace claims are its), the dead engines' expired long ago."""
    _clear()
    started = time.perf_counter()
    rng = random.Random(SEED)
    now = fleet_clock()()
    engines = _engine_ids()
    dead = engines[:DEAD_ENGINES]
    disposing = engines[DEAD_ENGINES : DEAD_ENGINES + DISPOSING_ENGINES]
    live = engines[DEAD_ENGINES + DISPOSING_ENGINES :]
    Engine.objects.bulk_create(
        Engine(
            engine_id=engine_id,
            hostname=f"host-{n % 5}",
            pid=1_000 + n,
            queue=f"engine.{engine_id}",
            started_at_ms=now - 3_600_000,
            heartbeat_at_ms=now - (20 * MINUTE_MS if engine_id in dead else 1_000),
            clock_skew_ms=rng.randint(-40, 40),
            clock_error_ms=1,
            status=(
                EngineStatus.DEAD
                if engine_id in dead
                else EngineStatus.DISPOSING
                if engine_id in disposing
                else EngineStatus.ACTIVE
            ),
            held_count=(HELD_LIVE + parked) // len(live),
            version="0.1.0",
            pass_summary=_pass_summary(rng, now),
        )
        for n, engine_id in enumerate(engines)
    )
    ids = [f"wf-{n:06d}" for n in range(CLAIMS)]
    order = list(range(CLAIMS))
    rng.shuffle(order)
    cuts = {}
    position = 0
    for kind, count in (
        ("live", HELD_LIVE),
        ("grace", IN_GRACE),
        ("expired", EXPIRED),
        ("invalid", INVALID),
        ("stranded", OWNERLESS_RUNNING),
    ):
        cuts[kind] = sorted(order[position : position + count])
        position += count
    kind_of = {n: kind for kind, members in cuts.items() for n in members}
    status = {
        n: WorkflowStatus.RUNNING
        if n in kind_of
        else (WorkflowStatus.COMPLETED if rng.random() < 0.8 else WorkflowStatus.FAILED)
        for n in range(CLAIMS)
    }
    created = now - 86_400_000
    bulk_insert(
        Workflow,
        [
            Workflow(
                workflow_id=ids[n],
                workflow_type=("order", "invoice", "ledger")[n % 3],
                status=status[n],
                state={"input": {"items": n % 7}, "steps": {}},
                created_at_ms=created + n,
                updated_at_ms=created + n,
            )
            for n in range(CLAIMS)
        ],
    )
    hidden = set(rng.sample(range(CLAIMS), UNINDEXED))
    bulk_insert(
        WorkflowVisibility,
        [
            WorkflowVisibility(
                workflow_id=ids[n],
                status=status[n],
                workflow_type=("order", "invoice", "ledger")[n % 3],
                updated_at_ms=created + n,
            )
            for n in range(CLAIMS)
            if n not in hidden
        ],
    )

    def claim(n: int) -> WorkflowClaim:
        epoch = 1 + n % 5
        kind = kind_of.get(n)
        row = WorkflowClaim(workflow_id=ids[n], epoch=epoch)
        if kind is None or kind == "stranded":
            return row
        engine = dead[n % len(dead)] if kind == "expired" else live[n % len(live)]
        expires = {
            "live": now + 10 * MINUTE_MS + n % 20_000,
            "grace": now - 2_000,
            "expired": now - 10 * MINUTE_MS,
            "invalid": now + MINUTE_MS,
        }[kind]
        row.holder_engine_id = engine
        row.holder_epoch = epoch + 1 if kind == "invalid" else epoch  # a mismatch: invalid
        row.holder_expires_at_ms = expires
        row.holder_claimed_at_ms = expires - 30_000
        if sessions:
            if kind == "grace":
                row.holder_engine_id = disposing[0]
            row.holder_expires_at_ms, row.holder_session_epoch = None, 1
        return row

    if sessions:
        session_expiry = {
            **dict.fromkeys(live, now + 10 * MINUTE_MS),
            **dict.fromkeys(disposing, now - 2_000),
            **dict.fromkeys(dead, now - 10 * MINUTE_MS),
        }
        EngineSession.objects.bulk_create(
            EngineSession(
                engine_id=engine_id,
                epoch=1,
                expires_at_ms=expires,
                renewed_at_ms=expires - 30_000,
                started_at_ms=now - 3_600_000,
            )
            for engine_id, expires in session_expiry.items()
        )

    bulk_insert(WorkflowClaim, [claim(n) for n in range(CLAIMS)])
    featured = ids[cuts["live"][len(cuts["live"]) // 2]]
    events = [
        ClaimEvent(
            workflow_id=ids[n],
            kind="acquired",
            epoch_before=None,
            epoch_after=1 + n % 5,
            engine_id=live[n % len(live)],
            at_ms=now - 3_600_000 + n,
        )
        for n in cuts["live"]
    ]
    events += [
        ClaimEvent(
            workflow_id=featured,
            kind=("takeover", "deposed", "forced_release", "acquired")[i % 4],
            epoch_before=i,
            epoch_after=i + 1,
            engine_id=live[i % len(live)],
            actor="alice" if i % 4 == 2 else None,
            reason="bench" if i % 4 == 2 else "",
            at_ms=now - (EVENTS_PER_FEATURED - i) * MINUTE_MS,
        )
        for i in range(EVENTS_PER_FEATURED)
    ]
    bulk_insert(ClaimEvent, events)
    PendingRedrive.objects.bulk_create(
        PendingRedrive(
            engine_id=live[i % len(live)],
            workflow_id=ids[cuts["live"][i]],
            epoch=1 + cuts["live"][i] % 5,
            attempts=1 + i % 4,
            last_error="OperationalError: could not serialize access",
            first_failed_at_ms=now - i * 10_000,
            last_failed_at_ms=now - 1_000,
        )
        for i in range(REDRIVES)
    )
    ClaimCounter.objects.bulk_create(
        ClaimCounter(engine_id=engine_id, name=name, value=rng.randint(0, 100_000))
        for engine_id in engines
        for name in CounterName.values
    )
    ReclaimCursor.objects.create(
        name=CURSOR_NAME,
        last_workflow_id=ids[CLAIMS // 3],
        wraps=7,
        scanned_total=7 * CLAIMS + CLAIMS // 3,
        updated_at_ms=now - 2_000,
        updated_by=live[0],
    )
    moment = dt.datetime.fromtimestamp(now / 1000, tz=dt.UTC)
    BackfillJob.objects.bulk_create(
        BackfillJob(
            status=BackfillStatus.SUCCEEDED,
            requested_by="alice",
            run_at=moment - dt.timedelta(days=i + 1),
            started_at=moment - dt.timedelta(days=i + 1),
            finished_at=moment - dt.timedelta(days=i + 1) + dt.timedelta(minutes=3),
            processed=CLAIMS,
            inserted=10,
            total_estimate=CLAIMS,
        )
        for i in range(3)
    )
    VisibilityWatermark.objects.create(pk=1, version=3, built_at_ms=now - 86_400_000)
    if parked:
        add_parked(parked, live, now_ms=now, sessions=sessions)
    analyzed = analyze()
    fleet = Fleet(engines, live, featured, dead[0])
    return fleet, {"load_s": round(time.perf_counter() - started, 1), "analyzed": analyzed}


def _endpoints(fleet: Fleet) -> list[Endpoint]:
    f, m = FRAGMENT_TARGET_MS, METRICS_TARGET_MS
    workflow = f"/workflows/{fleet.featured}/"
    engine = f"/engines/{fleet.live_engines[0]}/"
    return [
        Endpoint("claims_page", "claims page (full)", "/claims/", None, f),
        Endpoint("claims_table", "claims table", "/claims/", "claims-table", f),
        Endpoint(
            "claims_page_3",
            "  page after wf-050000",
            "/claims/?cursor=wf-050000",
            "claims-table",
            f,
        ),
        Endpoint(
            "claims_engine",
            "  engine filter",
            f"/claims/?engine={fleet.live_engines[3]}",
            "claims-table",
            f,
        ),
        Endpoint("claims_prefix", "  prefix wf-0777", "/claims/?prefix=wf-0777", "claims-table", f),
        Endpoint("claims_expired", "  state=expired", "/claims/?state=expired", "claims-table", f),
        Endpoint(
            "claims_invalid",
            "  state=invalid (50 rows)",
            "/claims/?state=invalid",
            "claims-table",
            f,
        ),
        *_claims_sort_endpoints(),
        *_workflow_list_endpoints(),
        *_with_and_without_snapshot("overview", "overview fragment", "/"),
        Endpoint("workflow_summary", "workflow summary", workflow, "workflow-summary", f),
        Endpoint("workflow_history", "workflow history", workflow, "workflow-history", f),
        *_with_and_without_snapshot("engines", "engines fragment", "/engines/"),
        Endpoint("engine", "engine fragment", engine, "engine-live", f),
        Endpoint("reclaim", "reclaim fragment", "/reclaim/", "reclaim-live", f),
        Endpoint("redrives", "re-drives fragment", "/redrives/", "redrives-live", f),
        Endpoint("backfills", "backfills fragment", "/backfills/", "backfills-live", f),
        Endpoint("audit", "audit fragment", "/audit/", "audit-live", f),
        Endpoint("metrics", "/metrics", "/metrics", None, m),
    ]


def _with_and_without_snapshot(key: str, label: str, path: str) -> list[Endpoint]:
    """A fragment that reads beat's fleet snapshot (the overview's counts, the engines'
    holdings): with a fresh one, as in production, and for reference with none, when it
    counts on every request (beat down)."""
    target = f"{key}-live"
    return [
        Endpoint(key, label, path, target, FRAGMENT_TARGET_MS),
        Endpoint(
            f"{key}_no_snapshot",
            "  with no fresh snapshot",
            path,
            target,
            FRAGMENT_TARGET_MS,
            snapshot="none",
            binding=False,
        ),
    ]


def _workflow_list_endpoints() -> list[Endpoint]:
    """The workflows page over 100,000 workflows: whole, its table, a status, a type, a
    time range, each sort, and a page deep inside one."""
    f = FRAGMENT_TARGET_MS
    since = "2000-01-01T00:00"

    def table(key: str, label: str, query: str) -> Endpoint:
        return Endpoint(key, label, f"/workflows/{query}", "workflows-live", f)

    return [
        Endpoint("workflows_page", "workflows page (full)", "/workflows/", None, f),
        table("workflows_table", "workflows table", ""),
        table("workflows_failed", "  status=failed", "?status=failed"),
        table("workflows_type", "  type=ledger, status=running", "?type=ledger&status=running"),
        table("workflows_since", "  created since (a range)", f"?time=created&since={since}"),
        table("workflows_created", "  sort=created", "?sort=created"),
        table("workflows_id", "  sort=id", "?sort=id"),
        table("workflows_deep", "  sort=id, deep page", "?sort=id&cursor=wf-050000"),
    ]


def _claims_sort_endpoints() -> list[Endpoint]:
    """Every sort of the claims table both ways, every claim (state=all) and the default
    scope, substring searches (common and rare), and a page deep inside a sort."""
    f = FRAGMENT_TARGET_MS
    deep = encode_cursor(
        ClaimSort.parse("expires_at"), fleet_clock()() + 10 * MINUTE_MS + 10_000, "wf-050000"
    )
    sorts = [
        Endpoint(
            f"claims_sort_{key.replace('-', 'desc_')}",
            f"  sort={key}",
            f"/claims/?state=all&sort={key}",
            "claims-table",
            f,
        )
        for key in SORT_KEYS
    ]
    return [
        Endpoint(
            "claims_all", "  state=all (every claim)", "/claims/?state=all", "claims-table", f
        ),
        *sorts,
        Endpoint(
            "claims_sort_state_attention",
            "  sort=-state, attention",
            "/claims/?sort=-state",
            "claims-table",
            f,
        ),
        Endpoint(
            "claims_sort_deep",
            "  sort=expires_at, deep page",
            f"/claims/?state=all&sort=expires_at&cursor={deep}",
            "claims-table",
            f,
        ),
        Endpoint(
            "claims_search", "  search q=0777", "/claims/?state=all&q=0777", "claims-table", f
        ),
        Endpoint(
            "claims_search_rare",
            "  search q=99999 (1 row)",
            "/claims/?state=all&q=99999",
            "claims-table",
            f,
        ),
        Endpoint(
            "claims_search_none",
            "  search q=nomatch (0 rows)",
            "/claims/?state=all&q=nomatch",
            "claims-table",
            f,
        ),
        Endpoint(
            "claims_search_sorted",
            "  search q=77 sort=-claimed_at",
            "/claims/?q=77&sort=-claimed_at",
            "claims-table",
            f,
        ),
        *_hostile_search_endpoints(),
    ]


# Three distinct pieces in 252 characters: refused by its shape before any read.
REPEATED_SEARCH = "wf-" * 84
# Three pieces every id holds, in 15 characters (too short to refuse by shape): the trigram
# index rules out no id, and every id is checked against the fragment.
BROAD_SEARCH = "wf-" * 5
SMALL_SEARCH_BUDGET_MS = 100


def _hostile_search_endpoints() -> list[Endpoint]:
    """Searches built to read every id. Every answer is bounded: refused at once, or within
    the search budget (WEFTBOARD_SEARCH_TIMEOUT_MS) plus a page's own time."""
    budget = float(settings.WEFTBOARD_SEARCH_TIMEOUT_MS)
    small = SMALL_SEARCH_BUDGET_MS

    def search(key: str, label: str, q: str, limit_ms: float, **fields: Any) -> Endpoint:
        path = f"/claims/?state=all&q={q}"
        return Endpoint(key, label, path, "claims-table", limit_ms, **fields)

    return [
        search(
            "claims_search_repeated",
            "  hostile: q='wf-' x 84 (refused)",
            REPEATED_SEARCH,
            FRAGMENT_TARGET_MS,
            statuses=(400,),
        ),
        search(
            "claims_search_broad",
            f"  hostile: q={BROAD_SEARCH} (no id ruled out)",
            BROAD_SEARCH,
            budget + FRAGMENT_TARGET_MS,
            statuses=(200, 400),
        ),
        search(
            "claims_search_small_budget",
            f"    the same with a {small} ms budget",
            BROAD_SEARCH,
            small + FRAGMENT_TARGET_MS,
            statuses=(200, 400),
            overrides=(("WEFTBOARD_SEARCH_TIMEOUT_MS", small),),
        ),
    ]


def _unbounded_repeated_lookup() -> Timing:
    """For reference: what the refused fragment's read would cost without the bounds (the
    id lookup on PostgreSQL, the scan of the claim rows on SQLite), straight to the
    database with no limit."""
    if connection.vendor == "postgresql":
        sql = "SELECT workflow_id FROM claims_claimidsearch WHERE workflow_id LIKE %s LIMIT 1001"
        param = f"%{REPEATED_SEARCH}%"
    else:
        sql = (
            "SELECT workflow_id FROM claims_workflowclaim WHERE instr(workflow_id, %s) > 0 LIMIT 51"
        )
        param = REPEATED_SEARCH

    def lookup() -> None:
        with connection.cursor() as cursor:
            cursor.execute(sql, [param])
            cursor.fetchall()

    lookup()
    return Timing(tuple(timed_ms(lookup)[0] for _ in range(UNBOUNDED_REPS)))


@contextmanager
def _production_templates() -> Iterator[None]:
    """Undo setup_test_environment()'s template instrumentation for the block."""
    from django.template.base import Template
    from django.test import utils

    saved = getattr(getattr(utils, "_TestState", None), "saved_data", None)
    original = getattr(saved, "template_render", None)
    instrumented = getattr(Template, "_render")  # noqa: B009 (private to Django)
    if original is not None:
        setattr(Template, "_render", original)  # noqa: B010 (a method swap)
    try:
        yield
    finally:
        setattr(Template, "_render", instrumented)  # noqa: B010


def _operator() -> User:
    user = User.objects.create_user("bench-operator", password=None, is_staff=True)
    user.user_permissions.set(
        Permission.objects.filter(
            content_type__app_label="claims",
            codename__in=[
                "force_claim",
                "cancel_workflow",
                "suspend_workflow",
                "schedule_backfill",
            ],
        )
    )
    return user


def _headers(endpoint: Endpoint) -> dict[str, str]:
    if endpoint.target is None:
        return {}
    return {"HX-Request": "true", "HX-Target": endpoint.target}


def _request(client: Client, endpoint: Endpoint) -> Any:
    response = client.get(endpoint.path, headers=_headers(endpoint))
    if response.status_code not in endpoint.statuses:
        raise RuntimeError(f"{endpoint.path} ({endpoint.target}) answered {response.status_code}")
    return response


def p95(samples: tuple[float, ...]) -> float:
    """Nearest-rank 95th percentile."""
    ordered = sorted(samples)
    return ordered[max(0, math.ceil(0.95 * len(ordered)) - 1)]


def _take_snapshot() -> None:
    from claims.conf import claim_timing
    from claims.services.engines import fleet_snapshot_take

    fleet_snapshot_take(now_ms=fleet_clock()(), timing=claim_timing())


def _keep_alive(fleet: Fleet) -> None:
    """What the live engines write every renew interval: a heartbeat, and in the engine-lease
    mode a renewed session; without them they would turn silent (and their sessions lapse)
    while the endpoints are measured, and the pages would be measured for a dying fleet."""
    now = fleet_clock()()
    alive = fleet.engines[DEAD_ENGINES:]  # the live ones and the disposing one
    Engine.objects.filter(engine_id__in=alive).update(heartbeat_at_ms=now - 1_000)
    EngineSession.objects.filter(engine_id__in=fleet.live_engines).update(
        expires_at_ms=now + 10 * MINUTE_MS, renewed_at_ms=now - 1_000
    )


def _prepare(fleet: Fleet, endpoint: Endpoint) -> None:
    _keep_alive(fleet)
    if endpoint.snapshot == "fresh":
        _take_snapshot()
    elif endpoint.snapshot == "none":
        FleetSnapshot.objects.all().delete()


def _snapshot_timing() -> Timing:
    """What beat's claims.fleet_snapshot costs (it runs once per renew interval)."""
    for _ in range(WARMUP):
        _take_snapshot()
    return Timing(tuple(timed_ms(_take_snapshot)[0] for _ in range(SNAPSHOT_REPS)))


@dataclass(frozen=True)
class Measured:
    timing: Timing
    statements: int  # queries of one request
    size: int  # bytes of one answer
    statuses: dict[int, int]  # how many timed requests answered each status

    def answered(self) -> str:
        """The statuses when not all 200, e.g. "400 x30", for the table."""
        if set(self.statuses) == {200}:
            return ""
        return " [" + ", ".join(f"{code} x{n}" for code, n in sorted(self.statuses.items())) + "]"


def _measure(client: Client, fleet: Fleet, endpoint: Endpoint) -> Measured:
    with override_settings(**dict(endpoint.overrides)), _quiet_stopped_searches():
        return _measure_as_set(client, fleet, endpoint)


@contextmanager
def _quiet_stopped_searches() -> Iterator[None]:
    """The warning each stopped search logs would bury the tables; the table counts them."""
    reads = logging.getLogger("weftboard.reads")
    level = reads.level
    reads.setLevel(logging.ERROR)
    try:
        yield
    finally:
        reads.setLevel(level)


def _measure_as_set(client: Client, fleet: Fleet, endpoint: Endpoint) -> Measured:
    # Well inside the snapshot's freshness (2 renew intervals): the whole measure takes ~1 s.
    _prepare(fleet, endpoint)
    for _ in range(WARMUP):
        _request(client, endpoint)
    with CaptureQueriesContext(connection) as queries:
        response = _request(client, endpoint)
    # Counted now: the log is cleared at the start of every later request.
    statements = len(queries.captured_queries)
    body = response.content
    if endpoint.target is not None and b"<html" in body:
        raise RuntimeError(f"{endpoint.path} answered a full page to a fragment request")
    samples = []
    statuses: dict[int, int] = {}
    gc.collect()
    for _ in range(REPS):
        started = time.perf_counter()
        status = _request(client, endpoint).status_code
        samples.append((time.perf_counter() - started) * 1_000)
        statuses[status] = statuses.get(status, 0) + 1
    return Measured(Timing(tuple(samples)), statements, len(body), statuses)


def run(
    *, binding: bool, sessions: bool = False, parked: int = 0
) -> tuple[dict[str, Any], Section, list[Target]]:
    """Every endpoint over the arranged fleet; ``sessions``: in the engine-lease mode;
    ``parked``: that many more running workflows, held live (900,000: a million claims)."""
    fleet, setup = _arrange(sessions, parked)
    client = Client()
    client.force_login(_operator())
    results: list[tuple[Endpoint, Measured]] = []
    # One operator reads far faster than the read limit allows a person.
    with _production_templates(), override_settings(WEFTBOARD_READ_RATE="off"):
        for endpoint in _endpoints(fleet):
            results.append((endpoint, _measure(client, fleet, endpoint)))
    snapshot = _snapshot_timing()
    unbounded = _unbounded_repeated_lookup()

    mode = "ENGINE-LEASE MODE, " if sessions else ""
    section = Section(
        f"PAGES  {mode}{CLAIMS + parked:,} claims ({HELD_LIVE + parked:,} held live, "
        f"{IN_GRACE} in grace, "
        f"{EXPIRED:,} expired, {INVALID} invalid), {ENGINES} engines: server time per request, "
        f"{REPS} requests each",
        ("", "median ms", "p95 ms", "min-max", "target", "vs target", "queries", "KB"),
    )
    targets: list[Target] = []
    for endpoint, measured in results:
        timing = measured.timing
        section.rows.append(
            (
                endpoint.label + measured.answered(),
                fmt(timing.median),
                fmt(p95(timing.samples_ms)),
                timing.spread(),
                f"< {endpoint.limit_ms:g} ms",
                f"{timing.median / endpoint.limit_ms:.2f}",
                str(measured.statements),
                f"{measured.size / 1024:.1f}",
            )
        )
        targets.append(
            Target(
                f"pages{'_sessions' if sessions else ''}{'_large' if parked else ''}."
                f"{endpoint.key}",
                f"{endpoint.label.strip()} median",
                timing.median,
                endpoint.limit_ms,
                "ms",
                binding and endpoint.binding,
            )
        )
    for label, timing in (
        ("beat's fleet snapshot (no request)", snapshot),
        ("q='wf-' x 84 read unbounded (reference)", unbounded),
    ):
        row = (label, fmt(timing.median), fmt(p95(timing.samples_ms)), timing.spread())
        section.rows.append((*row, "", "", "", ""))
    section.notes.append(
        "Django's test Client as a logged-in operator (session auth, every middleware); "
        "fragments are HTMX requests (HX-Request, HX-Target) as the pages' polls send them; "
        f"{WARMUP} warm-up requests each; queries and KB from one request"
    )
    section.notes.append(
        f"targets: claims page and every live fragment < {FRAGMENT_TARGET_MS:g} ms median, "
        f"/metrics < {METRICS_TARGET_MS:g} ms median; the p95 column is reported, not judged"
    )
    section.notes.append(
        "the overview, the engines, an engine, the workflows page and the reclaim page read "
        "counts from the fleet snapshot beat takes every renew interval; each endpoint is "
        "measured with a fresh one, as in production, and the live engines' heartbeats "
        "(and sessions) renewed; 'with no fresh snapshot' (beat down) counts on every "
        f"request and is reported for reference; the snapshot itself is timed over "
        f"{SNAPSHOT_REPS} runs"
    )
    section.notes.append(
        "hostile searches: 'wf-' x 84 is refused before any read (400); its read without "
        f"the bounds is timed for reference ({UNBOUNDED_REPS} runs, straight to the "
        f"database); {BROAD_SEARCH} makes every id a candidate of the trigram index and "
        "is stopped at the search budget, WEFTBOARD_SEARCH_TIMEOUT_MS="
        f"{settings.WEFTBOARD_SEARCH_TIMEOUT_MS} (400), unless it ends first (200), and is "
        f"also measured under a {SMALL_SEARCH_BUDGET_MS} ms budget; [status x n] counts "
        "the timed answers"
    )
    section.notes.append(
        f"setup {setup['load_s']:.1f} s"
        + ("; ANALYZE after load" if setup["analyzed"] else "; no ANALYZE (SQLite default)")
    )
    payload = {
        "mode": "engine-lease" if sessions else "workflow-lease",
        "claims": CLAIMS + parked,
        "parked": parked,
        "engines": ENGINES,
        "reps": REPS,
        "setup": setup,
        "fleet_snapshot": snapshot.as_json(),
        "repeated_search_unbounded": unbounded.as_json(),
        "endpoints": [
            {
                "key": endpoint.key,
                "path": endpoint.path,
                "hx_target": endpoint.target,
                **measured.timing.as_json(),
                "p95_ms": round(p95(measured.timing.samples_ms), 3),
                "queries": measured.statements,
                "bytes": measured.size,
                "limit_ms": endpoint.limit_ms,
                "statuses": {str(code): n for code, n in measured.statuses.items()},
            }
            for endpoint, measured in results
        ],
    }
    return payload, section, targets
