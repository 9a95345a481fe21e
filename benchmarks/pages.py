"""Pages: the claims page, every live fragment and /metrics, rendered server-side with
100,000 claims and 50 engines, through Django's test Client as a logged-in operator.

Server time is the wall time of ``Client.get`` in this process: URL resolution, middleware
(sessions, auth, CSRF, htmx, Prometheus), the view's queries and the template render; no
network and no browser. The test environment's template instrumentation (a signal per
render that the Client answers by copying the context) is switched off while timing, as
production has none.

Each endpoint's requests alternate with the calibration request's (``page_calibration``),
and the endpoint is judged by the median of its requests' times, each over the calibration
request's next to it: a ratio that a busy hour and a quiet one agree on, where the absolute
time does not (BENCHMARKS.md has both, measured).
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from statistics import median
from typing import Any

from django.conf import settings
from django.db import connection
from django.test import Client, override_settings
from django.test.utils import CaptureQueriesContext

from claims.models import FleetSnapshot
from claims.services.fleet_counts import RECOUNT_EVERY_MS

from . import page_calibration, pages_fleet
from .pages_endpoints import (
    BROAD_SEARCH,
    FRAGMENT,
    METRICS,
    QUIET_CALIBRATION_MS,
    SMALL_SEARCH_BUDGET_MS,
    UNBOUNDED_REPS,
    Endpoint,
    endpoints,
    unbounded_repeated_lookup,
)
from .pages_fleet import Fleet, arrange, keep_alive, operator, take_recount, take_snapshot
from .report import Section, Target, Timing, fmt, ratio
from .setup import collect_garbage, timed_ms

WARMUP = 3
REPS = 30
SNAPSHOT_REPS = 10
RECOUNT_REPS = 3
SNAPSHOT_LIMIT_MS = 250
CALIBRATION = Endpoint(
    "calibration", "calibration request", page_calibration.CALIBRATION_PATH, None, FRAGMENT
)


def _headers(endpoint: Endpoint) -> dict[str, str]:
    if endpoint.target is None:
        return {}
    return {"HX-Request": "true", "HX-Target": endpoint.target}


def _request(client: Client, endpoint: Endpoint) -> Any:
    response = client.get(endpoint.path, headers=_headers(endpoint))
    if response.status_code not in endpoint.statuses:
        raise RuntimeError(f"{endpoint.path} ({endpoint.target}) answered {response.status_code}")
    return response


def _timed_request(client: Client, endpoint: Endpoint) -> tuple[float, int]:
    started = time.perf_counter()
    status = _request(client, endpoint).status_code
    return (time.perf_counter() - started) * 1_000, status


def p95(samples: tuple[float, ...]) -> float:
    """Nearest-rank 95th percentile."""
    ordered = sorted(samples)
    return ordered[max(0, math.ceil(0.95 * len(ordered)) - 1)]


@dataclass(frozen=True)
class Measured:
    timing: Timing
    calibration: Timing  # the calibration requests interleaved with this endpoint's
    statements: int  # queries of one request
    size: int  # bytes of one answer
    statuses: dict[int, int]  # how many timed requests answered each status

    def ratios(self, endpoint: Endpoint) -> tuple[float, ...]:
        """Each of the endpoint's requests over the calibration request taken next to it:
        a pair shares the same seconds of the machine's load, which moves within a run too."""
        pairs = zip(self.timing.samples_ms, self.calibration.samples_ms, strict=True)
        return tuple(endpoint.budget.judged(ms, calibration) for ms, calibration in pairs)

    def ratio(self, endpoint: Endpoint) -> float:
        """What the endpoint is judged by: the median of its ratios."""
        return median(self.ratios(endpoint))

    def answered(self) -> str:
        """The statuses when not all 200, e.g. "400 x30", for the table."""
        if set(self.statuses) == {200}:
            return ""
        return " [" + ", ".join(f"{code} x{n}" for code, n in sorted(self.statuses.items())) + "]"


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


def _prepare(fleet: Fleet, endpoint: Endpoint) -> None:
    keep_alive(fleet)
    if endpoint.snapshot == "fresh":
        take_snapshot()
    elif endpoint.snapshot == "none":
        FleetSnapshot.objects.all().delete()


def _snapshot_timing() -> Timing:
    """What beat's claims.fleet_snapshot costs (it runs once per renew interval)."""
    for _ in range(WARMUP):
        take_snapshot()
    return Timing(tuple(timed_ms(take_snapshot)[0] for _ in range(SNAPSHOT_REPS)))


