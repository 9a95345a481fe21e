"""A fleet of real engine processes (Celery workers, beat, Redis, PostgreSQL) runs workflows.

Engines boot in their own processes with TTL 3 s and renew interval 1 s; beat
ticks them every interval. The "ledger" demo workflow commits a StepLedger row
per step execution before the step's checkpoint, so the ledger tells how often
each side effect ran, whatever happened to the engine that ran it.
"""

from __future__ import annotations

import collections
import signal
import time
from collections.abc import Iterator
from typing import Any

import pytest
from django.db import connection
from django.db.models import Count

from claims.clock import database_now_ms
from claims.models import (
    ClaimCounter,
    ClaimEvent,
    Engine,
    EngineStatus,
    StepLedger,
    Workflow,
    WorkflowClaim,
    WorkflowStatus,
)
from claims.services import workflow_start

from ._fleet import GRACE_MS, RENEW_INTERVAL_MS, TTL_MS, Fleet, Process, wait_until

pytestmark = pytest.mark.slow

STEP_NAMES = ("step-1", "step-2", "step-3", "step-4", "step-5", "step-6")


def ledger_workflows_start(count: int, **options: Any) -> list[str]:
    """Start ``count`` ownerless ledger workflows: the engines' reclaim passes pick them up."""
    return [
        workflow_start(workflow_type="ledger", input=dict(options)).workflow_id
        for _ in range(count)
    ]


def statuses(workflow_ids: list[str]) -> collections.Counter[str]:
    return collections.Counter(
        Workflow.objects.filter(workflow_id__in=workflow_ids).values_list("status", flat=True)
    )


def wait_all_finished(fleet: Fleet, workflow_ids: list[str], timeout_s: float) -> None:
    """Until none of them is running any more (then the caller asserts how they ended)."""
    last: dict[str, collections.Counter[str]] = {}

    def probe() -> bool:
        last["statuses"] = statuses(workflow_ids)
        return last["statuses"].get(WorkflowStatus.RUNNING, 0) == 0 and sum(
            last["statuses"].values()
        ) == len(workflow_ids)

    try:
        wait_until(probe, timeout_s=timeout_s, what="every workflow to finish", check=fleet.check_alive)
    except AssertionError as error:
        raise AssertionError(f"{error}; statuses now {dict(last['statuses'])}") from None


def ledger_runs(workflow_ids: list[str]) -> dict[tuple[str, str], list[StepLedger]]:
    runs: dict[tuple[str, str], list[StepLedger]] = collections.defaultdict(list)
    for entry in StepLedger.objects.filter(workflow_id__in=workflow_ids).order_by("pk"):
        runs[(entry.workflow_id, entry.step)].append(entry)
    return runs


def expected_steps(workflow_ids: list[str], steps: int) -> set[tuple[str, str]]:
    return {(wf, STEP_NAMES[n]) for wf in workflow_ids for n in range(steps)}


def assert_no_holders(workflow_ids: list[str]) -> None:
    claims = WorkflowClaim.objects.filter(workflow_id__in=workflow_ids)
    assert claims.count() == len(workflow_ids), "every workflow has its claim row"
    held = claims.exclude(
        holder_engine_id__isnull=True,
        holder_epoch__isnull=True,
        holder_expires_at_ms__isnull=True,
        holder_claimed_at_ms__isnull=True,
    )
    assert list(held.values_list("workflow_id", "holder_engine_id")) == []


def held_by(engine_id: str, workflow_ids: list[str] | None = None) -> dict[str, int]:
    """Workflow id -> epoch of every claim the engine holds (by the database's account)."""
    rows = WorkflowClaim.objects.filter(holder_engine_id=engine_id)
    if workflow_ids is not None:
        rows = rows.filter(workflow_id__in=workflow_ids)
    return dict(rows.values_list("workflow_id", "epoch"))


# -- state audit ---------------------------------------------------------------------

AUDIT_TABLE = "it_workflow_state_audit"


