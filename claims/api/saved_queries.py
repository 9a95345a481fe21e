"""Saved queries: list, read, save, change and delete one's own; read the shared ones.

The rules (ownership, sharing, names, the query) are claims.services.saved_queries'; a
query another user keeps private answers 404 here as if it did not exist.
"""

from __future__ import annotations

from django.http import HttpRequest
from ninja import Path, Status

from claims.protocol.constants import MAX_SAFE_INTEGER
from claims.selectors.saved_queries import saved_queries_for, saved_query_get
from claims.services.saved_queries import (
    saved_query_create,
    saved_query_delete,
    saved_query_update,
)

from .access import check_write_scope, write_throttle
from .router import router
from .schemas import (
    READ_ERRORS,
    WRITE_ERRORS,
    ErrorOut,
    SavedQueryIn,
    SavedQueryListOut,
    SavedQueryOut,
    SavedQueryPatchIn,
)
from .schemas.saved_queries import ListName

SavedQueryId = Path(..., ge=1, le=MAX_SAFE_INTEGER)


@router.get("/saved-queries", response={200: SavedQueryListOut, **READ_ERRORS})
def saved_queries_list(
    request: HttpRequest, list_name: ListName | None = None
) -> SavedQueryListOut:
    """Your saved queries and everyone's shared ones, by name (at most 100); `list_name`
    keeps those of one list."""
    rows = saved_queries_for(request.user, list_name)
    return SavedQueryListOut(items=[SavedQueryOut.of(row, request.user.pk) for row in rows])


@router.post(
    "/saved-queries", response={**WRITE_ERRORS, 201: SavedQueryOut}, throttle=write_throttle
)
def saved_query_create_route(request: HttpRequest, payload: SavedQueryIn) -> Status[SavedQueryOut]:
    """Save a query under a name (stored in its canonical form); `shared: true` needs the
    permission claims.share_query. A name you already use for that list answers 409."""
    actor = check_write_scope(request)
    saved = saved_query_create(
        request.user,
        name=payload.name,
        list_name=payload.list_name,
        query=payload.query,
        shared=payload.shared,
        actor=actor,
    )
    return Status(201, SavedQueryOut.of(saved, request.user.pk))


@router.get(
    "/saved-queries/{saved_query_id}",
    response={200: SavedQueryOut, 404: ErrorOut, **READ_ERRORS},
)
def saved_query_read(request: HttpRequest, saved_query_id: int = SavedQueryId) -> SavedQueryOut:
    """One of your saved queries, or a shared one."""
    return SavedQueryOut.of(saved_query_get(request.user, saved_query_id), request.user.pk)


@router.patch(
    "/saved-queries/{saved_query_id}",
    response={**WRITE_ERRORS, 200: SavedQueryOut},
    throttle=write_throttle,
)
def saved_query_update_route(
    request: HttpRequest, payload: SavedQueryPatchIn, saved_query_id: int = SavedQueryId
) -> SavedQueryOut:
    """Rename one of yours, give it another query, or share (claims.share_query) or
    unshare it; changing one that stays shared needs claims.share_query too."""
    actor = check_write_scope(request)
    saved = saved_query_update(
        request.user,
        saved_query_id,
        name=payload.name,
        query=payload.query,
        shared=payload.shared,
        actor=actor,
    )
    return SavedQueryOut.of(saved, request.user.pk)


@router.delete(
    "/saved-queries/{saved_query_id}",
    response={**WRITE_ERRORS, 204: None},
    throttle=write_throttle,
)
def saved_query_delete_route(
    request: HttpRequest, saved_query_id: int = SavedQueryId
) -> Status[None]:
    """Delete one of your saved queries, shared or not."""
    actor = check_write_scope(request)
    saved_query_delete(request.user, saved_query_id, actor=actor)
    return Status(204, None)
