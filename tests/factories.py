"""Rows the page, API and browser tests build, in one place; times are relative to the
fleet clock, as the product judges them. Also claim rows in bulk, and the columns a test
reads back to compare with what the protocol holds."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.db.models import QuerySet

from claims.fleet_clock import fleet_clock
from claims.models import (
    Engine,
    EngineSession,
    EngineStatus,
    Workflow,
    WorkflowClaim,
    WorkflowStatus,
)
from claims.store.rows import HOLDER_COLUMNS

# A claim row's columns in the order claims.store builds a ClaimRow from them.
CLAIM_COLUMNS = ("workflow_id", "epoch", *HOLDER_COLUMNS)
# Every operator write the API and the pages offer, but drain (claims app codenames).
WRITE_PERMISSIONS = (
    "force_claim",
    "cancel_workflow",
    "suspend_workflow",
    "add_workflow",
    "schedule_backfill",
)


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


def make_session(
    engine_id: str, *, epoch: int, expires_at_ms: int, at_ms: int, closed_at_ms: int | None = None
) -> EngineSession:
    """``engine_id``'s session row at ``epoch``, expiring at ``expires_at_ms``, last renewed
    20 s and started 60 s before ``at_ms``."""
    return EngineSession.objects.create(
        engine_id=engine_id,
        epoch=epoch,
        expires_at_ms=expires_at_ms,
        renewed_at_ms=at_ms - 20_000,
        started_at_ms=at_ms - 60_000,
        closed_at_ms=closed_at_ms,
    )


def make_engine(
    engine_id: str, *, status: str = EngineStatus.ACTIVE, heard_ago_ms: int = 0, **fields: Any
) -> Engine:
    """An engine row on "host" (pid 1, its own queue), started a minute ago and heard from
    ``heard_ago_ms`` ago; ``fields`` set any column outright."""
    now = fleet_clock()()
    values: dict[str, Any] = {
        "hostname": "host",
        "pid": 1,
        "queue": f"engine.{engine_id}",
        "started_at_ms": now - 60_000,
        "heartbeat_at_ms": now - heard_ago_ms,
        "status": status,
        **fields,
    }
    return Engine.objects.create(engine_id=engine_id, **values)


# The scene of the actions on a whole engine (release all its claims, drain, undrain),
# asked of the API and of the pages: engine e-silent holds these claims (workflow id ->
# epoch), each of a running workflow, and engine e-2 is live beside it.
SILENT_ENGINE_CLAIMS: Mapping[str, int] = {"wf-1": 4, "wf-2": 7, "wf-3": 2}


def make_silent_engine_scene() -> None:
    make_engine("e-silent")
    make_engine("e-2")
    for workflow_id, epoch in SILENT_ENGINE_CLAIMS.items():
        make_workflow(workflow_id)
        make_claim(workflow_id, epoch=epoch, engine="e-silent")


def make_stranded_and_finished(stranded: str, finished: str, **claim_fields: Any) -> None:
    """Ownerless claims (``claim_fields`` as for make_claim) of two workflows: ``stranded``'s
    still runs, with no engine to drive it; ``finished``'s has completed."""
    make_claim(stranded, engine=None, **claim_fields)
    make_claim(finished, engine=None, **claim_fields)
    make_workflow(stranded, status=WorkflowStatus.RUNNING)
    make_workflow(finished, status=WorkflowStatus.COMPLETED)


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
