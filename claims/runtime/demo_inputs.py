"""The bounds of the demo workflow types' input (claims.runtime.demo_workflows).

Each check raises InvalidInputError naming the field and its bounds; input that is not an
object runs with every default, as it always has.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from claims.protocol.errors import InvalidInputError

SLEEP_MAX_S = 7 * 24 * 3_600  # a week: long enough to watch, short of any date limit
ITEMS_MAX = 1_000
UNIT_CENTS_MAX = 1_000_000
INVOICE_LINES_MAX = 100
LINE_CENTS_MAX = 1_000_000_000
LEDGER_STEPS_MAX = 100  # each step adds a record to the workflow's state
STEP_DELAY_MAX_MS = 60_000


def demo_options(value: Any, check: Callable[[Any], None]) -> dict[str, Any]:
    """The input as options, after ``check``: a workflow another program wrote is held to
    the same bounds as one started through weftboard (the workflow fails with the message)."""
    check(value)
    return value if isinstance(value, dict) else {}


def _whole(options: dict[str, Any], name: str, low: int, high: int) -> None:
    if name not in options:
        return
    value = options[name]
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise InvalidInputError(f"input.{name} must be a whole number from {low:,} to {high:,}")


def _seconds(options: dict[str, Any], name: str, high: int) -> None:
    if name not in options:
        return
    value = options[name]
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or not 0 <= value <= high
    ):
        raise InvalidInputError(f"input.{name} must be a number of seconds from 0 to {high:,}")


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def check_order_input(value: Any) -> None:
    options = _object(value)
    _whole(options, "items", 1, ITEMS_MAX)
    _whole(options, "unit_cents", 0, UNIT_CENTS_MAX)
    _seconds(options, "sleep", SLEEP_MAX_S)


def check_invoice_input(value: Any) -> None:
    lines = _object(value).get("lines", [])
    if not isinstance(lines, list) or len(lines) > INVOICE_LINES_MAX:
        raise InvalidInputError(
            f"input.lines must be a list of at most {INVOICE_LINES_MAX} amounts"
        )
    for line in lines:
        if isinstance(line, bool) or not isinstance(line, int) or not 0 <= line <= LINE_CENTS_MAX:
            raise InvalidInputError(
                f"input.lines holds whole numbers of cents from 0 to {LINE_CENTS_MAX:,}"
            )


def check_ledger_input(value: Any) -> None:
    options = _object(value)
    _whole(options, "steps", 1, LEDGER_STEPS_MAX)
    _whole(options, "step_delay_ms", 0, STEP_DELAY_MAX_MS)
    _seconds(options, "sleep", SLEEP_MAX_S)
