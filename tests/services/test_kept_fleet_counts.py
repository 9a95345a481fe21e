"""Beat's snapshot from the kept counts equals a scan of every row, after any sequence of
writes that keep the visibility index (by weftboard or by anything else that writes the
tables), at any time; one running outside the index is counted from the next recount; a write
that changes no key writes no delta; a recount repairs counts that drifted; a fold that
fails leaves its deltas for the next one."""

from __future__ import annotations

import logging
import random

import pytest

from claims.models import (
    FleetCountDelta,
    FleetCounts,
    OwnerlessMark,
    Workflow,
    WorkflowClaim,
    WorkflowStatus,
    WorkflowVisibility,
)
from claims.protocol.constants import MAX_SAFE_INTEGER
from claims.protocol.timing import ClaimTiming
from claims.selectors.fleet.snapshot import fleet_scan
from claims.services import fleet_counts
from claims.services.fleet_counts import RECOUNT_EVERY_MS, kept_fleet_scan
from claims.store import OrmClaimStore
from tests.factories import make_session

pytestmark = pytest.mark.django_db

NOW = 50_000_000
TIMING = ClaimTiming(ttl_ms=30_000, renew_interval_ms=5_000)
ENGINES = ["e-1", "e-2", "e-3"]
STATUSES = [WorkflowStatus.RUNNING, WorkflowStatus.SUSPENDED, WorkflowStatus.COMPLETED]


def same_as_a_scan(now_ms: int) -> None:
    kept = kept_fleet_scan(now_ms=now_ms, timing=TIMING)
    assert kept.as_json() == fleet_scan(now_ms=now_ms, timing=TIMING).as_json()


def held_claim(workflow_id: str, *, expires_at_ms: int) -> None:
    """A claim at epoch 1 held by e-1 by its own expiry (the workflow-lease mode)."""
    WorkflowClaim.objects.create(
        workflow_id=workflow_id,
        epoch=1,
        holder_engine_id="e-1",
        holder_epoch=1,
        holder_expires_at_ms=expires_at_ms,
        holder_claimed_at_ms=NOW,
    )


def running_workflow(workflow_id: str) -> None:
    """A running workflow with no index row: only the recount finds it ownerless."""
    Workflow.objects.create(
        workflow_id=workflow_id,
        workflow_type="order",
        status="running",
        state={},
        created_at_ms=0,
        updated_at_ms=0,
    )


def holder(rng: random.Random, epoch: int, now_ms: int) -> dict[str, object]:
    """A holder of one of the shapes the rows take: lease (live, in grace or expired),
    session, none, or garbage in its own columns."""
    engine = rng.choice(ENGINES)
    shape = rng.choice(
        ["lease", "lease", "session", "none", "garbled", "negative", "nameless", "undated"]
    )
    lease = {
        "holder_engine_id": engine,
        "holder_epoch": epoch,
        "holder_expires_at_ms": now_ms + rng.choice([20_000, -5_000, -20_000]),
        "holder_claimed_at_ms": now_ms - 1_000,
        "holder_session_epoch": None,
    }
    if shape == "session":
        return {**lease, "holder_expires_at_ms": None, "holder_session_epoch": rng.choice([1, 2])}
    if shape == "none":
        return dict.fromkeys(lease)
    if shape == "garbled":
        return {**lease, "holder_epoch": epoch + 1}
    if shape == "nameless":
        return {**lease, "holder_engine_id": rng.choice(["", None])}
    if shape == "undated":
        return {**lease, "holder_claimed_at_ms": None, "holder_expires_at_ms": None}
    if shape == "negative":
        return {**lease, "holder_expires_at_ms": rng.choice([-1, MAX_SAFE_INTEGER + 1])}
    return lease


def write_something(rng: random.Random, now_ms: int, n: int) -> None:
    workflow_id = f"wf-{rng.randrange(n)}"
    claim = WorkflowClaim.objects.filter(workflow_id=workflow_id).first()
    action = rng.choice(["claim", "claim", "renew", "workflow", "workflow", "delete"])
    if action == "claim" and claim is None:
        WorkflowClaim.objects.create(workflow_id=workflow_id, epoch=1, **holder(rng, 1, now_ms))
    elif action == "claim" and claim is not None:
        epoch = claim.epoch + rng.choice([0, 1])
        WorkflowClaim.objects.filter(pk=claim.pk).update(epoch=epoch, **holder(rng, epoch, now_ms))
    elif action == "renew" and claim is not None:
        WorkflowClaim.objects.filter(pk=claim.pk, holder_expires_at_ms__isnull=False).update(
            holder_expires_at_ms=now_ms + rng.choice([10_000, -3_000])
        )
    elif action == "workflow":  # indexed in the same transaction, as every write is
        row = {"status": rng.choice(STATUSES), "workflow_type": rng.choice(["order", "ledger"])}
        Workflow.objects.update_or_create(
            workflow_id=workflow_id,
            defaults={**row, "state": {}, "created_at_ms": now_ms, "updated_at_ms": now_ms},
        )
        WorkflowVisibility.objects.update_or_create(
            workflow_id=workflow_id, defaults={**row, "updated_at_ms": now_ms}
        )
    elif action == "delete":
        Workflow.objects.filter(workflow_id=workflow_id).delete()
        WorkflowVisibility.objects.filter(workflow_id=workflow_id).delete()
        if claim is not None:  # claim rows are kept by weftboard; another writer may not
            WorkflowClaim.objects.filter(pk=claim.pk)._raw_delete(WorkflowClaim.objects.db)
    if rng.random() < 0.2:  # an extra mark, as a seed leaves them
        OwnerlessMark.objects.create(workflow_id=workflow_id)
    if rng.random() < 0.1:  # a reclaim pass judging the marks and pruning them
        OrmClaimStore().list_unheld_running_indexed()


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_kept_counts_equal_a_scan_after_any_writes(seed):
    rng = random.Random(seed)
    for engine in ENGINES[:2]:
        make_session(engine, epoch=1, expires_at_ms=NOW + 10_000, at_ms=NOW)
    now_ms = NOW
    for step in range(300):
        write_something(rng, now_ms, n=25)
        if step % 20 == 0:
            now_ms += rng.choice([0, 3_000, 9_000])
            same_as_a_scan(now_ms)
    same_as_a_scan(now_ms)
    assert now_ms - NOW < RECOUNT_EVERY_MS
    assert FleetCounts.objects.get().recounted_at_ms <= NOW + 9_000  # folded since the first


