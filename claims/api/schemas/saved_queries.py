"""Saved queries: a query of the query language kept under a name, own or shared."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from ninja import Field, Schema
from pydantic import StrictBool

from claims.models import SavedQuery
from claims.query import MAX_LENGTH as QUERY_MAX_LENGTH

from .common import BodyIn, fields_from

ListName = Literal["claims", "workflows"]
# The service's bound on a name (claims/services/saved_queries.py), in the schema so a
# client sees it; a blank name and a query that does not parse are the service's to refuse.
NAME_MAX = 100


class SavedQueryIn(BodyIn):
    name: str = Field(min_length=1, max_length=NAME_MAX)
    list_name: ListName
    query: str = Field(max_length=QUERY_MAX_LENGTH)
    shared: StrictBool = False


class SavedQueryPatchIn(BodyIn):
    """What to change; what is left out stays."""

    name: str | None = Field(None, min_length=1, max_length=NAME_MAX)
    query: str | None = Field(None, max_length=QUERY_MAX_LENGTH)
    shared: StrictBool | None = None


class SavedQueryOut(Schema):
    id: int
    name: str
    list_name: str
    query: str  # canonical text: pass it as the list's ``query`` parameter
    owner: str
    mine: bool
    shared: bool
    created_at_ms: int
    created_at: datetime | None
    updated_at_ms: int
    updated_at: datetime | None

    @classmethod
    def of(cls, saved: SavedQuery, user_id: int | None) -> SavedQueryOut:
        return cls(
            **fields_from(
                saved,
                cls,
                owner=saved.owner.get_username(),
                mine=saved.owner_id == user_id,
            )
        )


class SavedQueryListOut(Schema):
    items: list[SavedQueryOut]
