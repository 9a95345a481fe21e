"""Values that cross the store boundary: claim rows, holders, results and events."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from .constants import MAX_SAFE_INTEGER


@dataclass(frozen=True, slots=True)
class Holder:
    """The four holder columns of a claim row, exactly as stored."""

    engine_id: str | None
    epoch: int | None
    expires_at_ms: int | None
    claimed_at_ms: int | None


@dataclass(frozen=True, slots=True)
class ClaimRow:
    """One workflow's claim: the fencing epoch and its holder, if any."""

    workflow_id: str
    epoch: int
    holder: Holder | None  # None when all four holder columns are null

    def holder_is_valid(self) -> bool:
        """Garbage holders (blank engine, mismatched epoch, bad times) are stealable at once."""
        holder = self.holder
        if holder is None or not holder.engine_id:
            return False
        if holder.epoch != self.epoch:
            return False
        return all(
            isinstance(ts, int) and 0 <= ts <= MAX_SAFE_INTEGER
            for ts in (holder.expires_at_ms, holder.claimed_at_ms)
        )

    def valid_holder_engine(self) -> str | None:
        return self.holder.engine_id if self.holder is not None and self.holder_is_valid() else None


ClaimStatus = Literal[
    "acquired",
    "lost-race",
    "not-expired",
    "no-claim",
    "backoff-skipped",
    "renewed",
    "lost",
    "not-held",
    "released",
    "adopted",
]


@dataclass(frozen=True, slots=True)
class ClaimResult:
    status: ClaimStatus
    workflow_id: str
    epoch: int | None = None
    held_by: str | None = None
    expires_at_ms: int | None = None


EventKind = Literal[
    "acquired",
    "takeover",
    "released",
    "deposed",
    "rotated",
    "forced_release",
    "forced_takeover",
    "adopted",
]


@dataclass(frozen=True, slots=True)
class ClaimEventRecord:
    """A transition of one claim, written by the store in the same transaction as the CAS."""

    workflow_id: str
    kind: EventKind
    epoch_before: int | None
    epoch_after: int | None
    engine_id: str | None
    at_ms: int
    actor: str | None = None
    reason: str = ""


@dataclass(frozen=True, slots=True)
class WorkflowInfo:
    """What reclaim needs to know of a workflow: is it running, and can I run its type."""

    workflow_id: str
    status: str
    workflow_type: str


@dataclass(frozen=True, slots=True)
class ScanPage:
    """One bounded page of the authoritative scan (reclaim source 3)."""

    candidates: list[str]
    scanned: int
    wrapped: bool


@dataclass(frozen=True, slots=True)
class GrantPlan:
    """One takeover in a set-based grant: the row must still hold exactly what was observed."""

    workflow_id: str
    expected_epoch: int
    expected_holder: Holder | None
    holder: Holder
    event: ClaimEventRecord | None
