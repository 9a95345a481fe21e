"""Per-engine claim metrics and their Prometheus text, as weft publishes them."""

from __future__ import annotations

import threading
from typing import TypedDict

from .constants import MAX_SAFE_INTEGER, OUTCOMES


class MetricsSnapshot(TypedDict):
    attempts: dict[str, int]
    active_claims: int
    renewal_failures: int


def _zero_attempts() -> dict[str, int]:
    return dict.fromkeys(OUTCOMES, 0)


class ClaimMetrics:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._attempts = _zero_attempts()
        self._active_claims = 0
        self._renewal_failures = 0

    def record_attempt(self, outcome: str) -> None:
        if outcome not in self._attempts:
            raise ValueError(
                f"unknown claim attempt outcome {outcome!r}; expected one of {OUTCOMES}"
            )
        with self._lock:
            self._attempts[outcome] += 1

    def record_renewal_failure(self) -> None:
        with self._lock:
            self._renewal_failures += 1

    def set_active_claims(self, count: int) -> None:
        if (
            isinstance(count, bool)
            or not isinstance(count, int)
            or not 0 <= count <= MAX_SAFE_INTEGER
        ):
            raise ValueError(
                f"active claims must be a safe, non-negative integer; received {count!r}"
            )
        with self._lock:
            self._active_claims = count

    def snapshot(self) -> MetricsSnapshot:
        with self._lock:
            return {
                "attempts": dict(self._attempts),
                "active_claims": self._active_claims,
                "renewal_failures": self._renewal_failures,
            }

    def reset(self) -> None:
        with self._lock:
            self._attempts = _zero_attempts()
            self._active_claims = 0
            self._renewal_failures = 0


def render_prometheus(snapshot: MetricsSnapshot) -> str:
    lines = [
        "# HELP weft_workflow_claim_attempts_total"
        " Total per-workflow ownership claim attempts, by outcome",
        "# TYPE weft_workflow_claim_attempts_total counter",
    ]
    attempts = snapshot["attempts"]
    lines += [
        f'weft_workflow_claim_attempts_total{{outcome="{outcome}"}} {attempts.get(outcome, 0)}'
        for outcome in OUTCOMES
    ]
    lines += [
        "# HELP weft_workflow_claims_active Workflows this engine currently holds a claim for",
        "# TYPE weft_workflow_claims_active gauge",
        f"weft_workflow_claims_active {snapshot['active_claims']}",
        "# HELP weft_workflow_claim_renewal_failures_total"
        " Total per-workflow claim renewal failures",
        "# TYPE weft_workflow_claim_renewal_failures_total counter",
        f"weft_workflow_claim_renewal_failures_total {snapshot['renewal_failures']}",
    ]
    return "\n".join(lines) + "\n"
