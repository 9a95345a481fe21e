"""The fields a query may name, what each takes, and the checks that say why not.

Every check raises QueryError naming the field and the value at fault, at the position
of the part that is wrong.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Literal

from claims.protocol.states import CLAIM_STATES

from .errors import QueryError
from .nodes import ORDERING_OPS, AbsoluteTime, RelativeTime, Value
from .printer import format_value
from .times import parse_instant

Kind = Literal["text", "number", "time", "status", "state"]

# The workflow statuses of claims.models.workflows.WorkflowStatus (a test keeps them equal;
# the model cannot be imported here without Django).
WORKFLOW_STATUSES: tuple[str, ...] = (
    "pending",
    "running",
    "suspended",
    "completed",
    "failed",
    "cancelled",
    "timed_out",
)
# A claim is in one of the protocol's states, and may also be stranded or need attention.
STATES: tuple[str, ...] = (*CLAIM_STATES, "stranded", "attention")
# The largest value a BigIntegerField column holds.
MAX_NUMBER = 2**63 - 1


@dataclass(frozen=True)
class FieldSpec:
    name: str
    kind: Kind


FIELDS: dict[str, FieldSpec] = {
    spec.name: spec
    for spec in (
        FieldSpec("id", "text"),
        FieldSpec("type", "text"),
        FieldSpec("status", "status"),
        FieldSpec("state", "state"),
        FieldSpec("engine", "text"),
        FieldSpec("epoch", "number"),
        FieldSpec("expires", "time"),
        FieldSpec("claimed", "time"),
        FieldSpec("created", "time"),
        FieldSpec("updated", "time"),
        FieldSpec("failure", "text"),
    )
}
ORDERED_KINDS: frozenset[Kind] = frozenset({"number", "time"})
TEXT_FIELDS = ", ".join(name for name, spec in FIELDS.items() if spec.kind == "text")
ORDERED_FIELDS = ", ".join(name for name, spec in FIELDS.items() if spec.kind in ORDERED_KINDS)
_CHOICES: dict[Kind, tuple[str, ...]] = {"status": WORKFLOW_STATUSES, "state": STATES}

RawValue = str | int | RelativeTime


def field_spec(name: str, position: int) -> FieldSpec:
    """The field called ``name``; an unknown name is refused with the known ones."""
    spec = FIELDS.get(name)
    if spec is not None:
        return spec
    close = difflib.get_close_matches(name, FIELDS, n=1)
    hint = f"; did you mean {close[0]}?" if close else ""
    known = ", ".join(FIELDS)
    raise QueryError(f"unknown field {name!r} (known fields: {known}){hint}", position)


def check_ordering(spec: FieldSpec, op: str, position: int) -> None:
    """``<``, ``<=``, ``>``, ``>=`` and BETWEEN apply to numbers and times only."""
    if (op in ORDERING_OPS or op == "BETWEEN") and spec.kind not in ORDERED_KINDS:
        raise QueryError(
            f"{spec.name} cannot be compared with {op}: it takes =, !=, IN and NOT IN "
            f"({op} applies to {ORDERED_FIELDS})",
            position,
        )


def check_match(spec: FieldSpec, op: str, position: int) -> None:
    """STARTS_WITH and CONTAINS apply to text fields only."""
    if spec.kind != "text":
        raise QueryError(f"{op} applies to {TEXT_FIELDS}, not {spec.name}", position)


def check_value(spec: FieldSpec, raw: RawValue, position: int) -> Value:
    """The value ``raw`` as ``spec``'s field takes it, or QueryError naming both."""
    shown = describe(raw)
    if spec.kind == "time":
        return _time_value(spec, raw, shown, position)
    if isinstance(raw, RelativeTime):
        raise QueryError(f"{spec.name} is not a time; {shown} applies to times", position)
    if spec.kind == "number":
        if not isinstance(raw, int):
            raise QueryError(f"{spec.name} takes a whole number, not {shown}", position)
        if raw > MAX_NUMBER:
            raise QueryError(f"{spec.name} takes a number up to {MAX_NUMBER}, not {raw}", position)
        return raw
    if not isinstance(raw, str):
        raise QueryError(f'{spec.name} takes quoted text like "x", not {shown}', position)
    choices = _CHOICES.get(spec.kind)
    if choices is not None and raw not in choices:
        raise QueryError(
            f"{spec.name} has no value {shown}; it is one of {', '.join(choices)}", position
        )
    return raw


def _time_value(spec: FieldSpec, raw: RawValue, shown: str, position: int) -> Value:
    if isinstance(raw, RelativeTime):
        return raw
    if isinstance(raw, int):
        raise QueryError(
            f"{spec.name} takes a time like now - 10m or a quoted ISO time, not {raw}", position
        )
    try:
        return parse_instant(raw)
    except ValueError as error:
        raise QueryError(f"{spec.name}: {shown} is not a time: {error}", position) from None


def describe(raw: RawValue | AbsoluteTime) -> str:
    """A value as the query text would spell it, for messages."""
    return format_value(raw)
