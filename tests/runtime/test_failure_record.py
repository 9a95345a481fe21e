"""A failed workflow records why: type, message, step, traceback, when, epoch and engine."""

from __future__ import annotations

import contextlib

from claims.runtime import WorkflowContext, workflow
from claims.runtime.failures import CUT_MARK, TRACEBACK_MAX_CHARS, bounded_tail

from .conftest import START_MS, workflow_row


class PaymentGatewayError(Exception):
    pass


def _charge() -> None:
    raise PaymentGatewayError("gateway answered 502")


@workflow("test-failure-in-step")
def failing_in_step(ctx: WorkflowContext) -> None:
    ctx.step("reserve", lambda: {"reserved": True})
    ctx.step("charge", _charge)


@workflow("test-failure-after-retries")
def failing_after_retries(ctx: WorkflowContext) -> None:
    """Retries "charge" twice, then wraps its error in one of its own."""
    for _ in range(2):
        with contextlib.suppress(PaymentGatewayError):
            ctx.step("charge", _charge)
    try:
        ctx.step("charge", _charge)
    except PaymentGatewayError as error:
        raise RuntimeError("gave up charging") from error


@workflow("test-retried-then-failing-outside")
def retried_then_failing_outside(ctx: WorkflowContext) -> None:
    runs: list[int] = []

    def flaky() -> int:
        runs.append(1)
        if len(runs) < 3:
            raise PaymentGatewayError(f"attempt {len(runs)} failed")
        return len(runs)

    for _ in range(3):
        with contextlib.suppress(PaymentGatewayError):
            ctx.step("flaky", flaky)
    raise ValueError("bad total")


def test_an_error_raised_in_a_step_is_recorded_with_step_traceback_epoch_and_engine(
    engine, start, clock
):
    a = engine("a")
    wf = start("test-failure-in-step", engine=a)
    clock.advance(250)

    assert a.drive(wf) == "failed"

    row = workflow_row(wf)
    failure = row.failure
    assert failure["type"] == "PaymentGatewayError"
    assert failure["message"] == "gateway answered 502"
    assert failure["step"] == "charge"
    assert (failure["epoch"], failure["engine_id"]) == (1, "a")
    assert failure["at_ms"] == START_MS + 250
    assert failure["traceback"].startswith("Traceback (most recent call last)")
    assert "in _charge" in failure["traceback"]
    assert failure["traceback"].rstrip().endswith("PaymentGatewayError: gateway answered 502")
    assert failure["step_errors"] == [
        {
            "step": "charge",
            "attempt": 1,
            "type": "PaymentGatewayError",
            "message": "gateway answered 502",
            "at_ms": START_MS + 250,
        }
    ]
    # What the state always said stays as it was.
    assert row.state["error"] == {"type": "PaymentGatewayError", "message": "gateway answered 502"}


def test_a_wrapped_step_error_names_the_step_and_lists_every_attempt(engine, start):
    a = engine("a")
    wf = start("test-failure-after-retries", engine=a)

    assert a.drive(wf) == "failed"

    failure = workflow_row(wf).failure
    assert (failure["type"], failure["message"]) == ("RuntimeError", "gave up charging")
    assert failure["step"] == "charge"
    assert [e["attempt"] for e in failure["step_errors"]] == [1, 2, 3]
    assert "PaymentGatewayError: gateway answered 502" in failure["traceback"]


def test_an_error_outside_every_step_has_no_step_and_a_retried_step_notes_its_attempts(
    engine, start
):
    a = engine("a")
    wf = start("test-retried-then-failing-outside", engine=a)

    assert a.drive(wf) == "failed"

    row = workflow_row(wf)
    assert row.failure["step"] is None
    assert row.failure["type"] == "ValueError"
    checkpoint = row.state["steps"]["flaky"]
    assert checkpoint["result"] == 3
    assert checkpoint["attempts"] == 3
    assert checkpoint["last_error"] == "PaymentGatewayError: attempt 2 failed"


def test_a_completed_workflow_records_no_failure(engine, start):
    a = engine("a")
    wf = start("ledger", {"steps": 1}, engine=a)

    assert a.drive(wf) == "completed"

    assert workflow_row(wf).failure is None


def test_a_traceback_is_bounded_and_keeps_its_tail():
    text = "".join(f"line {n}\n" for n in range(10_000))

    bounded = bounded_tail(text, TRACEBACK_MAX_CHARS)

    assert len(bounded) == TRACEBACK_MAX_CHARS
    assert bounded.startswith(CUT_MARK)
    assert bounded.endswith("line 9999\n")
    assert bounded_tail("short", TRACEBACK_MAX_CHARS) == "short"