def _recount_timing() -> Timing:
    """What the snapshot costs when its periodic recount from the rows is due."""
    return Timing(tuple(timed_ms(take_recount)[0] for _ in range(RECOUNT_REPS)))


def _measure(client: Client, fleet: Fleet, endpoint: Endpoint) -> Measured:
    with override_settings(**dict(endpoint.overrides)), _quiet_stopped_searches():
        return _measure_as_set(client, fleet, endpoint)


def _measure_as_set(client: Client, fleet: Fleet, endpoint: Endpoint) -> Measured:
    # Well inside the snapshot's freshness (2 renew intervals): the whole measure takes ~2 s.
    _prepare(fleet, endpoint)
    for _ in range(WARMUP):
        _request(client, endpoint)
        _request(client, CALIBRATION)
    with CaptureQueriesContext(connection) as queries:
        response = _request(client, endpoint)
    # Counted now: the log is cleared at the start of every later request.
    statements = len(queries.captured_queries)
    body = response.content
    if endpoint.target is not None and b"<html" in body:
        raise RuntimeError(f"{endpoint.path} answered a full page to a fragment request")
    samples, calibration = [], []
    statuses: dict[int, int] = {}
    collect_garbage()
    for rep in range(REPS):
        # A pair in turn about, so neither request always follows the other.
        if rep % 2:
            calibration.append(_timed_request(client, CALIBRATION)[0])
        elapsed, status = _timed_request(client, endpoint)
        samples.append(elapsed)
        statuses[status] = statuses.get(status, 0) + 1
        if not rep % 2:
            calibration.append(_timed_request(client, CALIBRATION)[0])
    return Measured(
        Timing(tuple(samples)), Timing(tuple(calibration)), statements, len(body), statuses
    )


def run(
    *, binding: bool, sessions: bool = False, parked: int = 0
) -> tuple[dict[str, Any], Section, list[Target]]:
    """Every endpoint over the arranged fleet; ``sessions``: in the engine-lease mode;
    ``parked``: that many more running workflows, held live (900,000: a million claims)."""
    fleet, setup = arrange(sessions, parked)
    client = Client()
    client.force_login(operator())
    results: list[tuple[Endpoint, Measured]] = []
    # One operator reads far faster than the read limit allows a person.
    with (
        _production_templates(),
        override_settings(WEFTBOARD_READ_RATE="off", ROOT_URLCONF=page_calibration.URLCONF),
    ):
        for endpoint in endpoints(fleet):
            results.append((endpoint, _measure(client, fleet, endpoint)))
    snapshot = _snapshot_timing()
    recount = _recount_timing()
    unbounded = unbounded_repeated_lookup()
    calibration = Timing(tuple(s for _, m in results for s in m.calibration.samples_ms))
    section = _section(
        results, sessions, parked, calibration, (snapshot, recount), unbounded, setup
    )
    key = f"pages{'_sessions' if sessions else ''}{'_large' if parked else ''}"
    targets = [
        Target(
            f"{key}.{endpoint.key}",
            f"{endpoint.label.strip()} median, x calibration",
            measured.ratio(endpoint),
            endpoint.budget.ratio,
            "x",
            binding and endpoint.binding,
        )
        for endpoint, measured in results
    ]
    # Beat's snapshot from the kept counts: under 250 ms a renew interval in the engine-lease
    # mode (docs/design.md §7); reported in the workflow-lease mode, where its clock part
    # grows with the claims past their expiry.
    targets.append(
        Target(
            f"{key}.fleet_snapshot",
            "beat's fleet snapshot median, ms",
            snapshot.median,
            SNAPSHOT_LIMIT_MS,
            "ms",
            binding and sessions,
        )
    )
    payload = {
        "mode": "engine-lease" if sessions else "workflow-lease",
        "claims": pages_fleet.CLAIMS + parked,
        "parked": parked,
        "engines": pages_fleet.ENGINES,
        "reps": REPS,
        "setup": setup,
        "calibration": calibration.as_json(),
        "fleet_snapshot": snapshot.as_json(),
        "fleet_recount": recount.as_json(),
        "repeated_search_unbounded": unbounded.as_json(),
        "endpoints": [_endpoint_json(endpoint, measured) for endpoint, measured in results],
    }
    return payload, section, targets


