"""Engine passes as their summaries report them."""

from __future__ import annotations

from typing import Any

PASS_NAMES = ("renew", "reclaim", "wake")


def pass_part(summary: Any, name: str) -> dict[str, Any]:
    """One pass's part of an engine's pass_summary, or {} when it has not run yet."""
    value = summary.get(name) if isinstance(summary, dict) else None
    return value if isinstance(value, dict) else {}