@pytest.fixture
def state_audit(fleet: Fleet) -> Iterator[None]:
    """Record every committed version of every Workflow row (PostgreSQL trigger).

    The runtime rewrites the whole state at each checkpoint, so the final state alone
    could hide a stale checkpoint that a later one overwrote; the audit keeps them all,
    in commit order per row (the row lock serialises the writers, and the trigger draws
    its id while holding it).
    """
    table = connection.ops.quote_name(Workflow._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(
            f"CREATE TABLE {AUDIT_TABLE} (id bigserial PRIMARY KEY, workflow_id text NOT NULL,"
            " status text NOT NULL, state jsonb NOT NULL)"
        )
        cursor.execute(
            f"CREATE FUNCTION {AUDIT_TABLE}_write() RETURNS trigger LANGUAGE plpgsql AS $$"
            f" BEGIN INSERT INTO {AUDIT_TABLE} (workflow_id, status, state)"
            " VALUES (NEW.workflow_id, NEW.status, NEW.state::jsonb); RETURN NEW; END $$"
        )
        cursor.execute(
            f"CREATE TRIGGER {AUDIT_TABLE}_trigger AFTER INSERT OR UPDATE ON {table}"
            f" FOR EACH ROW EXECUTE FUNCTION {AUDIT_TABLE}_write()"
        )
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute(f"DROP TRIGGER IF EXISTS {AUDIT_TABLE}_trigger ON {table}")
            cursor.execute(f"DROP FUNCTION IF EXISTS {AUDIT_TABLE}_write()")
            cursor.execute(f"DROP TABLE IF EXISTS {AUDIT_TABLE}")


def audited_versions(workflow_ids: list[str]) -> dict[str, list[tuple[str, dict[str, Any]]]]:
    """Workflow id -> its committed (status, state) versions, oldest first."""
    versions: dict[str, list[tuple[str, dict[str, Any]]]] = collections.defaultdict(list)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT workflow_id, status, state FROM {AUDIT_TABLE}"
            " WHERE workflow_id = ANY(%s) ORDER BY id",
            [workflow_ids],
        )
        for workflow_id, status, state in cursor.fetchall():
            versions[workflow_id].append((status, state))
    return versions


def checkpoint_epochs(versions: list[tuple[str, dict[str, Any]]]) -> list[tuple[str, int]]:
    """(record, epoch) of each checkpoint in commit order: the step or sleep records that
    each committed version added or changed compared with the version before it."""
    written: list[tuple[str, int]] = []
    previous: dict[str, Any] = {}
    for _, state in versions:
        records = {
            f"{kind}:{name}": record
            for kind in ("steps", "sleeps")
            for name, record in (state.get(kind) or {}).items()
        }
        for key, record in records.items():
            if previous.get(key) != record:
                written.append((key, int(record["epoch"])))
        previous = records
    return written


# -- tests -----------------------------------------------------------------------------


@pytest.mark.timeout(180)
def test_three_engines_run_200_workflows_to_completion(fleet: Fleet) -> None:
    """200 ownerless workflows, 3 engines: each completes, each step runs once, all released."""
    engines = [fleet.start_engine(f"engine{n}") for n in (1, 2, 3)]
    fleet.start_beat()
    rows = fleet.wait_registered(engines)
    engine_ids = {row.engine_id for row in rows.values()}
    started = time.monotonic()

    workflow_ids = ledger_workflows_start(200, steps=3, step_delay_ms=20)
    wait_all_finished(fleet, workflow_ids, timeout_s=90)
    print(f"200 workflows finished in {time.monotonic() - started:.1f}s")

    assert statuses(workflow_ids) == {WorkflowStatus.COMPLETED: 200}
    runs = ledger_runs(workflow_ids)
    assert set(runs) == expected_steps(workflow_ids, 3)
    assert {key: len(entries) for key, entries in runs.items() if len(entries) != 1} == {}
    assert_no_holders(workflow_ids)
    grants = collections.Counter(
        ClaimEvent.objects.filter(
            workflow_id__in=workflow_ids, kind__in=["acquired", "takeover"]
        ).values_list("engine_id", flat=True)
    )
    print(f"grants by engine: {dict(grants)}")
    assert set(grants) <= engine_ids
    assert len(grants) > 1, f"one engine did all the work: {dict(grants)}"
    ran_on = set(StepLedger.objects.filter(workflow_id__in=workflow_ids).values_list("engine_id", flat=True))
    assert len(ran_on) > 1
