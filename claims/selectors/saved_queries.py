"""Saved queries, read: what a user sees (their own and everyone's shared ones)."""

from __future__ import annotations

from django.contrib.auth.models import AbstractUser, AnonymousUser
from django.db.models import Q, QuerySet

from claims.models import SavedQuery

# The most a list page's strip, or one API answer, shows: a list of views, not an archive.
SAVED_QUERIES_MAX = 100


def _visible(user: AbstractUser | AnonymousUser) -> QuerySet[SavedQuery]:
    if not user.is_authenticated:
        return SavedQuery.objects.none()
    return SavedQuery.objects.filter(Q(owner_id=user.pk) | Q(shared=True))


def saved_queries_for(
    user: AbstractUser | AnonymousUser, list_name: str | None, *, limit: int = SAVED_QUERIES_MAX
) -> QuerySet[SavedQuery]:
    """The user's own and the shared queries for one list (both lists for None), by name,
    at most ``limit``, with their owners: one query, run when first read (a page's live
    fragment, which does not draw them, costs nothing)."""
    rows = _visible(user).select_related("owner").order_by("name", "list_name", "id")
    if list_name is not None:
        rows = rows.filter(list_name=list_name)
    return rows[:limit]


def saved_query_get(user: AbstractUser | AnonymousUser, saved_query_id: int) -> SavedQuery:
    """One query the user may see; another's private one raises SavedQuery.DoesNotExist,
    as a missing one does."""
    return _visible(user).select_related("owner").get(pk=saved_query_id)
