"""One workflow as an operator reads it: status, claim, epoch timeline, checkpoints, re-drives,
and for a failed one why it failed and how often it was retried and re-driven.

Five queries whatever the workflow's history (events are capped at EVENT_LIMIT).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from claims.models import ClaimEvent, Engine, PendingRedrive, Workflow
from claims.protocol.timing import ClaimTiming
from claims.selectors.claims.listing import ClaimView
from claims.selectors.claims.ownership import claim_view

from .timeline import Timeline, epoch_timeline

EVENT_LIMIT = 200
PREVIEW_CHARS = 160


@dataclass(frozen=True)
class Checkpoint:
    name: str
    epoch: int | None
    engine_id: str | None
    at_ms: int | None
    preview: str
    attempts: int = 1  # runs of the step in the drive that checkpointed it
    last_error: str | None = None  # of the runs that raised before it succeeded


@dataclass(frozen=True)
class HolderEngine:
    engine_id: str
    status: str
    heartbeat_at_ms: int


@dataclass(frozen=True)
class Drive:
    """One grant of the claim, so one drive of the workflow; a number above 1 is a re-drive."""

    number: int
    epoch: int
    engine_id: str | None
    kind: str
    at_ms: int


@dataclass(frozen=True)
class WorkflowDetail:
    workflow_id: str
    workflow: Workflow | None  # None without a workflow row: the claim row outlives it
    claim: ClaimView | None
    holder_engine: HolderEngine | None
    holder_known: bool  # False when the holder names an engine never registered
    events: list[ClaimEvent]  # newest first
    events_capped: bool
    timeline: Timeline | None
    checkpoints: list[Checkpoint]
    park: dict[str, Any] | None
    outcome: tuple[str, str] | None  # ("result" | "error", preview)
    redrives: list[PendingRedrive]
    as_of_ms: int
    failure: dict[str, Any] | None = None  # Workflow.failure (claims.runtime.failures)
    drives: list[Drive] = field(default_factory=list)  # oldest first, from the events

    @property
    def step_retries(self) -> list[Checkpoint]:
        """Checkpointed steps that ran more than once before they succeeded."""
        return [c for c in self.checkpoints if c.attempts > 1]

    @property
    def step_errors(self) -> list[dict[str, Any]]:
        """The step runs that raised in the drive that failed (from its failure record)."""
        errors = (self.failure or {}).get("step_errors")
        return [e for e in errors if isinstance(e, dict)] if isinstance(errors, list) else []


def preview(value: Any) -> str:
    """Compact JSON, cut to PREVIEW_CHARS, for a table cell."""
    text = json.dumps(value, sort_keys=True, default=str, separators=(",", ":"))
    return text if len(text) <= PREVIEW_CHARS else text[: PREVIEW_CHARS - 1] + "…"


def _checkpoints(state: dict[str, Any]) -> list[Checkpoint]:
    steps = state.get("steps") if isinstance(state, dict) else None
    if not isinstance(steps, dict):
        return []
    checkpoints = []
    for name, record in steps.items():
        record = record if isinstance(record, dict) else {"result": record}
        checkpoints.append(
            Checkpoint(
                name=str(name),
                epoch=record.get("epoch"),
                engine_id=record.get("engine_id"),
                at_ms=record.get("at_ms"),
                preview=preview(record.get("result")),
                attempts=_attempts(record.get("attempts")),
                last_error=record.get("last_error"),
            )
        )
    checkpoints.sort(key=lambda c: (c.at_ms is None, c.at_ms or 0, c.name))
    return checkpoints


def _attempts(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 1


# Claim events that hand the workflow to an engine for a drive (docs/design.md §4).
DRIVE_GRANTS = frozenset({"acquired", "adopted", "takeover", "forced_takeover"})


def drives_of(events_oldest_first: list[ClaimEvent]) -> list[Drive]:
    """One drive per epoch granted to an engine (an adopt of the epoch just acquired is
    the same drive), numbered in order: every drive after the first is a re-drive."""
    drives: list[Drive] = []
    seen: set[int] = set()
    for event in events_oldest_first:
        epoch = event.epoch_after
        if event.kind not in DRIVE_GRANTS or epoch is None or epoch in seen:
            continue
        seen.add(epoch)
        drives.append(Drive(len(drives) + 1, epoch, event.engine_id, event.kind, event.at_ms))
    return drives


def workflow_detail(workflow_id: str, *, now_ms: int, timing: ClaimTiming) -> WorkflowDetail | None:
    """None when neither the workflow nor a claim row exists for this id."""
    workflow = Workflow.objects.filter(workflow_id=workflow_id).first()
    claim = claim_view(workflow_id, now_ms=now_ms, timing=timing)
    if workflow is None and claim is None:
        return None
    events = list(
        ClaimEvent.objects.filter(workflow_id=workflow_id).order_by("-id")[: EVENT_LIMIT + 1]
    )
    capped = len(events) > EVENT_LIMIT
    events = events[:EVENT_LIMIT]
    holder_engine = None
    holder_id = None if claim is None else claim.holder_engine_id
    if holder_id:
        found = (
            Engine.objects.filter(engine_id=holder_id)
            .values_list("engine_id", "status", "heartbeat_at_ms")
            .first()
        )
        holder_engine = None if found is None else HolderEngine(*found)
    timeline = epoch_timeline(
        [
            {
                "kind": e.kind,
                "engine_id": e.engine_id,
                "at_ms": e.at_ms,
                "epoch_before": e.epoch_before,
                "epoch_after": e.epoch_after,
                "actor": e.actor,
                "reason": e.reason,
            }
            for e in reversed(events)
        ],
        now_ms=now_ms,
        holder_engine_id=holder_id,
        epoch=None if claim is None else claim.epoch,
    )
    state = workflow.state if workflow is not None and isinstance(workflow.state, dict) else {}
    outcome = None
    for key in ("result", "error"):
        if key in state:
            outcome = (key, preview(state[key]))
    park = state.get("park") if isinstance(state.get("park"), dict) else None
    return WorkflowDetail(
        workflow_id=workflow_id,
        workflow=workflow,
        claim=claim,
        holder_engine=holder_engine,
        holder_known=holder_engine is not None or not holder_id,
        events=events,
        events_capped=capped,
        timeline=timeline,
        checkpoints=_checkpoints(state),
        park=park,
        outcome=outcome,
        redrives=list(PendingRedrive.objects.filter(workflow_id=workflow_id).order_by("engine_id")),
        as_of_ms=now_ms,
        failure=_failure(workflow),
        drives=drives_of(list(reversed(events))),
    )


def _failure(workflow: Workflow | None) -> dict[str, Any] | None:
    failure = None if workflow is None else workflow.failure
    return failure if isinstance(failure, dict) else None
