"""Workflows: start, cancel, suspend and resume, and the diagnostic ownership read."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ninja import Field, Schema
from pydantic import field_validator

from claims.models import ClaimEvent, Workflow, WorkflowStatus
from claims.protocol.ids import WORKFLOW_ID_MAX_LENGTH, check_new_workflow_id
from claims.protocol.text import check_json_text
from claims.protocol.times import MAX_TIME_MS, MIN_TIME_MS
from claims.selectors.claims.ownership import Ownership
from claims.selectors.workflows.listing import (
    CURSOR_MAX_LENGTH,
    TimeField,
    WorkflowPage,
    WorkflowRow,
    WorkflowSort,
)
from claims.workflow_types import WORKFLOW_TYPE_MAX_LENGTH

from .claims import ClaimStateOut
from .common import (
    BodyIn,
    QueryText,
    Reason,
    SeenEpoch,
    checked_identifier,
    fields_from,
    required_reason,
    utc,
)
from .reclaim import RedriveOut


class _WorkflowFields(Schema):
    """What every answer says of a workflow."""

    workflow_id: str
    workflow_type: str
    status: str
    created_at_ms: int
    created_at: datetime | None
    updated_at_ms: int
    updated_at: datetime | None


class WorkflowOut(_WorkflowFields):
    @classmethod
    def of(cls, workflow: Workflow) -> WorkflowOut:
        return cls(**fields_from(workflow, cls))


class WorkflowStartIn(BodyIn):
    workflow_type: str = Field(min_length=1, max_length=WORKFLOW_TYPE_MAX_LENGTH)
    input: Any = None
    workflow_id: str | None = Field(None, min_length=1, max_length=WORKFLOW_ID_MAX_LENGTH)

    @field_validator("workflow_id")
    @classmethod
    def _valid_id(cls, value: str | None) -> str | None:
        return None if value is None else check_new_workflow_id(value)

    @field_validator("input")
    @classmethod
    def _storable_input(cls, value: Any) -> Any:
        return check_json_text(value, what="input")


class WorkflowCancelIn(BodyIn):
    reason: Reason
    # The epoch the caller saw (0: no claim yet); when given, a moved claim answers 409.
    expected_epoch: SeenEpoch | None = None

    _reason = field_validator("reason")(required_reason)


class WorkflowSuspendIn(BodyIn):
    """Suspend or resume: the epoch the caller saw (0: no claim yet) is required, so a
    claim that has moved answers 409."""

    reason: Reason
    expected_epoch: SeenEpoch

    _reason = field_validator("reason")(required_reason)


class WorkflowCancelOut(Schema):
    """The answer to cancel, suspend and resume: the workflow and its claim after."""

    workflow: WorkflowOut
    claim: ClaimStateOut


class EventOut(Schema):
    id: int
    kind: str
    epoch_before: int | None
    epoch_after: int | None
    engine_id: str | None
    actor: str | None
    reason: str
    at_ms: int
    at: datetime | None

    @classmethod
    def of(cls, event: ClaimEvent) -> EventOut:
        return cls(**fields_from(event, cls, id=event.pk))


class StepErrorOut(Schema):
    step: str
    attempt: int
    type: str
    message: str
    at_ms: int


class FailureOut(Schema):
    """Why a failed workflow failed, as the runtime recorded it at its terminal write:
    ``step`` is null for an error outside every step; ``traceback`` keeps its last 16 KiB."""

    type: str
    message: str
    step: str | None = None
    traceback: str = ""
    at_ms: int | None = None
    at: datetime | None = None
    epoch: int | None = None
    engine_id: str | None = None
    step_errors: list[StepErrorOut] = []

    @classmethod
    def of(cls, failure: Any) -> FailureOut | None:
        """None for a workflow that did not fail (or a record this schema cannot read)."""
        if not isinstance(failure, dict) or "type" not in failure:
            return None
        at_ms = failure.get("at_ms")
        return cls(**{**failure, "at": utc(at_ms) if isinstance(at_ms, int) else None})


class OwnershipOut(Schema):
    """The diagnostic read; ``workflow`` is null when there is no workflow row (it was
    deleted): only its claim row is kept. ``failure`` is set for a failed workflow."""

    workflow: WorkflowOut | None
    claim: ClaimStateOut
    pending_redrives: list[RedriveOut]
    recent_events: list[EventOut]  # newest first
    failure: FailureOut | None = None

    @classmethod
    def of(cls, ownership: Ownership) -> OwnershipOut:
        workflow = ownership.workflow
        return cls(
            workflow=None if workflow is None else WorkflowOut.of(workflow),
            claim=ClaimStateOut.of(ownership.claim),
            pending_redrives=[RedriveOut.of(row) for row in ownership.pending_redrives],
            recent_events=[EventOut.of(event) for event in ownership.recent_events],
            failure=None if workflow is None else FailureOut.of(workflow.failure),
        )


class WorkflowFilterIn(Schema):
    """The workflows listing: ``since``/``until`` bound the ``time`` column (ms, UTC)."""

    type: str | None = Field(None, max_length=WORKFLOW_TYPE_MAX_LENGTH)
    status: WorkflowStatus | None = None
    time: TimeField = "updated"
    # The time rule (claims.protocol.times): years 1 to 9999 in UTC.
    since_ms: int | None = Field(None, ge=MIN_TIME_MS, le=MAX_TIME_MS)
    until_ms: int | None = Field(None, ge=MIN_TIME_MS, le=MAX_TIME_MS)
    query: QueryText = None
    sort: WorkflowSort = "updated"
    cursor: str | None = Field(None, max_length=CURSOR_MAX_LENGTH)
    limit: int = Field(50, ge=1, le=200)

    _ids = field_validator("type", "cursor")(checked_identifier)


class WorkflowRowOut(_WorkflowFields):
    failure_type: str | None
    failure_message: str | None
    failure_step: str | None

    @classmethod
    def of(cls, row: WorkflowRow) -> WorkflowRowOut:
        return cls(**fields_from(row, cls))


class WorkflowPageOut(Schema):
    items: list[WorkflowRowOut]
    next_cursor: str | None  # valid with the same sort only
    status_counts: dict[str, int]  # under the type and time filters, not the status
    # Under a time range each status is counted up to 10,000: these are at least that.
    capped_statuses: list[str]
    as_of_ms: int
    as_of: datetime | None

    @classmethod
    def of(cls, page: WorkflowPage) -> WorkflowPageOut:
        return cls(**fields_from(page, cls, items=[WorkflowRowOut.of(row) for row in page.items]))
