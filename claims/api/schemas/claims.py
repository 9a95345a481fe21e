"""Claims: the listing, the claim as it is now, and the forced actions."""

from __future__ import annotations

from datetime import datetime

from ninja import Field, Schema
from pydantic import field_validator

from claims.models import ENGINE_ID_MAX_LENGTH, WORKFLOW_ID_MAX_LENGTH
from claims.protocol.states import ClaimState
from claims.selectors import ClaimView
from claims.selectors.ownership import ClaimSnapshot, ExpiryJudgement

from .common import EngineId, Epoch, Reason, checked_identifier, required_reason, utc


class ClaimFilterIn(Schema):
    state: ClaimState | None = None
    engine: str | None = Field(None, max_length=ENGINE_ID_MAX_LENGTH)
    prefix: str | None = Field(None, max_length=WORKFLOW_ID_MAX_LENGTH)
    cursor: str | None = Field(None, max_length=WORKFLOW_ID_MAX_LENGTH)
    limit: int = Field(50, ge=1, le=200)

    _ids = field_validator("engine", "prefix", "cursor")(checked_identifier)


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

    @classmethod
    def of(cls, view: ClaimView) -> ClaimOut:
        return cls(
            workflow_id=view.workflow_id,
            epoch=view.epoch,
            holder_engine_id=view.holder_engine_id,
            holder_epoch=view.holder_epoch,
            state=view.state,
            claimed_at_ms=view.claimed_at_ms,
            claimed_at=utc(view.claimed_at_ms),
            expires_at_ms=view.expires_at_ms,
            expires_at=utc(view.expires_at_ms),
            expires_in_ms=view.expires_in_ms,
        )


class ClaimPageOut(Schema):
    items: list[ClaimOut]
    next_cursor: str | None
    as_of_ms: int
    as_of: datetime | None


class ExpiryOut(Schema):
    expires_at_ms: int
    expires_at: datetime | None
    takeover_allowed_at_ms: int
    takeover_allowed_at: datetime | None
    expired: bool
    ms_until_takeover: int

    @classmethod
    def of(cls, judgement: ExpiryJudgement) -> ExpiryOut:
        return cls(
            expires_at_ms=judgement.expires_at_ms,
            expires_at=utc(judgement.expires_at_ms),
            takeover_allowed_at_ms=judgement.takeover_allowed_at_ms,
            takeover_allowed_at=utc(judgement.takeover_allowed_at_ms),
            expired=judgement.expired,
            ms_until_takeover=judgement.ms_until_takeover,
        )


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
        return cls(
            workflow_id=snapshot.workflow_id,
            epoch=snapshot.epoch,
            holder_engine_id=snapshot.holder_engine_id,
            holder_epoch=snapshot.holder_epoch,
            state=snapshot.state,
            claimed_at_ms=snapshot.claimed_at_ms,
            claimed_at=utc(snapshot.claimed_at_ms),
            expiry=None if snapshot.expiry is None else ExpiryOut.of(snapshot.expiry),
            as_of_ms=snapshot.as_of_ms,
            as_of=utc(snapshot.as_of_ms),
        )


class StaleEpochOut(Schema):
    """409 for a forced action on an epoch the claim has left: decide again from ``current``."""

    detail: str
    workflow_id: str
    expected_epoch: int | None
    current: ClaimStateOut


class ReleaseIn(Schema):
    expected_epoch: Epoch
    reason: Reason

    _reason = field_validator("reason")(required_reason)


class TakeoverIn(Schema):
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
