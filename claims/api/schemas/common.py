"""What every route shares: error bodies, the time format, epoch and reason rules.

Times go out twice: integer milliseconds, as stored and compared, and ISO 8601 UTC
for people and generic clients.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Annotated, Any

from ninja import Field, Schema
from pydantic import StrictInt, ValidationInfo, model_validator

from claims.models import ENGINE_ID_MAX_LENGTH
from claims.protocol.constants import MAX_SAFE_INTEGER
from claims.protocol.text import check_identifier, check_reason
from claims.query import MAX_LENGTH as QUERY_MAX_LENGTH

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

# Strict: "7", 7.0 and true are not epochs. Below 2**53 so a JavaScript client reads it exactly.
Epoch = Annotated[StrictInt, Field(ge=1, le=MAX_SAFE_INTEGER)]
# The epoch a caller saw of a workflow that may never have been claimed (0); a JSON true
# or false is not an epoch.
SeenEpoch = Annotated[StrictInt, Field(ge=0, le=MAX_SAFE_INTEGER)]
Reason = Annotated[str, Field(min_length=1, max_length=2000)]
EngineId = Annotated[str, Field(min_length=1, max_length=ENGINE_ID_MAX_LENGTH)]
# The lists' ``query`` parameter (claims.query), parsed by the route.
QueryText = Annotated[
    str | None,
    Field(
        max_length=QUERY_MAX_LENGTH,
        description=(
            'A query in the query language, for example `type = "order" AND state = '
            '"expired" AND expires > now - 10m` (claims/query/README.md); the other filters '
            "apply too. A query that cannot be read or means nothing answers 422 with what is "
            "wrong and its position; one that runs past WEFTBOARD_QUERY_TIMEOUT_MS (no index "
            "narrows it) is stopped and refused with 422 too."
        ),
    ),
]


def utc(ms: int | None) -> datetime | None:
    """Milliseconds since the Unix epoch as a UTC datetime; None when absent or out of range."""
    if ms is None:
        return None
    try:
        return _EPOCH + timedelta(milliseconds=ms)
    except OverflowError:
        return None


def fields_from(source: Any, schema: type[Schema], **given: Any) -> dict[str, Any]:
    """The ``schema``'s fields read from ``source``'s attributes of the same names, so an
    ``of`` constructor states only what differs (``given``). A field ``x`` beside a field
    ``x_ms`` is that time in UTC (``utc``), as every route sends its times twice."""
    names = schema.model_fields
    values = {
        name: given[name] if name in given else getattr(source, name)
        for name in names
        if name in given or f"{name}_ms" not in names
    }
    for name in names:
        if name not in values:
            values[name] = utc(values[f"{name}_ms"])
    return values


def required_reason(value: str) -> str:
    """The one operator-reason rule (claims.protocol.text); its error is a 422 here."""
    return check_reason(value)


def checked_identifier(value: str | None, info: ValidationInfo) -> str | None:
    """The shared rule for ids and filter values (claims.protocol.text); the field's own
    ``max_length`` has bounded it already."""
    if value is None:
        return None
    return check_identifier(value, what=str(info.field_name), max_length=len(value))


class BodyIn(Schema):
    """A request body: a JSON object. Ninja's schemas read fields off any object (their
    ``from_attributes``), so without this a null body would pass as one whose fields are
    all absent wherever every field is optional."""

    @model_validator(mode="wrap")
    @classmethod
    def _an_object(cls, value: Any, handler: Any) -> Any:
        if value is None:
            raise ValueError("the request body must be a JSON object, not null")
        return handler(value)


class ErrorOut(Schema):
    detail: str


class ValidationErrorOut(Schema):
    """422: a message, or the list of fields that failed validation."""

    detail: str | list[dict[str, Any]]


# Answers every route may give besides its own: documented once, listed on each route.
# 503: a read stopped at its time limit (WEFTBOARD_READ_TIMEOUT_MS).
READ_ERRORS: dict[int, Any] = {
    401: ErrorOut,
    422: ValidationErrorOut,
    429: ErrorOut,  # over WEFTBOARD_READ_RATE
    503: ErrorOut,  # a read past WEFTBOARD_READ_TIMEOUT_MS
}
WRITE_ERRORS: dict[int, Any] = {
    400: ErrorOut,
    401: ErrorOut,
    403: ErrorOut,
    404: ErrorOut,
    409: ErrorOut,
    413: ErrorOut,  # a body over DATA_UPLOAD_MAX_MEMORY_SIZE
    422: ValidationErrorOut,
    429: ErrorOut,
}
