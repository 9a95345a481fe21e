"""Bulk job tests never reach a broker: the run a created job sends is recorded instead. A
test steps into a run through ``claims.bulk.runner.BulkHooks`` (the adopt messages of a
takeover too, which the Celery task sends)."""

from __future__ import annotations

import pytest

from claims.models import WorkflowStatus
from tests import factories


@pytest.fixture(autouse=True)
def _runs_never_sent(sent_runs: list[int]) -> None:
    """Every bulk test records the run a created job sends (tests/conftest.py)."""


def make_fleet(count: int = 6, *, engine: str = "e-1", epoch: int = 3) -> list[str]:
    """``count`` running "order" workflows wf-00 .. held by ``engine`` at ``epoch``."""
    ids = [f"wf-{n:02d}" for n in range(count)]
    for workflow_id in ids:
        factories.make_workflow(workflow_id)
        factories.make_claim(workflow_id, epoch=epoch, engine=engine)
    return ids


def make_mixed() -> None:
    """One workflow for each rule a bulk action judges: held and running (wf-held),
    ownerless and running (wf-free), suspended (wf-sus), completed (wf-done), a claim whose
    workflow row is gone (wf-gone), and a running workflow never claimed (wf-new)."""
    factories.make_workflow("wf-held")
    factories.make_claim("wf-held", epoch=2)
    factories.make_workflow("wf-free")
    factories.make_claim("wf-free", epoch=5, engine=None)
    factories.make_workflow("wf-sus", status=WorkflowStatus.SUSPENDED)
    factories.make_claim("wf-sus", epoch=4, engine=None)
    factories.make_workflow("wf-done", status=WorkflowStatus.COMPLETED)
    factories.make_claim("wf-done", epoch=7, engine=None)
    factories.make_claim("wf-gone", epoch=9, engine=None)
    factories.make_workflow("wf-new")
