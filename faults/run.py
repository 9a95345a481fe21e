"""One run: a fresh database and broker, the fleet, the workload, the nemesis, the checks."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from . import checks
from .checks import Check, Failover
from .fleet_under_test import Fleet
from .history import bulk_jobs_read, database_now_ms, history_read, install_recorders
from .nemesis import FaultRecord, Nemesis
from .options import Options
from .processes import wait_until
from .watch import MetricsWatch, StrandedWatch
from .workload import Api, Workload

BOOT_TIMEOUT_S = 90


@dataclass
class Outcome:
    options: Options
    checks: list[Check]
    failover: Failover
    faults: list[FaultRecord]
    workload: dict[str, object]
    harness_errors: list[str]
    elapsed_s: float
    ghosts: list[str]

    @property
    def passed(self) -> bool:
        return not self.harness_errors and all(check.passed for check in self.checks)


def prepare_database() -> str:
    """Migrate, install the history recorders, and mint an API token; returns its secret."""
    from django.contrib.auth import get_user_model
    from django.core.management import call_command

    from claims.models import ApiToken, ApiTokenScope
    from claims.services.tokens import api_token_mint

    call_command("migrate", verbosity=0)
    install_recorders()
    user = get_user_model().objects.create_superuser("fault-operator", "", None)
    return api_token_mint(ApiToken(user=user, name="fault harness", scope=ApiTokenScope.WRITE))


def live_engine_ids(fleet: Fleet) -> set[str]:
    from claims.models import Engine, EngineStatus

    pids = {s.process.pid for s in fleet.slots if s.process is not None and fleet.engine_live(s)}
    return set(
        Engine.objects.filter(
            status=EngineStatus.ACTIVE, hostname=fleet.hostname, pid__in=pids
        ).values_list("engine_id", flat=True)
    )


def unowned_at_end(fleet: Fleet, watch: StrandedWatch) -> list[str]:
    """Running workflows not held, unexpired, by an engine that is alive right now."""
    from claims.models import Workflow, WorkflowStatus
    from claims.store import OrmClaimStore

    now = database_now_ms()
    running = sorted(
        Workflow.objects.filter(status=WorkflowStatus.RUNNING).values_list("workflow_id", flat=True)
    )
    live = live_engine_ids(fleet)
    owned = set()
    # Read as the engines read them: a session holder's claim with its session, whose
    # expiry is the claim's, and which holds nothing once closed.
    for workflow_id, row in OrmClaimStore().read_claims(running).items():
        engine, expires = row.valid_holder_engine(), row.expires_at_ms()
        closed = row.session is not None and row.session.closed_at_ms is not None
        if (
            engine in live
            and not closed
            and expires is not None
            and expires + watch.grace_ms >= now
        ):
            owned.add(workflow_id)
    return sorted(set(running) - owned)


def per_engine_counters() -> dict[str, float]:
    from django.db.models import Sum

    from claims.models import ClaimCounter, CounterName
    from claims.protocol.constants import OUTCOMES

    totals = dict(ClaimCounter.objects.values_list("name").annotate(total=Sum("value")).order_by())
    values: dict[str, float] = {}
    for name in CounterName.values:
        if name not in OUTCOMES and name != CounterName.RENEWAL_FAILURES:
            continue  # broker and session counts: not among the claim families compared
        key = (
            "weft_workflow_claim_renewal_failures_total{}"
            if name == CounterName.RENEWAL_FAILURES
            else f"weft_workflow_claim_attempts_total{{outcome={name}}}"
        )
        values[key] = float(totals.get(name) or 0)
    return values


# Beat resumes a job whose runner died within its poll (15 s): room for that, twice over.
BULK_END_TIMEOUT_S = 45


def bulk_jobs_wait() -> None:
    """Until no bulk job is queued or running (the bulk check fails any still going)."""
    from claims.models import RUNNABLE_BULK_STATUSES, BulkJob

    deadline = time.monotonic() + BULK_END_TIMEOUT_S
    while time.monotonic() < deadline:
        if not BulkJob.objects.filter(status__in=RUNNABLE_BULK_STATUSES).exists():
            return
        time.sleep(0.5)


def run(options: Options, token: str, log: Callable[[str], None]) -> Outcome:
    started = time.monotonic()
    timing = options.timing
    fleet = Fleet(
        options.workdir, options.database_url(), timing=timing, engine_count=options.engines
    )
    errors: list[str] = []
    watch = StrandedWatch(grace_ms=timing.grace_ms, bound_ms=timing.stranded_bound_ms)
    metrics = MetricsWatch(f"{fleet.base_url}/metrics")
    workload = Workload(
        Api(fleet.base_url, token),
        seed=options.seed,
        workflows=options.workflows,
        start_window_s=options.duration_s * 0.6,
    )
    nemesis: Nemesis | None = None
    try:
        fleet.redis_start()
        fleet.proxy_start()
        fleet.web_start()
        fleet.beat_start()
        for slot in fleet.slots:
            fleet.engine_start(slot)
        wait_until(
            lambda: len(live_engine_ids(fleet)) == options.engines,
            timeout_s=BOOT_TIMEOUT_S,
            what=f"{options.engines} engines to register",
            interval_s=0.5,
        )
        wait_until(lambda: metrics.scrape() is not None, timeout_s=30, what="the web server")
        log(f"fleet up: {options.engines} engines, beat, web at {fleet.base_url}")
        watch.start()
        metrics.start()
        workload.start()
        time.sleep(5)  # some work in flight before the first fault
        nemesis = Nemesis(
            fleet, options.seed, until_monotonic=started + options.duration_s, short=options.short
        )
        nemesis.start()
        nemesis.join()
        last_fault_ms = database_now_ms()
        elapsed = time.monotonic() - started
        log(f"faults healed after {elapsed:.0f} s; {len(nemesis.records)} injected")
        # Quiet: no fault, no start and no operator call (a start or a forced release in
        # its last second is not yet taken when the end is judged), long enough for every
        # stranded workflow to be picked up twice over. The bulk jobs already made finish
        # first, so that none acts within it.
        workload.stop()
        bulk_jobs_wait()
        time.sleep(2 * timing.stranded_bound_ms / 1000 + 3)
        errors += fleet.unexpected_exits()
        final_unowned = unowned_at_end(fleet, watch)
        watch.stop()
        metrics.stop()
        fleet.stop_engines()  # each flushes its counters on the way out
        final_scrape = metrics.scrape() or {}
        per_engine = per_engine_counters()
    finally:
        if nemesis is not None:
            nemesis.stop()
        workload.stop()
        fleet.close()
    errors += nemesis.errors if nemesis is not None else []
    errors += [f"stranded watch: {e}" for e in watch.errors[:3]]
    history = history_read()
    records = nemesis.records if nemesis is not None else []
    verdicts = [
        checks.checkpoints_check(history),
        checks.epochs_check(history),
        checks.stranded_check(watch.stretches, last_fault_ms, timing, final_unowned),
        checks.ledger_check(history, records, timing),
        checks.metrics_check(metrics.scrapes, final_scrape, per_engine),
        checks.api_check(dict(workload.operations), dict(workload.start_failures)),
        checks.bulk_check(bulk_jobs_read()),
    ]
    statuses = dict(Counter(history.final_status.values()))
    return Outcome(
        options=options,
        checks=verdicts,
        failover=checks.failover_measure(history, records, timing),
        faults=records,
        workload={
            "started": len(workload.started),
            "start_failures": dict(workload.start_failures),
            "operations": dict(sorted(workload.operations.items())),
            "final_status": statuses,
            "sessions_max": dict(sorted(watch.sessions_max.items())),
        },
        harness_errors=errors,
        elapsed_s=time.monotonic() - started,
        ghosts=checks.ghosts_seen(watch.stretches, records),
    )
