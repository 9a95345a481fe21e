"""A dead engine stays dead, across a switch of the fleet's ownership mode (docs/design.md
§4, §12), with real processes: a workflow-lease engine is paused (SIGSTOP) until beat marks
it dead, the fleet is switched to engine-lease with the management command, and the engine
is resumed (SIGCONT). It must never show active again, grant itself nothing, give up what
it still held and exit with EX_TEMPFAIL (75), so that its supervisor starts a fresh
process; the engine-lease engines started after the switch then hold every workflow under
their sessions.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time

import pytest

from claims.fleet_clock import database_now_ms
from claims.models import (
    ClaimEvent,
    Engine,
    EngineStatus,
    OwnershipModeMarker,
    Workflow,
    WorkflowClaim,
)
from claims.services.engines import DEAD_AFTER_TTLS
from claims.services.workflows import workflow_start
from faults.processes import manage

from ._fleet import TTL_MS, Fleet, Process, wait_until

pytestmark = pytest.mark.slow

# Beat checks for silent engines every TTL; the slack covers beat's and the box's jitter.
MARKED_DEAD_WITHIN_S = ((DEAD_AFTER_TTLS + 1) * TTL_MS + 8_000) / 1000
# Resumed, it finds out at its first pass (its heartbeat), then releases and stops.
EXITS_WITHIN_S = 60


def parked_workflows(count: int) -> list[str]:
    """Ownerless ledger workflows that run a step and then sleep for ten minutes: held,
    parked and renewed by whoever claims them, for the whole test."""
    return [
        workflow_start(workflow_type="ledger", input={"steps": 2, "sleep": 600}).workflow_id
        for _ in range(count)
    ]


def claims_of(workflow_ids: list[str]) -> dict[str, WorkflowClaim]:
    return {c.workflow_id: c for c in WorkflowClaim.objects.filter(workflow_id__in=workflow_ids)}


def held_by(engine_ids: set[str], workflow_ids: list[str]) -> dict[str, int]:
    """Workflow id -> epoch of those of them these engines hold."""
    return {
        wf: claim.epoch
        for wf, claim in claims_of(workflow_ids).items()
        if claim.holder_engine_id in engine_ids
    }


def last_reclaim_at_ms(engine_id: str) -> int | None:
    summary = Engine.objects.get(engine_id=engine_id).pass_summary or {}
    return (summary.get("reclaim") or {}).get("at_ms")


def pause_between_reclaim_passes(process: Process, engine_id: str) -> None:
    """SIGSTOP the engine just after a reclaim pass wrote its heartbeat, so it is not
    stopped inside one: the next starts half an interval after a tick at the earliest.

    A pass stopped after its check of the engine's row would, once resumed, finish with
    the grants it was making (docs/design.md §4, "What remains": a window the fence makes
    safe, and which the engine's heartbeat right after that pass closes). That window is
    not what this test is about."""
    seen = last_reclaim_at_ms(engine_id)
    deadline = time.monotonic() + 10
    while last_reclaim_at_ms(engine_id) == seen:
        assert time.monotonic() < deadline, "no reclaim pass in 10 s"
        time.sleep(0.01)
    process.send(signal.SIGSTOP)


def switch_mode(fleet: Fleet, mode: str) -> subprocess.CompletedProcess[str]:
    return manage("ownership_mode", "--switch-to", mode, env=fleet.env())


@pytest.mark.timeout(240)
def test_an_engine_paused_through_a_mode_switch_stays_dead_and_exits(fleet: Fleet) -> None:
    engine_a = fleet.start_engine("engineA")
    fleet.start_beat()
    a_id = fleet.wait_registered([engine_a])[engine_a.name].engine_id
    before = parked_workflows(6)
    wait_until(
        lambda: (
            len(held_by({a_id}, before)) == len(before)
            and Workflow.objects.filter(workflow_id__in=before, state__has_key="park").count()
            == len(before)
        ),
        timeout_s=30,
        what="A to hold and park every workflow",
        check=fleet.check_alive,
    )
    # B runs beat's tasks while A is paused (marking A dead among them) and takes A's
    # workflows over.
    engine_b = fleet.start_engine("engineB")
    b_id = fleet.wait_registered([engine_b])[engine_b.name].engine_id
    epochs_at_pause = held_by({a_id}, before)

    pause_between_reclaim_passes(engine_a, a_id)
    # Silent but not yet dead, it still counts as running: the switch waits for it.
    with pytest.raises(subprocess.CalledProcessError) as refused:
        switch_mode(fleet, "engine-lease")
    assert "stop these first" in refused.value.stderr
    assert a_id in refused.value.stderr
    wait_until(
        lambda: (
            Engine.objects.get(engine_id=a_id).status == EngineStatus.DEAD
            and held_by({b_id}, before) == {wf: epoch + 1 for wf, epoch in epochs_at_pause.items()}
        ),
        timeout_s=MARKED_DEAD_WITHIN_S,
        what="beat to mark the paused engine dead, and B to take its workflows over",
        check=fleet.check_alive,
    )
    # The operator stops the rest of the fleet (B releases what it holds), then switches.
    engine_b.send(signal.SIGTERM)
    assert engine_b.wait(30) == 0
    assert (
        "switched from workflow-lease to engine-lease" in switch_mode(fleet, "engine-lease").stdout
    )
    switched_after = ClaimEvent.objects.order_by("-pk").values_list("pk", flat=True).first() or 0
    after = parked_workflows(6)  # new work, which nobody has claimed yet
    everything = before + after

    engine_a.expected_exit = True
    resumed_ms = database_now_ms()
    engine_a.send(signal.SIGCONT)

    def exited() -> bool:
        status = Engine.objects.get(engine_id=a_id).status
        assert status == EngineStatus.DEAD, f"the dead engine shows {status} again"
        return not engine_a.alive()

    wait_until(exited, timeout_s=EXITS_WITHIN_S, what="the resumed engine to exit")
    print(f"A exited {database_now_ms() - resumed_ms} ms after SIGCONT")
    assert engine_a.wait(0) == os.EX_TEMPFAIL  # claims.engine.worker.DEAD_ENGINE_EXIT_CODE
    assert Engine.objects.get(engine_id=a_id).status == EngineStatus.DEAD
    assert engine_a.log_text().count("event=engine-revived-dead") == 1, engine_a.tail()
    # Nothing granted to it after the switch, and no claim names it: none at an epoch
    # past the pause, none at all.
    grants = ClaimEvent.objects.filter(
        pk__gt=switched_after, engine_id=a_id, kind__in=["acquired", "takeover"]
    )
    assert list(grants.values_list("workflow_id", flat=True)) == []
    assert held_by({a_id}, everything) == {}
    assert not WorkflowClaim.objects.filter(holder_engine_id=a_id).exists()

    # Its supervisor would start the old command again, which the gate now refuses; the
    # engines of the fleet's mode take every workflow, each claim under a session.
    assert OwnershipModeMarker.objects.get().mode == "engine-lease"
    fleet.ownership_mode = "engine-lease"
    successors = [fleet.start_engine(name) for name in ("engineC", "engineD")]
    rows = fleet.wait_registered(successors)
    successor_ids = {row.engine_id for row in rows.values()}
    wait_until(
        lambda: len(held_by(successor_ids, everything)) == len(everything),
        timeout_s=30,
        what="the engine-lease engines to hold every workflow",
        check=fleet.check_alive,
    )
    per_claim = [
        wf
        for wf, claim in claims_of(everything).items()
        if claim.holder_session_epoch is None or claim.holder_expires_at_ms is not None
    ]
    assert per_claim == []
