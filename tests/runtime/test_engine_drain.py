"""Drain on the real engine machinery (claims.engine.local): no acquire or takeover while
draining, running drives reach their next checkpoint, then every claim is released; the
flag is read at each tick, so a lost claims.drain message heals; undrain puts it back."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from unittest import mock

import pytest

from claims.engine.local import LocalEngine
from claims.models import Engine, WorkflowClaim
from claims.services.drain import engine_drain, engine_undrain
from claims.tasks import drain as drain_task
from claims.tasks import undrain as undrain_task

from .conftest import (
    START_MS,
    ledger,
    recorded_steps,
    registered_local_engine,
)
from .workflows import during_step

pytestmark = pytest.mark.django_db


@pytest.fixture
def local(clock: Any) -> Iterator[LocalEngine]:
    with registered_local_engine("e-drain", clock) as engine:
        yield engine


@pytest.fixture
def start_on(start: Any, local: LocalEngine) -> Any:
    """Start a workflow claimed by the local engine (its registry adopts the claim)."""

    def begin(workflow_type: str) -> str:
        return start(workflow_type, engine=local)  # it has an engine_id and a registry

    return begin


def drain_now(local: LocalEngine) -> None:
    """What an operator's drain amounts to: the flag committed, then the message handled."""
    Engine.objects.filter(engine_id=local.engine_id).update(drain_requested_at_ms=START_MS)
    local.drain.set(True)


def holder(workflow_id: str) -> str | None:
    return WorkflowClaim.objects.get(workflow_id=workflow_id).holder_engine_id


def test_a_draining_engine_skips_reclaim_and_releases_what_it_holds(local, start_on, start):
    held = [start_on("ledger"), start_on("ledger")]
    ownerless = start("ledger")

    local.drain.set(True)

    assert local.run_reclaim() == {"status": "draining"}
    assert (
        WorkflowClaim.objects.filter(workflow_id=ownerless, holder_engine_id__isnull=False).count()
        == 0
    )
    assert local.run_wake() == {"driven": 0, "drain_released": 2}
    assert [holder(w) for w in held] == [None, None]
    assert local.registry.held_workflow_ids() == []


def test_a_running_drive_reaches_its_checkpoint_then_its_claim_is_released(local, start_on):
    workflow_id = start_on("test-hooked-ledger")
    seen_during_drive: list[int] = []

    def drain_mid_step(ctx: Any) -> None:
        drain_now(local)
        # A drive in progress is left to reach its checkpoint: not released under it.
        seen_during_drive.append(local.drain.release_idle())

    during_step(workflow_id, "step-1", drain_mid_step)
    local._drive(workflow_id)

    assert seen_during_drive == [0]
    assert recorded_steps(workflow_id).keys() == {"step-1"}  # checkpointed, then paused
    assert ledger(workflow_id) == {"step-1": [(1, "e-drain")]}
    assert holder(workflow_id) == "e-drain"  # still renewed while it is held
    assert local.run_renew()["renewed"] == 1

    assert local.run_wake()["drain_released"] == 1
    assert holder(workflow_id) is None


def test_no_drive_starts_while_draining(local, start_on):
    workflow_id = start_on("ledger")
    local.drain.set(True)

    local._drive(workflow_id)

    assert ledger(workflow_id) == {}


def test_the_flag_is_read_at_each_tick_so_a_lost_message_heals(
    local, start_on, django_capture_on_commit_callbacks
):
    workflow_id = start_on("ledger")
    with (
        mock.patch("claims.tasks.drain.apply_async") as send,
        django_capture_on_commit_callbacks(execute=True),
    ):
        engine_drain("e-drain", actor="alice", reason="rolling restart")
    send.assert_called_once()  # ... and say it was lost: the engine still learns
    assert send.call_args.kwargs["queue"] == "engine.e-drain"

    assert local.run_renew()["draining"] is True
    assert local.drain.active
    assert local.run_wake()["drain_released"] == 1
    assert holder(workflow_id) is None

    with mock.patch("claims.tasks.undrain.apply_async"):
        engine_undrain("e-drain", actor="alice", reason="done")
    assert local.run_renew()["draining"] is False
    assert local.run_reclaim()["status"] != "draining"


def test_undrain_puts_the_engine_back_to_driving(local, start_on):
    workflow_id = start_on("ledger")
    local.drain.set(True)
    local.drain.set(False)

    local._drive(workflow_id)

    assert set(ledger(workflow_id)) == {"step-1", "step-2", "step-3"}


def test_the_drain_tasks_reach_the_engine_of_this_worker(local):
    with mock.patch("claims.engine.worker.local_engine", return_value=local):
        assert drain_task("e-drain") == "draining"
        assert local.drain.active
        assert drain_task("another-engine") == "no-engine"
        assert undrain_task("e-drain") == "undrained"
        assert not local.drain.active