def test_a_renewal_and_a_checkpoint_write_no_delta():
    held_claim("wf-1", expires_at_ms=NOW + 10_000)
    running_workflow("wf-1")
    kept_fleet_scan(now_ms=NOW, timing=TIMING)

    WorkflowClaim.objects.filter(workflow_id="wf-1").update(holder_expires_at_ms=NOW + 20_000)
    Workflow.objects.filter(workflow_id="wf-1").update(state={"steps": {"a": 1}}, updated_at_ms=5)

    assert not FleetCountDelta.objects.exists()
    WorkflowClaim.objects.filter(workflow_id="wf-1").update(holder_engine_id="e-2")
    assert sorted(FleetCountDelta.objects.values_list("name", "n")) == [("e-1", -1), ("e-2", 1)]


def test_a_recount_repairs_counts_that_drifted(caplog):
    held_claim("wf-1", expires_at_ms=NOW + 10_000)
    kept_fleet_scan(now_ms=NOW, timing=TIMING)
    FleetCounts.objects.update(claims=[["e-9", None, "lease", 7]])  # drifted

    before = kept_fleet_scan(now_ms=NOW + 5_000, timing=TIMING)
    assert before.by_holder == {"e-9": 7}  # the kept counts are what the snapshot reads
    with caplog.at_level(logging.WARNING, logger=fleet_counts.__name__):
        after = kept_fleet_scan(now_ms=NOW + RECOUNT_EVERY_MS, timing=TIMING)

    assert after.by_holder == {"e-1": 1}
    assert "fleet counts repaired: kind=claim keys=2" in caplog.text
    assert FleetCounts.objects.get().recounted_at_ms == NOW + RECOUNT_EVERY_MS


def test_a_running_workflow_with_no_mark_is_counted_from_the_recount_until_held():
    """A running workflow with no holder that no trigger marked (written outside weftboard,
    or its index row missing) is found by the recount and judged again every snapshot."""
    running_workflow("wf-1")
    assert kept_fleet_scan(now_ms=NOW, timing=TIMING).ownerless_running == 1
    assert FleetCounts.objects.get().unmarked_ownerless == ["wf-1"]
    assert kept_fleet_scan(now_ms=NOW + 5_000, timing=TIMING).ownerless_examples == ["wf-1"]

    held_claim("wf-1", expires_at_ms=NOW + 30_000)
    assert kept_fleet_scan(now_ms=NOW + 10_000, timing=TIMING).ownerless_running == 0
    assert FleetCounts.objects.get().unmarked_ownerless == []


def test_a_fold_that_fails_leaves_its_deltas_for_the_next(monkeypatch):
    kept_fleet_scan(now_ms=NOW, timing=TIMING)
    held_claim("wf-1", expires_at_ms=NOW + 10_000)

    def fail(*args, **kwargs):
        raise RuntimeError("the database went away")

    with monkeypatch.context() as patched:
        patched.setattr(fleet_counts, "tally_states", fail)
        with pytest.raises(RuntimeError):
            kept_fleet_scan(now_ms=NOW + 5_000, timing=TIMING)

    assert FleetCountDelta.objects.count() == 1
    assert kept_fleet_scan(now_ms=NOW + 5_000, timing=TIMING).by_holder == {"e-1": 1}
    # Taken again (its answer lost, say), the same snapshot counts the same.
    assert kept_fleet_scan(now_ms=NOW + 5_000, timing=TIMING).by_holder == {"e-1": 1}


def test_more_unmarked_ownerless_than_kept_are_all_counted(monkeypatch):
    """Past the ids it keeps, each snapshot judges every running workflow until the next
    recount, so the count stays exact."""
    monkeypatch.setattr(fleet_counts, "UNMARKED_KEPT", 2)
    for n in range(4):
        running_workflow(f"wf-{n}")
    assert kept_fleet_scan(now_ms=NOW, timing=TIMING).ownerless_running == 4
    held_claim("wf-0", expires_at_ms=NOW + 30_000)
    for later in (5_000, 10_000):
        assert kept_fleet_scan(now_ms=NOW + later, timing=TIMING).ownerless_running == 3
