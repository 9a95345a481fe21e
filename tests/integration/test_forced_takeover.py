"""An operator's forced takeover reaches a real engine: it adopts the claim and drives on."""

from __future__ import annotations

import pytest
from django.db.models import Count

from claims.models import ClaimEvent, StepLedger, Workflow, WorkflowClaim
from claims.services.claims import claim_force_takeover_and_notify
from claims.services.workflows import workflow_start
from claims.tasks import adopt
from weftboard.celery import app as celery_app

from ._fleet import RENEW_INTERVAL_MS, Fleet, wait_until

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]

STEPS = 60  # long enough that A is still stepping once B consumes
STEP_DELAY_MS = 400


def test_forced_takeover_is_adopted_and_driven_by_the_target_engine(fleet: Fleet) -> None:
    """B adopts within one tick of the operator's takeover and finishes the workflow; A is
    deposed at its next checkpoint, and no checkpoint of A's epoch lands after B's first."""
    engine_a = fleet.start_engine("engineA")
    fleet.start_beat()
    a_id = fleet.wait_registered([engine_a])[engine_a.name].engine_id
    wf = workflow_start(
        workflow_type="ledger", input={"steps": STEPS, "step_delay_ms": STEP_DELAY_MS}
    ).workflow_id

    def a_has_checkpointed() -> int | None:
        row = WorkflowClaim.objects.filter(workflow_id=wf, holder_engine_id=a_id).first()
        steps = Workflow.objects.get(workflow_id=wf).state.get("steps", {})
        return row.epoch if row is not None and len(steps) >= 2 else None

    a_epoch = wait_until(a_has_checkpointed, timeout_s=30, what="A to drive the workflow")
    # B boots while A keeps stepping (the workflow runs for about STEPS x STEP_DELAY_MS).
    engine_b = fleet.start_engine("engineB")
    b_row = fleet.wait_registered([engine_b])[engine_b.name]
    # An engine registers in worker_init, before Celery consumes its queue; on a loaded
    # machine that can be seconds later. The adopt order waits in the queue meanwhile, so
    # the bound below is measured from a worker that consumes.
    wait_until(
        lambda: f"{engine_b.name}@" in engine_b.log_text() and " ready." in engine_b.log_text(),
        timeout_s=30,
        what="B's worker to consume its queue",
        check=fleet.check_alive,
    )
    assert Workflow.objects.get(workflow_id=wf).status == "running", "A finished too soon"

    new_epoch = claim_force_takeover_and_notify(
        wf,
        expected_epoch=a_epoch,
        target_engine_id=b_row.engine_id,
        actor="operator",
        reason="move it off engine A",
    ).epoch
    # The entry point sent the adopt message after commit on this process's broker; the
    # engines listen on their own, so the same message goes there.
    with celery_app.connection_for_write(fleet.broker_url) as connection:
        # Celery accepts a connection here; its type stubs do not say so.
        adopt.apply_async(  # type: ignore[call-arg]
            args=(wf, new_epoch), queue=b_row.queue, connection=connection
        )

    wait_until(
        lambda: Workflow.objects.get(workflow_id=wf).status == "completed",
        timeout_s=60,
        what="B to finish the workflow",
        check=fleet.check_alive,
    )
    forced = ClaimEvent.objects.get(workflow_id=wf, kind="forced_takeover")
    adopted = ClaimEvent.objects.get(workflow_id=wf, kind="adopted")
    assert (forced.epoch_before, forced.epoch_after) == (a_epoch, new_epoch)
    assert (adopted.engine_id, adopted.epoch_after) == (b_row.engine_id, new_epoch)
    assert adopted.at_ms - forced.at_ms <= RENEW_INTERVAL_MS + 1_000

    steps = Workflow.objects.get(workflow_id=wf).state["steps"]
    by_order = sorted(steps.values(), key=lambda record: record["at_ms"])
    epochs = [record["epoch"] for record in by_order]
    assert epochs == sorted(epochs), "a checkpoint of A's epoch landed after B's"
    assert {record["engine_id"] for record in steps.values() if record["epoch"] == new_epoch} == {
        b_row.engine_id
    }
    assert len(steps) == STEPS
    # Every step ran once, except the one A was running when it was deposed (at most twice).
    reruns = (
        StepLedger.objects.filter(workflow_id=wf)
        .values("step")
        .annotate(runs=Count("pk"))
        .exclude(runs=1)
    )
    assert all(row["runs"] == 2 for row in reruns)
    assert len(reruns) <= 1
    claim = WorkflowClaim.objects.get(workflow_id=wf)
    assert (claim.epoch, claim.holder_engine_id) == (new_epoch, None)
