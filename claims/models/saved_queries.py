"""Saved queries ("saved views"): a query of the query language kept under a name, for its
owner or, shared, for everyone (docs/design.md §2). Changed only through
claims.services.saved_queries, which writes an operator record for each change."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from .bulk import BulkList

SAVED_QUERY_NAME_MAX_LENGTH = 100


class SavedQuery(models.Model):
    """``query`` is stored in the canonical printed form (claims.query.format_query), so
    two spellings of one query are one text, and a link made from it reads back the same."""

    name = models.CharField(max_length=SAVED_QUERY_NAME_MAX_LENGTH)
    # The list the query is for: the claims or the workflows (their fields differ).
    list_name = models.CharField(max_length=16, choices=BulkList.choices)
    query = models.TextField()
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="saved_queries"
    )
    shared = models.BooleanField(default=False)
    created_at_ms = models.BigIntegerField()
    updated_at_ms = models.BigIntegerField()

    class Meta:
        verbose_name_plural = "saved queries"
        constraints = [
            models.UniqueConstraint(
                fields=["owner", "list_name", "name"], name="saved_query_name_once_per_owner"
            )
        ]
        indexes = [
            # The shared half of what a list page shows (the owner's half uses the unique one).
            models.Index(fields=["list_name", "shared", "name"], name="saved_query_shared_idx"),
        ]
        permissions = [("share_query", "Can share saved queries with everyone")]

    def __str__(self) -> str:
        return f"{self.name} ({self.list_name})"
