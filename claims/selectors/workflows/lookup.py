"""Reads of one workflow row, for the action pages and the API's precondition checks."""

from __future__ import annotations

from claims.models import Workflow


def workflow_get(workflow_id: str) -> Workflow | None:
    """The workflow, or None when there is none (never started, or its row deleted)."""
    return Workflow.objects.filter(workflow_id=workflow_id).first()


def workflow_exists(workflow_id: str) -> bool:
    return Workflow.objects.filter(workflow_id=workflow_id).exists()
