"""The demo seed writes the same fleet for the same seed and clock, and only into an empty
database."""

from __future__ import annotations

import hashlib
import io
import json
from typing import Any

import pytest
from django.core.management import call_command
from django.db.models import Model

from claims.models import ClaimEvent, Engine, Workflow, WorkflowClaim, WorkflowVisibility
from claims.services.demo_fleet import (
    DEMO_ENGINES,
    DEMO_FAILURES,
    VANISHED_ENGINE,
    DemoSeedSummary,
    demo_fleet_seed,
)

pytestmark = pytest.mark.django_db

NOW_MS = 1_800_000_000_000

# The digest of every row the seed writes for seed 7 and 300 workflows at NOW_MS (ids of
# visibility rows and events excepted, engines' hostnames and clock readings excepted). A
# refactor of the seed that changes it changes the demo fleet.
SEEDED_DIGEST = "77e5bf729ce13570685b6cdbe22d491a380562852701c3ceb7d8262802f6152a"


def _fields_but(model: type[Model], *left_out: str) -> list[str]:
    """The model's columns in its own order, but for those the digest leaves out."""
    return [field.name for field in model._meta.concrete_fields if field.name not in left_out]


def _rows() -> dict[str, list[Any]]:
    def table(model: type[Model], order: str, *left_out: str) -> list[Any]:
        return list(
            model._default_manager.order_by(order).values_list(*_fields_but(model, *left_out))
        )

    return {
        # failure: its traceback names paths; due_at_ms: a column added after the pin.
        "workflows": table(Workflow, "workflow_id", "failure", "due_at_ms"),
        "visibility": table(WorkflowVisibility, "workflow_id", "id"),
        # The session column is null in the workflow-lease mode the demo fleet runs.
        "claims": table(WorkflowClaim, "workflow_id", "holder_session_epoch"),
        # bulk_job_id, holder_before: columns added after the digest was pinned; the seed
        # runs no job, and its history is older than any engine's look at the moves.
        "events": table(ClaimEvent, "id", "id", "bulk_job_id", "holder_before"),
        "engines": table(
            Engine,
            "engine_id",
            "hostname",
            "name",
            "clock_skew_ms",
            "clock_error_ms",
            "drain_requested_at_ms",  # columns added after the digest was pinned
        ),
    }


def _digest(rows: dict[str, list[Any]]) -> str:
    return hashlib.sha256(json.dumps(rows, sort_keys=True, default=str).encode()).hexdigest()


def test_the_seed_writes_the_same_fleet_for_the_same_seed_and_clock() -> None:
    summary = demo_fleet_seed(clock=lambda: NOW_MS, workflows=300, seed=7)
    rows = _rows()
    assert summary == DemoSeedSummary(
        workflows=300,
        held=161,
        ownerless_running=12,
        unindexed_running=6,
        stranded_by_dead_engine=18,
    )
    assert {name: len(found) for name, found in rows.items()} == {
        "workflows": 300,
        "visibility": 294,
        "claims": 294,
        "events": 161,
        "engines": 3,
    }
    assert _digest(rows) == SEEDED_DIGEST


def test_the_seed_leaves_a_database_with_workflows_alone() -> None:
    demo_fleet_seed(clock=lambda: NOW_MS, workflows=30, seed=7)
    again = demo_fleet_seed(clock=lambda: NOW_MS + 1, workflows=300, seed=8)
    assert again == DemoSeedSummary(30, 0, 0, 0, 0)
    assert Workflow.objects.count() == 30


def test_every_seeded_failed_workflow_says_why_it_failed() -> None:
    demo_fleet_seed(clock=lambda: NOW_MS, workflows=300, seed=7)
    failed = list(Workflow.objects.filter(status="failed"))
    assert failed
    for workflow in failed:
        step, message = DEMO_FAILURES[workflow.workflow_type]
        record = workflow.failure
        assert record is not None
        assert (record["type"], record["message"], record["step"]) == (
            "DemoStepError",
            message,
            step,
        )
        assert record["traceback"].rstrip().endswith(f"DemoStepError: {message}")
        assert record["engine_id"] in DEMO_ENGINES
        assert record["epoch"] == WorkflowClaim.objects.get(workflow_id=workflow.workflow_id).epoch
        assert [e["attempt"] for e in record["step_errors"]] == [1]
    others = Workflow.objects.exclude(status="failed")
    assert not others.filter(failure__isnull=False).exists()


def test_the_seeded_engines_are_dead_and_the_vanished_one_has_no_row() -> None:
    demo_fleet_seed(clock=lambda: NOW_MS, workflows=60, seed=7)
    assert set(Engine.objects.values_list("engine_id", "status")) == {
        (engine_id, "dead") for engine_id in DEMO_ENGINES
    }
    assert WorkflowClaim.objects.filter(holder_engine_id=VANISHED_ENGINE).exists()


def test_the_seed_demo_command_reports_what_it_seeded_then_that_it_is_there() -> None:
    out = io.StringIO()
    call_command("seed_demo", workflows=30, stdout=out)
    assert out.getvalue().startswith("seeded 30 workflows: ")
    out = io.StringIO()
    call_command("seed_demo", stdout=out)
    assert out.getvalue() == "demo data already present (30 workflows)\n"
