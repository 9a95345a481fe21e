"""The fault harness's checks catch each kind of broken history, and pass a sound one."""

from __future__ import annotations

from faults.checks import (
    api_check,
    bulk_check,
    checkpoints_check,
    epochs_check,
    failover_measure,
    ghosts_seen,
    ledger_check,
    metrics_check,
    stranded_check,
)
from faults.fleet_under_test import Timing
from faults.history import BulkJobRecord, Checkpoint, ClaimVersion, History, LedgerRow
from faults.nemesis import FaultRecord
from faults.watch import Stretch

TIMING = Timing(ttl_ms=3_000, renew_interval_ms=1_000)


def history(**parts) -> History:
    made = History()
    for name, value in parts.items():
        getattr(made, name).update(value)
    made.ledger_workflows = set(made.ledger)
    return made


def sound() -> History:
    """wf: a holds epoch 1 and runs step-1; b takes over at epoch 2 (t=5000) and finishes."""
    return history(
        claims={
            "wf": [
                ClaimVersion(1, "a", 1, 1_000),
                ClaimVersion(2, "b", 2, 5_000),
                ClaimVersion(2, None, None, 7_000),
            ]
        },
        events={"wf": [("acquired", None, 1), ("takeover", 1, 2), ("released", 2, 2)]},
        checkpoints={
            "wf": [
                Checkpoint("steps:step-1", 1, "a", 1_500),
                Checkpoint("steps:step-2", 2, "b", 6_000),
            ]
        },
        ledger={
            "wf": [
                LedgerRow("step-1", 1, "a", 1_400),
                LedgerRow("step-2", 1, "a", 1_800),  # a's effect, never checkpointed
                LedgerRow("step-2", 2, "b", 5_900),
            ]
        },
    )


def test_a_sound_history_passes_every_check():
    made = sound()
    assert checkpoints_check(made).passed
    assert epochs_check(made).passed
    ledger = ledger_check(made, [], TIMING)
    assert ledger.passed
    assert any("1 re-run(s)" in fact for fact in ledger.facts)


def test_two_engines_checkpointing_under_one_epoch_is_a_violation():
    made = sound()
    made.checkpoints["wf"].append(Checkpoint("steps:step-3", 2, "a", 6_500))
    assert not checkpoints_check(made).passed


def test_a_checkpoint_of_an_older_epoch_after_a_newer_one_is_a_violation():
    made = sound()
    made.checkpoints["wf"].append(Checkpoint("steps:step-3", 1, "a", 6_500))
    violations = checkpoints_check(made).violations
    assert any("after a checkpoint of epoch 2" in v for v in violations)


def test_a_checkpoint_committed_after_the_successors_grant_is_a_violation():
    made = sound()
    made.checkpoints["wf"].insert(1, Checkpoint("sleeps:0", 1, "a", 5_100))
    assert any("after epoch 2 was granted" in v for v in checkpoints_check(made).violations)


def test_an_epoch_that_skips_is_a_violation():
    made = sound()
    made.claims["wf"].append(ClaimVersion(4, "c", 4, 9_000))
    made.events["wf"].append(("takeover", 2, 4))
    violations = epochs_check(made).violations
    assert any("from 2 to 4" in v for v in violations)
    assert any("moved 2 -> 4" in v for v in violations)


def test_two_holders_of_one_epoch_is_a_violation():
    made = sound()
    made.claims["wf"].insert(2, ClaimVersion(2, "c", 2, 5_500))
    assert any("held by ['b', 'c']" in v for v in epochs_check(made).violations)


def test_a_grant_missing_from_the_event_log_is_a_violation():
    made = sound()
    del made.events["wf"][1]
    assert any("event log accounts for 1" in v for v in epochs_check(made).violations)


def test_an_effect_of_a_deposed_owner_after_the_successors_grant_is_a_violation():
    made = sound()
    made.ledger["wf"].append(LedgerRow("step-3", 1, "a", 5_200))
    assert any("after epoch 2's grant" in v for v in ledger_check(made, [], TIMING).violations)


def test_a_step_run_again_after_its_checkpoint_is_a_violation():
    made = sound()
    made.ledger["wf"].append(LedgerRow("step-1", 2, "b", 5_300))
    assert any("after its checkpoint" in v for v in ledger_check(made, [], TIMING).violations)


def test_a_checkpoint_without_its_effect_is_a_violation():
    made = sound()
    made.ledger["wf"] = [row for row in made.ledger["wf"] if row.step != "step-1"]
    assert any("without an effect" in v for v in ledger_check(made, [], TIMING).violations)


def test_re_runs_are_counted_by_the_fault_active_at_the_grant():
    made = sound()
    kill = FaultRecord(kind="kill", target="engine1", started_ms=2_000, ended_ms=3_000)
    facts = ledger_check(made, [kill], TIMING).facts
    assert any("fault: kill" in fact for fact in facts)


