"""What a failed workflow records about why it failed, and what a retried step leaves behind.

The record is built where the exception is caught (so the traceback is the one the
failure raised) and stored in ``Workflow.failure`` by the terminal write, inside the
fenced finish transaction: a failure is recorded exactly when the workflow is failed.
Sizes are bounded, keeping the tail of a traceback (where the raising frame is).
"""

from __future__ import annotations

import traceback
from typing import Any

TRACEBACK_MAX_CHARS = 16_384
MESSAGE_MAX_CHARS = 4_096
# Step errors kept per drive: a workflow that retries a step in a loop must not grow
# its terminal write without bound.
STEP_ERRORS_KEPT = 20
CUT_MARK = "… (cut) …\n"


def bounded_tail(text: str, limit: int) -> str:
    """``text`` if it fits ``limit`` characters, else its last characters behind a mark."""
    if len(text) <= limit:
        return text
    return CUT_MARK + text[-(limit - len(CUT_MARK)) :]


def bounded_head(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, its beginning kept (a message reads from the start)."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def error_summary(error: BaseException) -> dict[str, str]:
    """Type and (bounded) message: what a step error or a re-drive shows in a table."""
    return {
        "type": type(error).__name__,
        "message": bounded_head(str(error), MESSAGE_MAX_CHARS),
    }


def formatted_traceback(error: BaseException) -> str:
    """The traceback as Python prints it, bounded to TRACEBACK_MAX_CHARS with its tail kept."""
    text = "".join(traceback.format_exception(error))
    return bounded_tail(text, TRACEBACK_MAX_CHARS)


def failure_record(
    error: BaseException,
    *,
    step: str | None,
    at_ms: int,
    epoch: int,
    engine_id: str,
    step_errors: list[dict[str, Any]],
) -> dict[str, Any]:
    """The JSON stored in ``Workflow.failure``: why, where, when and under which claim."""
    return {
        **error_summary(error),
        "step": step,
        "traceback": formatted_traceback(error),
        "at_ms": at_ms,
        "epoch": epoch,
        "engine_id": engine_id,
        "step_errors": step_errors[-STEP_ERRORS_KEPT:],
    }
