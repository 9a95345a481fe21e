"""A deposed drive stops unwritten; the next owner replays committed steps and never reruns them.

The ledger counts every execution of a step. A step whose checkpoint committed
runs exactly once; the step that was running when its engine was deposed ran
once there and runs once more under the new owner (at most twice in all).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from claims.models import WorkflowClaim
from claims.protocol import rotate_claim
from claims.store import OrmClaimStore

from .conftest import EXPIRY_MS, claim_row, ledger, recorded_steps, workflow_row
from .workflows import after_step, before_step, during_step


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@contextmanager
def runtime_log() -> Iterator[list[logging.LogRecord]]:
    """The runtime's log records at INFO and above, whatever the logging configuration."""
    logger = logging.getLogger("weftboard.claims.runtime")
    handler = _Records()
    handler.setLevel(logging.INFO)
    logger.addHandler(handler)
    try:
        yield handler.records
    finally:
        logger.removeHandler(handler)


def lost_to_b_at(hook, step: str, engine, start, clock) -> tuple[Any, Any, str]:
    """Engines a and b, and a ledger workflow a starts; at ``step`` (``hook``: before it,
    during it) a stalls past expiry and b takes the claim over. Returns (a, b, wf)."""
    a, b = engine("a"), engine("b")
    wf = start("test-hooked-ledger", engine=a)

    def stall_then_lose_the_claim(ctx):
        clock.advance(EXPIRY_MS)
        assert b.registry.takeover(wf).status == "acquired"

    hook(wf, step, stall_then_lose_the_claim)
    return a, b, wf


def test_takeover_during_a_step_deposes_the_drive_and_the_successor_reruns_only_that_step(
    engine, start, clock
):
    a, b, wf = lost_to_b_at(during_step, "step-2", engine, start, clock)
    with runtime_log() as records:
        assert a.drive(wf) == "deposed"

    assert [(r.levelname, r.getMessage()) for r in records] == [
        ("WARNING", f"event=deposed workflow={wf} epoch=1 engine=a")
    ]
    assert ledger(wf) == {"step-1": [(1, "a")], "step-2": [(1, "a")]}
    assert recorded_steps(wf) == {"step-1": (1, "a")}
    assert workflow_row(wf).status == "running"
    assert claim_row(wf).holder_engine_id == "b"

    assert b.drive(wf) == "completed"

    assert ledger(wf) == {
        "step-1": [(1, "a")],
        "step-2": [(1, "a"), (2, "b")],
        "step-3": [(2, "b")],
    }
    assert recorded_steps(wf) == {"step-1": (1, "a"), "step-2": (2, "b"), "step-3": (2, "b")}
    row = workflow_row(wf)
    assert row.status == "completed"
    assert len(row.state["result"]["entries"]) == 3
    claim = claim_row(wf)
    assert (claim.epoch, claim.holder_engine_id) == (2, None)


def test_a_drive_deposed_before_its_side_effect_commits_no_ledger_row(engine, start, clock):
    """Engine a passed every check before step-2, then stalled past expiry and lost the
    claim: the ledger write is fenced, so a's late effect never lands beside b's."""
    a, b, wf = lost_to_b_at(before_step, "step-2", engine, start, clock)
    with runtime_log():
        assert a.drive(wf) == "deposed"

    assert ledger(wf) == {"step-1": [(1, "a")]}
    assert b.drive(wf) == "completed"
    assert ledger(wf) == {"step-1": [(1, "a")], "step-2": [(2, "b")], "step-3": [(2, "b")]}


def test_epoch_rotated_from_inside_a_step_deposes_the_drive(engine, start):
    """An operator's forced release lands while step-2 runs: its checkpoint is refused and
    nothing of the drive is written after; a new owner (epoch 3) finishes it."""
    a, b = engine("a"), engine("b")
    wf = start("test-hooked-ledger", engine=a)
    during_step(wf, "step-2", lambda ctx: rotate_claim(OrmClaimStore(), wf, clock=ctx.now_ms))

    assert a.drive(wf) == "deposed"

    updated_at = workflow_row(wf).updated_at_ms
    assert recorded_steps(wf) == {"step-1": (1, "a")}
    assert b.registry.acquire(wf).epoch == 3
    assert b.drive(wf) == "completed"
    assert ledger(wf) == {
        "step-1": [(1, "a")],
        "step-2": [(1, "a"), (3, "b")],
        "step-3": [(3, "b")],
    }
    assert workflow_row(wf).updated_at_ms >= updated_at


