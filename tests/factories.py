"""Rows the page, API and browser tests build, in one place; times are relative to the
fleet clock, as the product judges them. Also claim rows in bulk, and the columns a test
reads back to compare with what the protocol holds."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.db.models import QuerySet

from claims.fleet_clock import fleet_clock
from claims.models import Workflow, WorkflowClaim, WorkflowStatus
from claims.store.rows import HOLDER_COLUMNS

# A claim row's columns in the order claims.store builds a ClaimRow from them.
CLAIM_COLUMNS = ("workflow_id", "epoch", *HOLDER_COLUMNS)


def make_workflow(
    workflow_id: str,
    *,
    status: str = WorkflowStatus.RUNNING,
    state: dict[str, Any] | None = None,
    created_ago_ms: int = 0,
    updated_ago_ms: int = 0,
    **fields: Any,
) -> Workflow:
    """An "order" workflow row with no steps yet, created ``created_ago_ms`` and updated
    ``updated_ago_ms`` ago; ``fields`` set any column outright."""
    now = fleet_clock()()
    values: dict[str, Any] = {
        "workflow_type": "order",
        "state": {"input": None, "steps": {}} if state is None else state,
        "created_at_ms": now - created_ago_ms,
        "updated_at_ms": now - updated_ago_ms,
        **fields,
    }
    return Workflow.objects.create(workflow_id=workflow_id, status=status, **values)


def make_claim(
    workflow_id: str,
    *,
    epoch: int = 1,
    engine: str | None = "e-1",
    expires_in_ms: int = 60_000,
    claimed_ago_ms: int = 1_000,
) -> WorkflowClaim:
    """A claim row at ``epoch`` held by ``engine`` (None: ownerless), expiring
    ``expires_in_ms`` from now and claimed ``claimed_ago_ms`` ago."""
    now = fleet_clock()()
    held = engine is not None
    return WorkflowClaim.objects.create(
        workflow_id=workflow_id,
        epoch=epoch,
        holder_engine_id=engine,
        holder_epoch=epoch if held else None,
        holder_expires_at_ms=now + expires_in_ms if held else None,
        holder_claimed_at_ms=now - claimed_ago_ms if held else None,
    )


def bulk_held_claims(
    workflow_ids: Iterable[str], *, engine: str, expires_at_ms: int, claimed_at_ms: int
) -> None:
    """Claim rows at epoch 1 for many workflows at once, each held by ``engine``; absolute
    times, as the contract and race tests run on a fake clock."""
    WorkflowClaim.objects.bulk_create(
        WorkflowClaim(
            workflow_id=workflow_id,
            epoch=1,
            holder_engine_id=engine,
            holder_epoch=1,
            holder_expires_at_ms=expires_at_ms,
            holder_claimed_at_ms=claimed_at_ms,
        )
        for workflow_id in workflow_ids
    )


def claim_values() -> QuerySet[WorkflowClaim, tuple[Any, ...]]:
    """Every claim row as a tuple of ``CLAIM_COLUMNS``."""
    return WorkflowClaim.objects.values_list(*CLAIM_COLUMNS)


def make_user(name: str, codenames: Iterable[str] = (), **fields: Any) -> Any:
    """A user called ``name`` (password "pw" unless ``fields`` say otherwise) holding the
    claims app's permissions ``codenames``."""
    user = get_user_model().objects.create_user(name, **{"password": "pw", **fields})
    user.user_permissions.set(
        Permission.objects.filter(content_type__app_label="claims", codename__in=codenames)
    )
    return user
