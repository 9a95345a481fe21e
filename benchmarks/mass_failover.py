"""A mass failure, split: 1,000,000 running workflows held in the engine-lease mode, of which
100,000 by engines that die at once, taken over by 20 live engines running their real
passes together (docs/design.md §4, "A mass failure is split").

The seed gives every claim to the live engines (``bench-live-*``, session 1), then hands a
tenth of them to DEAD engines whose session rows expire at one instant, the death: as if
each had renewed for the last time a TTL before it and then been killed. Their claims are
stale a grace later; the bound is the one for a killed engine, TTL + grace + 2 intervals
from its last renewal, that is grace + 2 intervals from the expiry. The parent counts the
claims still naming a dead engine every POLL_S; the engines (``discovery_child``, five to a
process, on the part's private PostgreSQL server: twenty engines' takeover pools need more
connections than the shared server's 100) report how many each took over and how long
each reclaim pass ran.
"""

from __future__ import annotations

import statistics
import time
from typing import Any

from django.db import connection

from claims.models import Engine, EngineSession, WorkflowClaim
from claims.protocol import ClaimTiming

from .engine_fleet import run_together, seed_held_sessions
from .fleet_discovery import reset_statements, statement_times
from .private_postgres import private_server
from .report import Section, Target, fmt

TOTAL = 1_000_000
LIVE = 20
DEAD = 5
STRANDED_SHARE = 10  # one claim in ten names a dead engine
TIMING = ClaimTiming()
WARMUP_TICKS = 2  # the dead sessions expire at the first measured tick
AFTER_EXPIRY_TICKS = 6  # grace (2) + the bound's 2 intervals + 2 to spare
POLL_S = 0.25


def _strand(now_ms: int) -> int:
    """A tenth of the claims to the dead engines, whose sessions are open for now."""
    claims = connection.ops.quote_name(WorkflowClaim._meta.db_table)
    sessions = connection.ops.quote_name(EngineSession._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {claims} SET holder_engine_id = 'bench-dead-' || "
            f"(CAST(substr(workflow_id, 8, 2) AS integer) % {DEAD}) "
            f"WHERE CAST(right(workflow_id, 1) AS integer) % {STRANDED_SHARE} = 0"
        )
        stranded = cursor.rowcount
        for n in range(DEAD):
            cursor.execute(
                f"INSERT INTO {sessions} (engine_id, epoch, expires_at_ms, renewed_at_ms, "
                "started_at_ms, closed_at_ms, closed_by) VALUES (%s, 1, %s, %s, %s, NULL, '')",
                [f"bench-dead-{n}", now_ms + 3_600_000, now_ms, now_ms],
            )
        cursor.execute("ANALYZE")
    return stranded


def _kill_dead_engines(at_ms: int) -> None:
    """The death: the dead engines' sessions expire now, as a TTL after their last renewal."""
    EngineSession.objects.filter(engine_id__startswith="bench-dead-").update(
        expires_at_ms=at_ms, renewed_at_ms=at_ms - TIMING.ttl_ms
    )


def _still_stranded() -> int:
    # By name, along the holder index: a prefix match scans the million rows every poll,
    # and took a sixth of a core from the engines it watches.
    dead = [f"bench-dead-{n}" for n in range(DEAD)]
    return WorkflowClaim.objects.filter(holder_engine_id__in=dead).count()


