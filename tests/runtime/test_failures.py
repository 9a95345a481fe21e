"""Errors in workflow code fail the workflow; the failure and the release commit together."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import OperationalError

from claims.models import ClaimEvent, Workflow, WorkflowVisibility
from claims.protocol import ClaimRegistry, ClaimTiming
from claims.protocol.errors import InvalidInputError
from claims.runtime import WorkflowDriver
from claims.store import OrmClaimStore

from .conftest import RENEW_INTERVAL_MS, TTL_MS, claim_row, ledger, recorded_steps, workflow_row


def assert_failed_and_released(wf: str, error_type: str) -> dict[str, str]:
    row = workflow_row(wf)
    assert row.status == "failed"
    assert "result" not in row.state
    assert row.state["error"]["type"] == error_type
    claim = claim_row(wf)
    assert (claim.epoch, claim.holder_engine_id, claim.holder_epoch) == (1, None, None)
    kinds = list(ClaimEvent.objects.filter(workflow_id=wf).values_list("kind", flat=True))
    assert kinds == ["acquired", "adopted", "released"]
    assert WorkflowVisibility.objects.get(workflow_id=wf).status == "failed"
    return row.state["error"]


def run_to_failure(engine, start, error_type: str, *start_args: Any) -> tuple[Any, str, Any]:
    """Engine "a" drives a new workflow that fails with ``error_type`` and releases its
    claim with the failure; (the engine, the workflow id, the recorded error)."""
    a = engine("a")
    wf = start(*start_args, engine=a)
    assert a.drive(wf) == "failed"
    return a, wf, assert_failed_and_released(wf, error_type)


def test_uncaught_error_marks_failed_with_its_type_and_message_and_releases(engine, start):
    a, wf, error = run_to_failure(engine, start, "CardDeclinedError", "test-failing")
    assert error == {"type": "CardDeclinedError", "message": "card declined: insufficient funds"}
    assert recorded_steps(wf) == {"reserve": (1, "a")}
    assert a.registry.held_workflow_ids() == []


def test_non_json_step_result_fails_the_workflow_with_a_clear_error(engine, start):
    _, wf, error = run_to_failure(engine, start, "NotJsonSerializableError", "test-non-json-step")
    assert "step 'tags'" in error["message"]
    assert "set" in error["message"]
    assert "JSON" in error["message"]
    assert recorded_steps(wf) == {"reserve": (1, "a")}


def test_non_json_workflow_result_fails_the_workflow(engine, start):
    _, _, error = run_to_failure(engine, start, "NotJsonSerializableError", "test-non-json-result")
    assert "result of the workflow" in error["message"]


def test_repeated_step_name_fails_the_workflow_and_names_the_step(engine, start):
    _, wf, error = run_to_failure(engine, start, "DuplicateStepError", "test-duplicate-step")
    assert "'charge'" in error["message"]
    assert "twice" in error["message"]
    assert workflow_row(wf).state["steps"]["charge"]["result"] == 1


def test_step_that_raised_may_be_retried_under_its_name(engine, start):
    a = engine("a")
    wf = start("test-retrying", engine=a)

    assert a.drive(wf) == "completed"

    assert workflow_row(wf).state["result"] == 2
    assert recorded_steps(wf) == {"flaky": (1, "a")}


@pytest.mark.parametrize(
    ("workflow_type", "error_type", "words"),
    [
        ("test-bad-step-name", "InvalidStepNameError", "step name"),
        ("test-bad-sleep", "InvalidSleepError", "-1 seconds"),
        ("test-endless-sleep", "InvalidSleepError", "after 9999-12-31T23:59:59.999Z"),
    ],
)
def test_invalid_step_name_or_sleep_fails_the_workflow(
    engine, start, workflow_type, error_type, words
):
    _, _, error = run_to_failure(engine, start, error_type, workflow_type)
    assert words in error["message"]


def test_bad_input_to_a_demo_type_is_refused_at_start_and_writes_nothing(db, start):
    with pytest.raises(InvalidInputError, match=r"input\.steps must be a whole number"):
        start("ledger", {"steps": "many"})
    assert not Workflow.objects.exists()


def test_bad_input_written_by_another_program_fails_the_demo_type(engine, start):
    """A row the API never saw (a bulk import) is held to the same bounds when it runs."""
    a = engine("a")
    wf = start("ledger", {"steps": 1}, engine=a)
    Workflow.objects.filter(workflow_id=wf).update(state={"input": {"steps": 10**9}, "steps": {}})

    assert a.drive(wf) == "failed"

    error = assert_failed_and_released(wf, "InvalidInputError")
    assert "input.steps" in error["message"]
    assert ledger(wf) == {}


def test_terminal_write_rolls_back_when_the_release_cannot_apply(engine, start, clock):
    """Same epoch, but the holder columns moved (another registry of engine "a" renewed):
    the fence passes, the release CAS fails, and the completion is rolled back with it."""
    a = engine("a")
    wf = start("ledger", {"steps": 2}, engine=a)
    twin = ClaimRegistry(
        OrmClaimStore(),
        engine_id="a",
        clock=clock,
        timing=ClaimTiming(ttl_ms=TTL_MS, renew_interval_ms=RENEW_INTERVAL_MS),
    )
    assert twin.adopt(wf, 1).status == "adopted"
    clock.advance(1_000)
    assert twin.renew(wf).status == "renewed"

    assert a.drive(wf) == "deposed"

    row = workflow_row(wf)
    assert row.status == "running"
    assert "result" not in row.state
    assert recorded_steps(wf) == {"step-1": (1, "a"), "step-2": (1, "a")}
    claim = claim_row(wf)
    assert (claim.epoch, claim.holder_engine_id) == (1, "a")
    assert not ClaimEvent.objects.filter(workflow_id=wf, kind="released").exists()
    assert WorkflowVisibility.objects.get(workflow_id=wf).status == "running"


class _DroppingStore(OrmClaimStore):
    """The ORM store, except that the next fenced write loses its database connection."""

    drop_next = False

    def fenced_write(self, workflow_id, epoch, fn):
        if self.drop_next:
            self.drop_next = False
            raise OperationalError("server closed the connection unexpectedly")
        return super().fenced_write(workflow_id, epoch, fn)


def test_a_connection_lost_under_a_fenced_side_effect_is_re_driven_not_failed(db, start, clock):
    store = _DroppingStore()
    registry = ClaimRegistry(
        store,
        engine_id="a",
        clock=clock,
        timing=ClaimTiming(ttl_ms=TTL_MS, renew_interval_ms=RENEW_INTERVAL_MS),
    )
    driver = WorkflowDriver(registry, clock=clock, disposing=lambda: False)
    engine = type("E", (), {"engine_id": "a", "registry": registry})()
    wf = start("ledger", engine=engine)
    store.drop_next = True

    with pytest.raises(OperationalError):
        driver.drive(wf)

    assert workflow_row(wf).status == "running"
    assert ledger(wf) == {}
    assert driver.drive(wf) == "completed"
    assert ledger(wf) == {f"step-{n}": [(1, "a")] for n in (1, 2, 3)}
