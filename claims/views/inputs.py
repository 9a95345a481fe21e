"""Reading request parameters: every id, epoch and filter is checked before it reaches a query."""

from __future__ import annotations

from collections.abc import Iterable

from django.http import QueryDict

from claims.models import ENGINE_ID_MAX_LENGTH, WORKFLOW_ID_MAX_LENGTH
from claims.protocol.constants import MAX_SAFE_INTEGER
from claims.protocol.errors import InvalidInputError, InvalidWorkflowIdError
from claims.protocol.ids import check_workflow_id
from claims.protocol.text import check_identifier
from claims.services.rules import operator_reason
from claims.utc_text import parse_iso_utc

from .errors import BadInput

TEXT_MAX_LENGTH = 255


def checked_text(value: str, *, what: str, max_length: int = TEXT_MAX_LENGTH) -> str:
    """Text that fits its column and holds no control characters (the shared rule)."""
    try:
        return check_identifier(value, what=what, max_length=max_length)
    except InvalidInputError as error:
        raise BadInput(str(error)) from error


def reason_param(value: str) -> str:
    """An operator's reason, by the services' one rule (claims.services.rules), checked here
    as well so the form shows it beside the field."""
    try:
        return operator_reason(value)
    except InvalidInputError as error:
        raise BadInput(str(error)) from error


def workflow_id_param(value: str) -> str:
    try:
        return check_workflow_id(value)
    except InvalidWorkflowIdError as error:
        raise BadInput(str(error)) from error


def engine_id_param(value: str) -> str:
    if not value:
        raise BadInput("an engine id must not be empty")
    return checked_text(value, what="an engine id", max_length=ENGINE_ID_MAX_LENGTH)


def optional_text(params: QueryDict, name: str, *, max_length: int = TEXT_MAX_LENGTH) -> str | None:
    value = params.get(name, "").strip()
    if not value:
        return None
    return checked_text(value, what=name, max_length=max_length)


def optional_prefix(params: QueryDict, name: str = "prefix") -> str | None:
    return optional_text(params, name, max_length=WORKFLOW_ID_MAX_LENGTH)


def optional_choice(params: QueryDict, name: str, choices: Iterable[str]) -> str | None:
    value = params.get(name, "").strip()
    if not value:
        return None
    allowed = list(choices)
    if value not in allowed:
        raise BadInput(f"{name} must be one of {', '.join(allowed)}; got {value[:40]!r}")
    return value


def positive_int(value: str, *, what: str) -> int:
    """A whole number from 1 to 2^53 - 1, written in plain digits."""
    text = value.strip()
    if not text.isascii() or not text.isdigit():
        raise BadInput(f"{what} must be a whole number of 1 or more; got {value[:40]!r}")
    number = int(text)
    if not 1 <= number <= MAX_SAFE_INTEGER:
        raise BadInput(f"{what} must be between 1 and 2^53 - 1; got {text[:40]}")
    return number


def optional_positive_int(params: QueryDict, name: str, *, what: str) -> int | None:
    value = params.get(name, "")
    return None if value.strip() == "" else positive_int(value, what=what)


def optional_utc_ms(params: QueryDict, name: str) -> int | None:
    """An ISO 8601 UTC date and time such as 2026-12-03T09:30:00Z; seconds and the Z may
    be left out (a datetime-local field sends 2026-12-03T09:30, read as UTC)."""
    value = params.get(name, "").strip()
    if not value:
        return None
    try:
        return parse_iso_utc(value)
    except ValueError as error:
        raise BadInput(
            f"{name} must be a UTC date and time: {error}; got {value[:40]!r}"
        ) from error


def utc_range_ms(params: QueryDict) -> tuple[int | None, int | None]:
    """The ``since``/``until`` pair of a date-range filter (optional_utc_ms each); ``since``
    must come first when both are given."""
    since_ms, until_ms = optional_utc_ms(params, "since"), optional_utc_ms(params, "until")
    if since_ms is not None and until_ms is not None and since_ms >= until_ms:
        raise BadInput("since must be earlier than until")
    return since_ms, until_ms
