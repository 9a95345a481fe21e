"""The soak's checks: each passes on a good record and fails on the broken one it guards."""

from __future__ import annotations

from soak import checks
from soak.fleet_db import WorkflowRow

NOW = 1_000_000_000
WITHIN = 45_000


def kill(**changes) -> checks.Kill:
    base = checks.Kill(
        at_s=120.0,
        program="engine2",
        pid=4242,
        engine_id="dead-engine",
        held={"wf-1": 3, "wf-2": 7},
        takeovers_before=10,
        replaced_after_s=1.5,
        new_engine_id="new-engine",
        cleared_after_s=41.0,
        takeovers_after=12,
        shown_on_overview=True,
    )
    for key, value in changes.items():
        setattr(base, key, value)
    return base


SUPERVISOR_KILL = (
    "2026-12-03 02:19:39,640 WARN exited: engine2 (terminated by SIGKILL; not expected)"
)


def test_exits_pass_when_each_exit_is_a_kill_of_the_soak():
    assert checks.exits_check(SUPERVISOR_KILL, [kill()]).passed


def test_an_exit_nobody_caused_fails():
    crashed = "2026-12-03 02:19:39,640 WARN exited: engine3 (exit status 1; not expected)"
    check = checks.exits_check(f"{SUPERVISOR_KILL}\n{crashed}", [kill()])
    assert not check.passed
    assert any("engine3 exited on its own" in failure for failure in check.failures)


def test_a_process_given_up_by_supervisord_fails():
    gave_up = (
        "2026-12-03 02:20:00,000 INFO gave up: beat entered FATAL state, too many start retries"
    )
    assert not checks.exits_check(f"{SUPERVISOR_KILL}\n{gave_up}", [kill()]).passed


def test_a_kill_without_an_exit_line_fails():
    assert not checks.exits_check("", [kill()]).passed


def test_replacement_fails_without_a_new_engine_or_with_the_old_id():
    assert checks.replacement_check([kill()], within_s=60).passed
    assert not checks.replacement_check([kill(new_engine_id=None)], within_s=60).passed
    assert not checks.replacement_check([kill(new_engine_id="dead-engine")], within_s=60).passed
    assert not checks.replacement_check([kill(replaced_after_s=61.0)], within_s=60).passed


def test_takeover_fails_when_late_never_or_at_the_same_epoch():
    assert checks.takeover_check([kill()], bound_s=45).passed
    assert not checks.takeover_check([kill(cleared_after_s=46.0)], bound_s=45).passed
    assert not checks.takeover_check([kill(cleared_after_s=None)], bound_s=45).passed
    assert not checks.takeover_check([kill(not_advanced=["wf-1"])], bound_s=45).passed


def test_takeover_fails_when_the_counter_stood_still_or_the_page_hid_the_engine():
    assert not checks.takeover_check([kill(takeovers_after=10)], bound_s=45).passed
    assert not checks.takeover_check([kill(shown_on_overview=False)], bound_s=45).passed


def test_a_kill_of_an_engine_that_held_nothing_needs_no_takeover():
    assert checks.takeover_check(
        [kill(held={}, cleared_after_s=None, takeovers_after=10)], bound_s=45
    ).passed


def workflow(**changes) -> WorkflowRow:
    fields: dict = {
        "workflow_id": "wf-1",
        "status": "running",
        "created_at_ms": NOW - 600_000,
        "updated_at_ms": NOW - 1_000,
        "wake_at_ms": None,
        "holder_engine_id": "live",
    }
    fields.update(changes)
    return WorkflowRow(**fields)


def workflows_pass(*rows: WorkflowRow, failed_at_start=frozenset()) -> bool:
    return checks.workflows_check(
        list(rows),
        now_ms=NOW,
        live_engines={"live"},
        failed_at_start=set(failed_at_start),
        driven_within_ms=WITHIN,
    ).passed


def test_running_workflows_held_by_live_engines_and_moving_pass():
    assert workflows_pass(workflow(), workflow(workflow_id="wf-2", status="completed"))


def test_a_parked_workflow_passes_while_its_wake_time_is_ahead_or_just_passed():
    idle = NOW - 300_000
    assert workflows_pass(workflow(updated_at_ms=idle, wake_at_ms=NOW + 60_000))
    assert workflows_pass(workflow(updated_at_ms=idle, wake_at_ms=NOW - 10_000))
    assert not workflows_pass(workflow(updated_at_ms=idle, wake_at_ms=NOW - 60_000))


def test_a_running_workflow_held_by_a_dead_engine_or_nobody_fails():
    assert not workflows_pass(workflow(holder_engine_id="dead"))
    assert not workflows_pass(workflow(holder_engine_id=None))


def test_a_workflow_that_stopped_moving_fails():
    assert not workflows_pass(workflow(updated_at_ms=NOW - 60_000))


def test_a_workflow_started_a_moment_ago_may_still_be_unclaimed():
    assert workflows_pass(workflow(holder_engine_id=None, created_at_ms=NOW - 2_000))


def test_a_workflow_that_failed_during_the_soak_fails_but_a_seeded_failure_does_not():
    assert not workflows_pass(workflow(status="failed"))
    assert workflows_pass(workflow(status="failed"), failed_at_start={"wf-1"})


def test_logs_fail_on_a_traceback_or_a_critical_line():
    assert checks.logs_check("INFO all good\nWARNING a warning").passed
    assert not checks.logs_check("Traceback (most recent call last):").passed
    assert not checks.logs_check("[x: engine1 CRITICAL/MainProcess] Unrecoverable error").passed


def test_metrics_fail_when_a_counter_goes_down():
    up = [{"a_total{}": 1.0}, {"a_total{}": 2.0}, {"a_total{}": 2.0}]
    assert checks.metrics_check(up).passed
    assert not checks.metrics_check([*up, {"a_total{}": 1.0}]).passed


def test_pages_fail_on_any_answer_but_200():
    assert checks.pages_check([("/", 200), ("/claims/", 200)]).passed
    assert not checks.pages_check([("/", 200), ("/claims/", 500)]).passed


def test_shutdown_fails_when_something_outlives_ctrl_c_or_claims_stay_held():
    assert checks.shutdown_check(exited_in_time=True, left_running=[], held=0).passed
    assert not checks.shutdown_check(exited_in_time=False, left_running=[], held=0).passed
    assert not checks.shutdown_check(exited_in_time=True, left_running=[123], held=0).passed
    assert not checks.shutdown_check(exited_in_time=True, left_running=[], held=2).passed