def test_a_stretch_without_progress_after_the_last_fault_is_a_violation_held_or_not():
    for held in (False, True):
        stretches = {"wf": [Stretch(10_000, 10_500, held)]}
        assert not stranded_check(stretches, 9_000, TIMING, []).passed
        assert stranded_check(stretches, 20_000, TIMING, []).passed  # all of it during faults
    assert not stranded_check({}, 0, TIMING, ["wf"]).passed


def test_ghost_holders_are_listed_by_the_fault_in_force_when_they_began():
    cut = FaultRecord(kind="cut", target="engine1", started_ms=1_000, ended_ms=4_000)
    stall = FaultRecord(kind="stall", target="engine2", started_ms=8_000, ended_ms=9_000)
    stretches = {
        "wf-1": [Stretch(3_000, 3_700, held=True)],
        "wf-2": [Stretch(9_500, 9_600, held=False)],  # unheld: not a ghost
    }

    lines = ghosts_seen(stretches, [cut, stall])

    assert lines == ["cut: 1 ghost holders: 700 ms (wf-1) past the bound", "stall: 0 ghost holders"]


def test_a_fleet_counter_going_down_or_disagreeing_with_the_engines_is_a_violation():
    key = "weft_workflow_claim_attempts_total{outcome=acquired}"
    assert metrics_check([{key: 3}, {key: 5}], {key: 5}, {key: 5}).passed
    assert not metrics_check([{key: 5}, {key: 3}], {key: 5}, {key: 5}).passed
    assert not metrics_check([], {key: 4}, {key: 5}).passed


def test_server_errors_and_dropped_connections_of_the_api_are_violations():
    assert api_check({"cancel:200": 3, "release:409": 2}, {}).passed
    assert not api_check({"release:500": 1}, {}).passed
    assert not api_check({}, {"0": 2}).passed
    assert not api_check({"takeover:read 502": 1}, {}).passed


def test_failover_counts_the_time_until_another_engine_holds_each_workflow():
    made = sound()
    death = FaultRecord(
        kind="kill", target="engine1", started_ms=1_200, ended_ms=2_000, engine_id="a", held=["wf"]
    )
    failover = failover_measure(made, [death], TIMING)
    assert failover.latencies_ms == [3_800]


def bulk_job(**changes) -> BulkJobRecord:
    """Job 1 released wf-a (done, 3 -> 4) and found wf-b moved and wf-c refused."""
    job = BulkJobRecord(
        job_id=1,
        status="done",
        items={"wf-a": ("done", 3, 4), "wf-b": ("moved", 2, None), "wf-c": ("refused", 5, None)},
        events={"wf-a": [(3, 4)]},
    )
    for name, value in changes.items():
        setattr(job, name, value)
    return job


def test_bulk_check_passes_a_job_that_acted_on_each_done_item_once():
    check = bulk_check([bulk_job(), bulk_job(job_id=2, status="paused")])

    assert check.passed, check.violations
    assert check.facts == ["2 bulk jobs, items {'done': 2, 'moved': 2, 'refused': 2}"]


def test_bulk_check_passes_a_first_claim_from_epoch_zero():
    job = bulk_job(items={"wf-new": ("done", 0, 1)}, events={"wf-new": [(None, 1)]})

    assert bulk_check([job]).passed


def test_bulk_check_fails_an_item_acted_on_twice():
    check = bulk_check([bulk_job(events={"wf-a": [(3, 4), (4, 5)]})])

    assert check.violations == ["bulk job #1: wf-a done at 3 -> 4 with events [(3, 4), (4, 5)]"]


def test_bulk_check_fails_a_done_item_without_its_event_or_off_its_frozen_epoch():
    missing = bulk_check([bulk_job(events={})])
    skipped = bulk_check([bulk_job(events={"wf-a": [(2, 3)]})])

    assert missing.violations == ["bulk job #1: wf-a done at 3 -> 4 with events []"]
    assert skipped.violations == ["bulk job #1: wf-a done at 3 -> 4 with events [(2, 3)]"]


def test_bulk_check_fails_a_moved_item_with_an_event_and_an_event_outside_the_job():
    check = bulk_check([bulk_job(events={"wf-a": [(3, 4)], "wf-b": [(2, 3)], "wf-z": [(1, 2)]})])

    assert check.violations == [
        "bulk job #1: wf-b moved yet has events [(2, 3)]",
        "bulk job #1: events for workflows not in it: ['wf-z']",
    ]


def test_bulk_check_fails_a_job_still_running_or_failed_at_the_end():
    check = bulk_check([bulk_job(status="running"), bulk_job(job_id=2, status="failed")])

    assert check.violations == ["bulk job #1 ended running", "bulk job #2 ended failed"]