def _endpoint_json(endpoint: Endpoint, measured: Measured) -> dict[str, Any]:
    budget = endpoint.budget
    return {
        "key": endpoint.key,
        "path": endpoint.path,
        "hx_target": endpoint.target,
        **measured.timing.as_json(),
        "p95_ms": round(p95(measured.timing.samples_ms), 3),
        "calibration_ms": measured.calibration.as_json(),
        "vs_calibration": round(measured.ratio(endpoint), 3),
        "p95_vs_calibration": round(p95(measured.ratios(endpoint)), 3),
        "ratio_limit": budget.ratio,
        "allowance_ms": budget.allowance_ms,
        "limit_ms": budget.reference_ms,
        "queries": measured.statements,
        "bytes": measured.size,
        "statuses": {str(code): n for code, n in measured.statuses.items()},
    }


def _section(
    results: list[tuple[Endpoint, Measured]],
    sessions: bool,
    parked: int,
    calibration: Timing,
    snapshots: tuple[Timing, Timing],
    unbounded: Timing,
    setup: dict[str, Any],
) -> Section:
    snapshot, recount = snapshots
    mode = "ENGINE-LEASE MODE, " if sessions else ""
    f = pages_fleet
    section = Section(
        f"PAGES  {mode}{f.CLAIMS + parked:,} claims ({f.HELD_LIVE + parked:,} held live, "
        f"{f.IN_GRACE} in grace, {f.EXPIRED:,} expired, {f.INVALID} invalid), {f.ENGINES} "
        "engines: "
        f"server time per request, {REPS} requests each, alternating with as many "
        "calibration requests",
        (
            "",
            "median ms",
            "p95 ms",
            "calib. ms",
            "x calib.",
            "target",
            "ms (ref)",
            "queries",
            "KB",
        ),
    )
    for endpoint, measured in results:
        timing, budget = measured.timing, endpoint.budget
        allowance = f"{budget.allowance_ms:g} ms + " if budget.allowance_ms else ""
        section.rows.append(
            (
                endpoint.label + measured.answered(),
                fmt(timing.median),
                fmt(p95(timing.samples_ms)),
                fmt(measured.calibration.median),
                ratio(measured.ratio(endpoint)),
                f"<= {allowance}{budget.ratio:g}x",
                f"< {budget.reference_ms:g}",
                str(measured.statements),
                f"{measured.size / 1024:.1f}",
            )
        )
    for label, timing in (
        ("beat's fleet snapshot (no request)", snapshot),
        ("beat's recount, every 5 min (no request)", recount),
        ("q='wf-' x 84 read unbounded (reference)", unbounded),
    ):
        row = (label, fmt(timing.median), fmt(p95(timing.samples_ms)))
        section.rows.append((*row, "", "", "", "", "", ""))
    section.notes.append(
        "Django's test Client as a logged-in operator (session auth, every middleware); "
        "fragments are HTMX requests (HX-Request, HX-Target) as the pages' polls send them; "
        f"{WARMUP} warm-up requests each; queries and KB from one request"
    )
    section.notes.append(
        f"calibration request: {page_calibration.READS} reads of {page_calibration.ROWS} "
        "claim rows rendered in a table, through the same client and middleware, "
        f"{fmt(calibration.median)} ms median over the run "
        f"({fmt(calibration.low)}-{fmt(calibration.high)}); each endpoint is judged by the "
        "median of its requests' times, each over the calibration request's next to it"
    )
    section.notes.append(
        f"targets: claims page and every live fragment <= {FRAGMENT.ratio:g}x the "
        f"calibration, /metrics <= {METRICS.ratio:g}x: with the calibration's "
        f"{QUIET_CALIBRATION_MS:g} ms of a quiet hour, the {FRAGMENT.reference_ms:g} and "
        f"{METRICS.reference_ms:g} ms they replace ('ms (ref)', reported, not judged); a "
        "search's time budget is wall time, allowed before the ratio is taken; the p95 column "
        "is reported, not judged"
    )
    section.notes.append(
        "the overview, the engines, an engine, the workflows page and the reclaim page read "
        "counts from the fleet snapshot beat takes every renew interval; each endpoint is "
        "measured with a fresh one, as in production, and the live engines' heartbeats "
        "(and sessions) renewed; 'with no fresh snapshot' (beat down) counts on every "
        f"request and is reported for reference; the snapshot itself is timed over "
        f"{SNAPSHOT_REPS} runs, from the counts the writes keep, and with the recount from the "
        f"rows that runs every {RECOUNT_EVERY_MS // 60_000} minutes over {RECOUNT_REPS} runs"
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
    return section