def test_deposed_engine_does_not_rerun_the_step_while_it_still_caches_the_claim(
    engine, start, clock
):
    """Until its next renewal finds the claim lost, the registry still caches epoch 1;
    a second drive by that engine must not start the lost step's side effect again."""
    a, _, wf = lost_to_b_at(during_step, "step-2", engine, start, clock)
    assert a.drive(wf) == "deposed"
    assert a.registry.current_epoch(wf) == 1  # stale, until the next renewal

    assert a.drive(wf) == "deposed"

    assert ledger(wf) == {"step-1": [(1, "a")], "step-2": [(1, "a")]}
    assert a.registry.renew(wf).status == "lost"
    assert a.drive(wf) == "deposed"
    assert ledger(wf) == {"step-1": [(1, "a")], "step-2": [(1, "a")]}


def test_engine_regranted_after_a_deposition_drives_again(engine, start, clock):
    """The refusal is for the lost epoch only: a new grant to the same engine drives."""
    a, b, wf = lost_to_b_at(during_step, "step-1", engine, start, clock)
    assert a.drive(wf) == "deposed"
    assert a.registry.renew(wf).status == "lost"
    assert b.registry.release(wf).status == "released"
    assert a.registry.acquire(wf).epoch == 3

    assert a.drive(wf) == "completed"

    assert ledger(wf)["step-1"] == [(1, "a"), (3, "a")]
    assert recorded_steps(wf) == {f"step-{n}": (3, "a") for n in (1, 2, 3)}


def test_workflow_code_that_swallows_the_deposition_still_stops_unwritten(engine, start):
    """Catching EngineDeposedError does not let the drive go on: every later step refuses
    at once (no side effect), and what the code returns is never written."""
    a = engine("a")
    wf = start("test-swallowing", engine=a)
    during_step(wf, "step-1", lambda ctx: rotate_claim(OrmClaimStore(), wf, clock=ctx.now_ms))

    assert a.drive(wf) == "deposed"

    assert ledger(wf) == {"step-1": [(1, "a")]}
    row = workflow_row(wf)
    assert (row.status, "result" in row.state, row.state["steps"]) == ("running", False, {})
    assert WorkflowClaim.objects.get(workflow_id=wf).epoch == 2


def regrant_to(a, b, wf: str) -> None:
    """The claim moves on and comes back to engine a at a later epoch (1 -> 2 -> 3)."""
    assert a.registry.release(wf).status == "released"
    assert b.registry.acquire(wf).epoch == 2
    assert b.registry.release(wf).status == "released"
    assert a.registry.acquire(wf).epoch == 3


def test_regrant_between_steps_stops_the_drive_begun_under_the_old_epoch(engine, start):
    """Its state may be stale (engine b held the claim meanwhile): the next step does not
    start, and the drive at epoch 3 starts over from the checkpoints."""
    a, b = engine("a"), engine("b")
    wf = start("test-hooked-ledger", engine=a)
    after_step(wf, "step-1", lambda ctx: regrant_to(a, b, wf))

    assert a.drive(wf) == "deposed"

    assert ledger(wf) == {"step-1": [(1, "a")]}
    assert a.drive(wf) == "completed"
    assert ledger(wf) == {"step-1": [(1, "a")], "step-2": [(3, "a")], "step-3": [(3, "a")]}


def test_regrant_during_a_step_refuses_its_checkpoint(engine, start):
    """The fence would pass at the registry's new epoch; the drive's epoch is checked too."""
    a, b = engine("a"), engine("b")
    wf = start("test-hooked-ledger", engine=a)
    during_step(wf, "step-2", lambda ctx: regrant_to(a, b, wf))

    assert a.drive(wf) == "deposed"

    assert recorded_steps(wf) == {"step-1": (1, "a")}
    assert a.drive(wf) == "completed"
    assert ledger(wf)["step-2"] == [(1, "a"), (3, "a")]
    assert recorded_steps(wf) == {"step-1": (1, "a"), "step-2": (3, "a"), "step-3": (3, "a")}


def test_regrant_in_the_last_step_refuses_the_terminal_write(engine, start):
    a, b = engine("a"), engine("b")
    wf = start("test-hooked-ledger", engine=a)
    after_step(wf, "step-3", lambda ctx: regrant_to(a, b, wf))

    assert a.drive(wf) == "deposed"

    assert workflow_row(wf).status == "running"
    assert claim_row(wf).holder_engine_id == "a"
    assert a.drive(wf) == "completed"
    assert ledger(wf) == {f"step-{n}": [(1, "a")] for n in (1, 2, 3)}