def _measure() -> dict[str, Any]:
    interval_s = TIMING.renew_interval_ms / 1000
    seed_held_sessions(TOTAL, LIVE, TIMING)
    stranded = _strand(int(time.time() * 1000))

    expired_at: dict[str, float] = {}
    statements: list[tuple[str, int, float]] = []

    def watch(t0: float) -> list[tuple[int, int]]:
        expiry = t0 + WARMUP_TICKS * interval_s
        expired_at["s"] = expiry
        time.sleep(max(0.0, expiry - time.time()))
        reset_statements()
        _kill_dead_engines(int(expiry * 1000))
        curve = []
        end = expiry + AFTER_EXPIRY_TICKS * interval_s
        while time.time() < end:
            left = _still_stranded()
            curve.append((round((time.time() - expiry) * 1000), left))
            if left == 0:
                break
            time.sleep(POLL_S)
        time.sleep(max(0.0, end - time.time()))
        statements.extend(statement_times())
        return curve

    gathered, curve = run_together(
        [f"bench-live-{i}" for i in range(LIVE)],
        interval_ms=TIMING.renew_interval_ms,
        warmup_ticks=WARMUP_TICKS,
        measured_ticks=AFTER_EXPIRY_TICKS,
        legacy=False,
        watch=watch,
    )
    last_reclaim = {
        engine_id: (summary or {}).get("reclaim")
        for engine_id, summary in Engine.objects.values_list("engine_id", "pass_summary")
    }
    by_engine: dict[str, int] = {}
    passes: list[float] = []
    reclaims: dict[str, Any] = {}
    for part in gathered:
        reclaims.update(part["reclaims"])
        by_engine.update(part["reclaimed_by"])
        for timed in part["pass_ms"].values():
            passes += timed.get("reclaim", [])
        # A pass still running when the window closed counts for as long as it had run.
        for running in part["in_flight_ms"].values():
            passes += [ms for name, ms in running.items() if name == "reclaim"]
    done = next((ms for ms, left in curve if left == 0), None)
    takeovers = sorted(by_engine.values())
    return {
        "stranded": stranded,
        "curve": curve,
        "all_held_ms_after_expiry": done,
        "stale_after_expiry_ms": TIMING.grace_ms,
        "bound_after_expiry_ms": TIMING.grace_ms + 2 * TIMING.renew_interval_ms,
        "takeovers": sum(takeovers),
        "spread": {
            "min": takeovers[0] if takeovers else 0,
            "median": statistics.median(takeovers) if takeovers else 0,
            "max": takeovers[-1] if takeovers else 0,
            "engines_taking_part": sum(1 for n in takeovers if n),
        },
        "longest_pass_ms": round(max(passes, default=0.0), 1),
        "interval_ms": TIMING.renew_interval_ms,
        "last_reclaim": last_reclaim,
        "expired_at": expired_at.get("s"),
        "reclaims": reclaims,
        "database_ms": round(sum(ms for _, _, ms in statements)),
        # Where the server's time went from the expiry to the end of the watch.
        "busiest_statements": [
            {"query": " ".join(query.split())[:160], "calls": calls, "ms": round(ms)}
            for query, calls, ms in sorted(statements, key=lambda s: -s[2])[:12]
        ],
    }


def run(*, binding: bool) -> tuple[dict[str, Any], Section, list[Target]]:
    title = (
        f"MASS FAILOVER  {TOTAL // STRANDED_SHARE:,} of {TOTAL:,} claims stranded at once, "
        f"{LIVE} live engines (engine-lease, real passes, real clock)"
    )
    if connection.vendor != "postgresql":
        section = Section(title, ("skipped",))
        section.notes.append("PostgreSQL only: it runs on a private PostgreSQL server")
        return {"skipped": "PostgreSQL only"}, section, []
    with private_server():
        measured = _measure()
    done = measured["all_held_ms_after_expiry"]
    bound = measured["bound_after_expiry_ms"]
    spread = measured["spread"]
    section = Section(title, ("figure", "value"))
    section.rows += [
        ("claims stranded", f"{measured['stranded']:,}"),
        ("all held again, ms after the sessions expired", fmt(done) if done else "NOT ALL"),
        ("bound: grace + 2 intervals, ms", f"{bound:,}"),
        ("claims stale, ms after the expiry (grace)", f"{measured['stale_after_expiry_ms']:,}"),
        ("takeovers", f"{measured['takeovers']:,}"),
        (
            "takeovers per live engine: min / median / max",
            f"{spread['min']:,} / {spread['median']:,.0f} / {spread['max']:,}",
        ),
        ("live engines that took some", f"{spread['engines_taking_part']} of {LIVE}"),
        (
            "longest reclaim pass, ms (wall; one still running counts so far)",
            fmt(measured["longest_pass_ms"]),
        ),
        (
            "database time from the expiry to the end of the watch, ms",
            f"{measured['database_ms']:,}",
        ),
    ]
    for busiest in measured["busiest_statements"][:5]:
        section.rows.append(
            (f"  {busiest['ms']:,} ms in {busiest['calls']:,} calls", busiest["query"][:90])
        )
    section.notes.append(
        "the bound from a killed engine's last renewal is TTL + grace + 2 intervals; its "
        "session expires a TTL after that renewal, so the table counts from the expiry"
    )
    targets = [
        Target(
            "failover_mass.vs_bound",
            f"{measured['stranded']:,} stranded over {LIVE} engines: all held, vs the bound",
            (done if done is not None else 10 * bound) / bound,
            1.0,
            "x",
            binding,
        ),
        Target(
            "failover_mass.longest_pass",
            "longest reclaim pass of the failover, vs one interval",
            measured["longest_pass_ms"] / measured["interval_ms"],
            1.0,
            "x",
            binding,
        ),
    ]
    return measured, section, targets
