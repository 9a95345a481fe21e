"""Tables of exactly one row (a marker, a watermark, a snapshot): its id is always 1, and
the database refuses any other, so two writers can only ever update the same row."""

from __future__ import annotations

from django.db import models
from django.db.models import Q


def singleton_id() -> models.PositiveSmallIntegerField:
    return models.PositiveSmallIntegerField(primary_key=True, default=1, editable=False)


def only_row_one(name: str) -> models.CheckConstraint:
    return models.CheckConstraint(condition=Q(id=1), name=name)
