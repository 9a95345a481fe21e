"""Per-engine claim metrics and their Prometheus text, as weft publishes them."""

from __future__ import annotations

import threading
from typing import Literal, TypedDict

from .constants import MAX_SAFE_INTEGER, OUTCOMES

SessionCount = Literal["renewed", "lost", "failed", "closed-expired"]
SESSION_COUNTS: tuple[SessionCount, ...] = ("renewed", "lost", "failed", "closed-expired")


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
        self._sessions: dict[SessionCount, int] = dict.fromkeys(SESSION_COUNTS, 0)

    def record_attempt(self, outcome: str, count: int = 1) -> None:
        """Count ``count`` attempts with this outcome: a lost session deposes every claim
        of it at once, and each counts (docs/design.md §12)."""
        if outcome not in self._attempts:
            raise ValueError(
                f"unknown claim attempt outcome {outcome!r}; expected one of {OUTCOMES}"
            )
        with self._lock:
            self._attempts[outcome] += count

    def record_renewal_failure(self, count: int = 1) -> None:
        with self._lock:
            self._renewal_failures += count

    def record_session(self, kind: SessionCount) -> None:
        """Count one session renewal by its outcome, or one session this engine closed to
        take its claims over (the engine-lease mode)."""
        with self._lock:
            self._sessions[kind] += 1

    def session_counts(self) -> dict[SessionCount, int]:
        with self._lock:
            return dict(self._sessions)

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
            self._sessions = dict.fromkeys(SESSION_COUNTS, 0)


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
