"""How the claims list is sorted and cut into keyset pages (docs/design.md §7).

A sort is a column and a direction, with the workflow id as the tie-breaker in the same
direction, so each sort reads one index range (migration 0011) in order. Rows without a
value (the ownerless rows have no expiry, claim time or holder) come last in both
directions: they are read by a second query in workflow-id order once the first runs dry.

A cursor carries the sort it belongs to, the last row's key and its workflow id. The
default sort's cursor stays the bare workflow id, as it always was; every other cursor is
``k1.`` and base64url JSON. A cursor from another sort is refused: its key means nothing
in this order.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass
from typing import Literal, cast

from django.db.models import Q

from claims.protocol.constants import COLUMN_INT_MAX, COLUMN_INT_MIN
from claims.protocol.errors import InvalidInputError
from claims.protocol.ids import WORKFLOW_ID_MAX_LENGTH
from claims.protocol.states import CLAIM_STATES
from claims.protocol.text import check_identifier

SortField = Literal["workflow_id", "expires_at", "epoch", "claimed_at", "holder", "state"]
SORT_FIELDS: tuple[SortField, ...] = (
    "workflow_id",
    "expires_at",
    "epoch",
    "claimed_at",
    "holder",
    "state",
)
SORT_KEYS: tuple[str, ...] = tuple(key for field in SORT_FIELDS for key in (field, f"-{field}"))
DEFAULT_SORT = "workflow_id"
# The SQL a sort orders by; "state_rank" is an annotation (claims.selectors.claims.listing).
COLUMNS: dict[SortField, str] = {
    "workflow_id": "workflow_id",
    "expires_at": "holder_expires_at_ms",
    "epoch": "epoch",
    "claimed_at": "holder_claimed_at_ms",
    "holder": "holder_engine_id",
    "state": "state_rank",
}
NULLABLE: frozenset[SortField] = frozenset({"expires_at", "claimed_at", "holder"})
# Sorting by state follows the claim's life: live, in grace, expired, invalid, ownerless.
STATE_RANK = {state: rank for rank, state in enumerate(CLAIM_STATES)}
CURSOR_TAG = "k1."
CURSOR_MAX_LENGTH = 1_024

CursorValue = int | str | None


@dataclass(frozen=True)
class ClaimSort:
    field: SortField
    descending: bool = False

    @classmethod
    def parse(cls, text: str | None) -> ClaimSort:
        """``expires_at`` ascending, ``-expires_at`` descending; empty is the default."""
        text = text or DEFAULT_SORT
        if text not in SORT_KEYS:
            raise InvalidInputError(
                f"sort must be one of {', '.join(SORT_KEYS)}; got {text[:40]!r}"
            )
        return cls(cast(SortField, text.lstrip("-")), text.startswith("-"))

    @property
    def key(self) -> str:
        return f"-{self.field}" if self.descending else self.field

    @property
    def column(self) -> str:
        return COLUMNS[self.field]

    @property
    def nullable(self) -> bool:
        return self.field in NULLABLE

    @property
    def is_default(self) -> bool:
        return self.key == DEFAULT_SORT

    def order_by(self, column: str) -> tuple[str, ...]:
        """``column`` then the workflow id, both in this sort's direction."""
        sign = "-" if self.descending else ""
        if column == "workflow_id":
            return (f"{sign}workflow_id",)
        return (f"{sign}{column}", f"{sign}workflow_id")


@dataclass(frozen=True)
class Cursor:
    value: CursorValue  # the sort column's value; None: inside the rows without one
    workflow_id: str


def encode_cursor(sort: ClaimSort, value: CursorValue, workflow_id: str) -> str:
    if sort.is_default:
        return workflow_id
    payload = json.dumps([sort.key, value, workflow_id], separators=(",", ":"))
    return CURSOR_TAG + base64.urlsafe_b64encode(payload.encode()).decode().rstrip("=")


def _tagged(text: str) -> list[object] | None:
    if not text.startswith(CURSOR_TAG):
        return None
    body = text[len(CURSOR_TAG) :]
    try:
        decoded = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    except (binascii.Error, ValueError):
        return None
    return decoded if isinstance(decoded, list) and len(decoded) == 3 else None


def _value_fits(sort: ClaimSort, value: object) -> bool:
    """Whether ``value`` can stand in the sort's column: an edited cursor must be refused
    here, as bad input, rather than reach the database (a NUL, a lone surrogate or an
    integer past 64 bits is an error there, not an empty page). Any number a row holds
    fits, so a page takes back every cursor it wrote."""
    if value is None:
        return sort.nullable
    if sort.field in ("holder", "workflow_id"):
        return isinstance(value, str) and _text_fits(value)
    return (
        isinstance(value, int)
        and not isinstance(value, bool)
        and COLUMN_INT_MIN <= value <= COLUMN_INT_MAX
    )


def _text_fits(value: str) -> bool:
    """The text rule (an invalid holder's engine id may be blank, so empty text fits)."""
    try:
        check_identifier(value, what="a cursor", max_length=WORKFLOW_ID_MAX_LENGTH)
    except InvalidInputError:
        return False
    return True


def decode_cursor(sort: ClaimSort, text: str) -> Cursor:
    """The cursor ``text`` as a position in ``sort``; InvalidInputError when it is not one."""
    tagged = _tagged(text)
    if tagged is None:
        if sort.is_default:
            if not _text_fits(text):
                raise InvalidInputError("cursor is damaged; start again from the first page")
            return Cursor(text, text)
        raise InvalidInputError(
            f"cursor does not belong to sort={sort.key}: a cursor is only valid with the "
            "sort it came from; start again from the first page"
        )
    key, value, workflow_id = tagged
    if key != sort.key:
        # Named only when it is a sort: an edited key may hold anything.
        known = f"sort={key}" if key in SORT_KEYS else "another sort"
        raise InvalidInputError(
            f"cursor belongs to {known}, not sort={sort.key}; start again from the first page"
        )
    if not isinstance(workflow_id, str) or not _text_fits(workflow_id):
        raise InvalidInputError("cursor is damaged; start again from the first page")
    if not _value_fits(sort, value):
        raise InvalidInputError("cursor is damaged; start again from the first page")
    return Cursor(cast(CursorValue, value), workflow_id)


def after(sort: ClaimSort, column: str, cursor: Cursor) -> Q:
    """Rows after ``cursor`` in ``sort``, among the rows that have a value. The redundant
    ``>=`` bound lets the database start its index range at the cursor."""
    newer, at_least = ("lt", "lte") if sort.descending else ("gt", "gte")
    id_after = Q(**{f"workflow_id__{newer}": cursor.workflow_id})
    if column == "workflow_id":
        return id_after
    value = cursor.value
    return Q(**{f"{column}__{at_least}": value}) & (
        Q(**{f"{column}__{newer}": value}) | (Q(**{column: value}) & id_after)
    )


def after_in_nulls(sort: ClaimSort, cursor: Cursor | None) -> Q:
    """Rows without a value, after ``cursor`` when it already stands among them."""
    if cursor is None or cursor.value is not None:
        return Q()
    newer = "lt" if sort.descending else "gt"
    return Q(**{f"workflow_id__{newer}": cursor.workflow_id})
