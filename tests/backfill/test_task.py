"""The Celery entry points, called as the worker would call their bodies (no eager mode)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, cast

import pytest

from claims import tasks
from claims.backfill.jobs import ms_to_datetime
from claims.models import VisibilityWatermark, WorkflowVisibility
from claims.services import backfills
from claims.services.backfills import backfill_schedule
from weftboard.celery import schedule_passes

from ._data import import_workflows, workflow_ids

# Taken before the autouse fixture replaces it for every test.
REAL_ENQUEUE = backfills._enqueue


def test_the_tasks_are_registered_under_their_names():
    assert tasks.backfill_run.name == "claims.backfill_run"
    assert tasks.backfill_run.acks_late is True  # idempotent: a redelivery is harmless
    assert tasks.backfill_run_due.name == "claims.backfill_run_due"


@pytest.mark.django_db
def test_the_run_task_body_runs_the_job():
    import_workflows(workflow_ids(7))
    job = backfill_schedule(run_at=None, requested_by="alice")

    assert tasks.backfill_run.run(job.pk) == "succeeded"

    assert WorkflowVisibility.objects.count() == 7
    assert VisibilityWatermark.objects.get().version == 1
    # Redelivered: nothing more happens.
    assert tasks.backfill_run.run(job.pk) == "succeeded"
    assert VisibilityWatermark.objects.get().version == 1


@pytest.mark.django_db
def test_the_beat_task_body_runs_a_due_job_or_nothing():
    assert tasks.backfill_run_due.run() is None
    import_workflows(workflow_ids(3))
    backfill_schedule(run_at=None, requested_by="alice")

    assert tasks.backfill_run_due.run() == "succeeded"
    assert WorkflowVisibility.objects.count() == 3


def test_beat_polls_for_due_backfills():
    sender = SimpleNamespace(conf=SimpleNamespace())
    schedule_passes(cast(Any, sender))
    entry = sender.conf.beat_schedule["backfill-run-due"]
    assert entry["task"] == "claims.backfill_run_due"
    assert 0 < entry["schedule"] <= 60
    assert entry["options"]["expires"] <= entry["schedule"]


def test_enqueue_sends_the_run_task(monkeypatch):
    sent = []
    monkeypatch.setattr(
        tasks.backfill_run, "apply_async", lambda args, **options: sent.append((args, options))
    )
    REAL_ENQUEUE(5, None)
    REAL_ENQUEUE(6, ms_to_datetime(0))
    assert sent == [((5,), {}), ((6,), {"eta": ms_to_datetime(0)})]
