"""Claims: the listing, the claim as it is now, and the forced actions."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from ninja import Field, Schema
from pydantic import field_validator

from claims.models import ENGINE_ID_MAX_LENGTH, WORKFLOW_ID_MAX_LENGTH
from claims.protocol.states import ClaimState
from claims.selectors import ClaimPage, ClaimView
from claims.selectors.claims.conditions import ClaimScope
from claims.selectors.claims.ownership import ClaimSnapshot, ExpiryJudgement
from claims.selectors.claims.sorting import CURSOR_MAX_LENGTH

from .common import (
    BodyIn,
    EngineId,
    Epoch,
    QueryText,
    Reason,
    checked_identifier,
    fields_from,
    required_reason,
)

ClaimSortKey = Literal[
    "workflow_id", "-workflow_id", "expires_at", "-expires_at", "epoch", "-epoch",
    "claimed_at", "-claimed_at", "holder", "-holder", "state", "-state",
]  # fmt: skip


class ClaimFilterIn(Schema):
    # A derived state, or a scope: "attention" (held or stranded), "stranded", "all".
    # None is "all" here (the page defaults to "attention").
    state: ClaimState | ClaimScope | None = None
    engine: str | None = Field(None, max_length=ENGINE_ID_MAX_LENGTH)
    prefix: str | None = Field(None, max_length=WORKFLOW_ID_MAX_LENGTH)
    q: str | None = Field(
        None,
        max_length=WORKFLOW_ID_MAX_LENGTH,
        description=(
            "Any part of the id. A part of 16 characters or more that repeats itself (fewer "
            "distinct three-character pieces than a quarter of its length) is refused with "
            "422, as the id index cannot narrow it; a search past WEFTBOARD_SEARCH_TIMEOUT_MS "
            "is stopped and refused with 422 too."
        ),
    )
    query: QueryText = None
    sort: ClaimSortKey = "workflow_id"
    cursor: str | None = Field(None, max_length=CURSOR_MAX_LENGTH)
    limit: int = Field(50, ge=1, le=200)

    _ids = field_validator("engine", "prefix", "q", "cursor")(checked_identifier)


class ClaimOut(Schema):
    workflow_id: str
    epoch: int
    holder_engine_id: str | None
    holder_epoch: int | None
    state: ClaimState
    claimed_at_ms: int | None
    claimed_at: datetime | None
    expires_at_ms: int | None
    expires_at: datetime | None
    expires_in_ms: int | None
    stranded: bool
    # An ownerless row's last holder and when it let go (from the claim events).
    last_holder_engine_id: str | None
    last_held_at_ms: int | None
    last_held_at: datetime | None

    @classmethod
    def of(cls, view: ClaimView) -> ClaimOut:
        return cls(**fields_from(view, cls))


class ClaimPageOut(Schema):
    items: list[ClaimOut]
    next_cursor: str | None  # valid with the same sort only
    sort: str
    as_of_ms: int
    as_of: datetime | None

    @classmethod
    def of(cls, page: ClaimPage) -> ClaimPageOut:
        return cls(**fields_from(page, cls, items=[ClaimOut.of(view) for view in page.items]))


class ExpiryOut(Schema):
    expires_at_ms: int
    expires_at: datetime | None
    takeover_allowed_at_ms: int
    takeover_allowed_at: datetime | None
    expired: bool
    ms_until_takeover: int

    @classmethod
    def of(cls, judgement: ExpiryJudgement) -> ExpiryOut:
        return cls(**fields_from(judgement, cls))


class ClaimStateOut(Schema):
    """A claim right now; ``epoch`` is null for a workflow that was never claimed."""

    workflow_id: str
    epoch: int | None
    holder_engine_id: str | None
    holder_epoch: int | None
    state: ClaimState
    claimed_at_ms: int | None
    claimed_at: datetime | None
    expiry: ExpiryOut | None
    as_of_ms: int
    as_of: datetime | None

    @classmethod
    def of(cls, snapshot: ClaimSnapshot) -> ClaimStateOut:
        expiry = None if snapshot.expiry is None else ExpiryOut.of(snapshot.expiry)
        return cls(**fields_from(snapshot, cls, expiry=expiry))


class StaleEpochOut(Schema):
    """409 for a forced action on an epoch the claim has left: decide again from ``current``."""

    detail: str
    workflow_id: str
    expected_epoch: int | None
    current: ClaimStateOut


class ReleaseIn(BodyIn):
    expected_epoch: Epoch
    reason: Reason

    _reason = field_validator("reason")(required_reason)


class TakeoverIn(BodyIn):
    expected_epoch: Epoch
    target_engine_id: EngineId
    reason: Reason

    _reason = field_validator("reason")(required_reason)
    _target = field_validator("target_engine_id")(checked_identifier)


class ForcedActionOut(Schema):
    workflow_id: str
    epoch_before: int
    epoch_after: int
    claim: ClaimStateOut
    adopt_queue: str | None = None  # takeover: the queue the adopt message went to
