"""The demo workflow types: "order", "invoice", and "ledger", whose steps leave real rows.

A ledger step commits its StepLedger row in a fenced transaction of its own before the
step's checkpoint, so the ledger counts every execution of the side effect, including
one whose checkpoint then fails, and never one by an engine already deposed. Tests and
the fault harness count rows per step with it.

Every input is bounded (``demo_inputs``): anyone with the right to start a workflow can
start a demo one, and an unbounded step count or sleep would hold a drive thread, grow a
state without end or park a workflow past any date a page can show. Out-of-bounds input
is refused at start (422 in the API), and by the function itself should another program
write such a workflow.
"""

from __future__ import annotations

import time
from typing import Any

from claims.models import StepLedger
from claims.workflow_types import workflow

from .context import WorkflowContext
from .demo_inputs import (
    check_invoice_input,
    check_ledger_input,
    check_order_input,
    demo_options,
)

# -- order -------------------------------------------------------------------------


def _reserve(workflow_id: str, items: int) -> dict[str, Any]:
    return {"reservation": f"res-{workflow_id[:12]}", "items": items}


def _charge(items: int, unit_cents: int) -> dict[str, Any]:
    return {"charged_cents": items * unit_cents}


def _ship(workflow_id: str, reservation: str) -> dict[str, Any]:
    return {"tracking": f"trk-{workflow_id[:12]}", "reservation": reservation}


@workflow("order", check_input=check_order_input)
def order(ctx: WorkflowContext) -> dict[str, Any]:
    """reserve, charge, sleep ``input["sleep"]`` seconds (default none, at most a week),
    ship; ``input["items"]`` 1 to 1,000 (default 1), ``input["unit_cents"]`` 0 to
    1,000,000 (default 1,250)."""
    options = demo_options(ctx.input, check_order_input)
    items = int(options.get("items", 1))
    reserved = ctx.step("reserve", _reserve, ctx.workflow_id, items)
    charged = ctx.step("charge", _charge, items, int(options.get("unit_cents", 1_250)))
    ctx.sleep(float(options.get("sleep", 0)))
    shipped = ctx.step("ship", _ship, ctx.workflow_id, reserved["reservation"])
    return {**reserved, **charged, **shipped}


# -- invoice -----------------------------------------------------------------------


def _compute(lines: list[Any]) -> dict[str, Any]:
    total = sum(int(line) for line in lines)
    return {"lines": len(lines), "total_cents": total}


def _send(workflow_id: str, total_cents: int) -> dict[str, Any]:
    return {"invoice": f"inv-{workflow_id[:12]}", "sent_total_cents": total_cents}


@workflow("invoice", check_input=check_invoice_input)
def invoice(ctx: WorkflowContext) -> dict[str, Any]:
    """compute the total of ``input["lines"]`` (at most 100 amounts of 0 to 1,000,000,000
    cents; default two), then send."""
    lines = demo_options(ctx.input, check_invoice_input).get("lines", [1_000, 2_500])
    computed = ctx.step("compute", _compute, list(lines))
    sent = ctx.step("send", _send, ctx.workflow_id, computed["total_cents"])
    return {**computed, **sent}


# -- ledger ------------------------------------------------------------------------


def ledger_entry_write(ctx: WorkflowContext, step: str) -> int:
    """Commit one StepLedger row for an execution of ``step``, ahead of its checkpoint.

    Fenced like a checkpoint: a deposed engine that resumes late (a pause past its TTL,
    a clock far off) finds the epoch moved on and commits nothing.
    """

    def write() -> int:
        entry = StepLedger.objects.create(
            workflow_id=ctx.workflow_id,
            step=step,
            epoch=ctx.epoch,
            engine_id=ctx.engine_id,
            at_ms=ctx.now_ms(),
        )
        return entry.pk

    return ctx.fenced(write)


def ledger_step(ctx: WorkflowContext, step: str, delay_ms: int) -> dict[str, Any]:
    entry = ledger_entry_write(ctx, step)
    if delay_ms > 0:
        time.sleep(delay_ms / 1000)
    return {"entry": entry, "epoch": ctx.epoch, "engine_id": ctx.engine_id}


@workflow("ledger", check_input=check_ledger_input)
def ledger(ctx: WorkflowContext) -> dict[str, Any]:
    """``input["steps"]`` steps (1 to 100, default 3) named step-1..., each taking
    ``input["step_delay_ms"]`` (0 to 60,000, default 0); ``input["sleep"]`` seconds after
    step-1 (at most a week, default none)."""
    options = demo_options(ctx.input, check_ledger_input)
    steps = int(options.get("steps", 3))
    delay_ms = int(options.get("step_delay_ms", 0))
    sleep_s = float(options.get("sleep", 0))
    entries: list[int] = []
    for n in range(1, steps + 1):
        done = ctx.step(f"step-{n}", ledger_step, ctx, f"step-{n}", delay_ms)
        entries.append(done["entry"])
        if n == 1:
            ctx.sleep(sleep_s)
    return {"steps": steps, "entries": entries}
