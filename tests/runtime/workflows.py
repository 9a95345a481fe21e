"""Workflow types for the runtime tests, registered on import.

``test-hooked-ledger`` is the demo ledger with seams: a hook set for
(workflow id, "step-N") runs once inside that step, after its ledger row
committed and before its checkpoint, which is where a deposition, a cancel, a
stall or a shutdown hurts most; one set for "before-step-N" runs once inside the
step before its ledger row is written (past every check a drive makes before a
step starts); one set for "after-step-N" runs once in the workflow code between
that step and the next.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

from claims.runtime import WorkflowContext, workflow
from claims.runtime.demo_workflows import ledger_step

Hook = Callable[[WorkflowContext], object]
HOOKS: dict[tuple[str, str], Hook] = {}

HOOKED_STEPS = ("step-1", "step-2", "step-3")


def during_step(workflow_id: str, step: str, hook: Hook) -> None:
    """Run ``hook`` once, inside the next execution of ``step`` of ``workflow_id``."""
    HOOKS[(workflow_id, step)] = hook


def before_step(workflow_id: str, step: str, hook: Hook) -> None:
    """Run ``hook`` once, inside the next execution of ``step``, before its ledger row."""
    HOOKS[(workflow_id, f"before-{step}")] = hook


def after_step(workflow_id: str, step: str, hook: Hook) -> None:
    """Run ``hook`` once, in the workflow code right after ``step`` returned."""
    HOOKS[(workflow_id, f"after-{step}")] = hook


def _hooked_step(ctx: WorkflowContext, step: str) -> dict[str, Any]:
    hook = HOOKS.pop((ctx.workflow_id, f"before-{step}"), None)
    if hook is not None:
        hook(ctx)
    done = ledger_step(ctx, step, 0)
    hook = HOOKS.pop((ctx.workflow_id, step), None)
    if hook is not None:
        hook(ctx)
    return done


@workflow("test-hooked-ledger")
def hooked_ledger(ctx: WorkflowContext) -> dict[str, Any]:
    entries = []
    for step in HOOKED_STEPS:
        entries.append(ctx.step(step, _hooked_step, ctx, step)["entry"])
        hook = HOOKS.pop((ctx.workflow_id, f"after-{step}"), None)
        if hook is not None:
            hook(ctx)
    return {"entries": entries}


@workflow("test-swallowing")
def swallowing(ctx: WorkflowContext) -> str:
    """Catches every Exception around its steps and returns as if all went well.

    Stops of the drive (pause, park) are BaseExceptions, so ``except Exception``
    does not catch them; a deposition (EngineDeposedError) it does catch."""
    for step in HOOKED_STEPS:
        with contextlib.suppress(Exception):
            ctx.step(step, _hooked_step, ctx, step)
        hook = HOOKS.pop((ctx.workflow_id, f"after-{step}"), None)
        if hook is not None:
            hook(ctx)
    return "looks fine"


class CardDeclinedError(Exception):
    pass


@workflow("test-failing")
def failing(ctx: WorkflowContext) -> None:
    ctx.step("reserve", lambda: {"reserved": True})
    raise CardDeclinedError("card declined: insufficient funds")


@workflow("test-non-json-step")
def non_json_step(ctx: WorkflowContext) -> None:
    ctx.step("reserve", lambda: {"reserved": True})
    ctx.step("tags", lambda: {"a", "b"})


@workflow("test-non-json-result")
def non_json_result(ctx: WorkflowContext) -> object:
    ctx.step("reserve", lambda: {"reserved": True})
    return object()


@workflow("test-duplicate-step")
def duplicate_step(ctx: WorkflowContext) -> None:
    ctx.step("charge", lambda: 1)
    ctx.step("charge", lambda: 2)


@workflow("test-bad-step-name")
def bad_step_name(ctx: WorkflowContext) -> None:
    ctx.step("", lambda: 1)


@workflow("test-bad-sleep")
def bad_sleep(ctx: WorkflowContext) -> None:
    ctx.sleep(-1)


@workflow("test-endless-sleep")
def endless_sleep(ctx: WorkflowContext) -> None:
    """A finite number of seconds whose wake-up no date can hold."""
    ctx.sleep(1e300)


@workflow("test-shapes")
def shapes(ctx: WorkflowContext) -> Any:
    """Tuples and int keys read back as JSON has them, on the first run as on replay."""
    pair = ctx.step("pair", lambda: (1, 2))
    keyed = ctx.step("keyed", lambda: {1: "one"})
    ctx.sleep(1)
    return {"pair": pair, "keyed": keyed}


@workflow("test-mutating")
def mutating(ctx: WorkflowContext) -> Any:
    """Edits what its steps returned, on the first run and on the replay after the park."""
    first = ctx.step("first", lambda: {"items": [1]})
    first["items"].append("edited")
    ctx.sleep(1)
    second = ctx.step("second", lambda: {"items": [2]})
    second["items"].append("edited")
    return {"first": first, "second": second}


class FlakyError(Exception):
    pass


@workflow("test-retrying")
def retrying(ctx: WorkflowContext) -> Any:
    """Retries a step that raised under the same name: it has no result yet."""
    attempts: list[int] = []

    def flaky() -> int:
        attempts.append(1)
        if len(attempts) == 1:
            raise FlakyError("first attempt fails")
        return len(attempts)

    with contextlib.suppress(FlakyError):
        ctx.step("flaky", flaky)
    return ctx.step("flaky", flaky)
