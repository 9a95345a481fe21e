"""Backfill tests never reach a broker: the run task's send is recorded instead."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest


@pytest.fixture(autouse=True)
def sent_runs(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, datetime | None]]:
    sent: list[tuple[int, datetime | None]] = []
    monkeypatch.setattr(
        "claims.backfill.jobs._enqueue", lambda job_id, eta: sent.append((job_id, eta))
    )
    return sent


@pytest.fixture
def batch_hooks(monkeypatch: pytest.MonkeyPatch) -> Any:
    """Install the runner's test seams: ``after_read(job, n, rows)`` / ``before_commit(job, n)``."""

    class Hooks:
        def after_read(self, fn: Any) -> None:
            monkeypatch.setattr("claims.backfill.runner._after_read", fn)

        def before_commit(self, fn: Any) -> None:
            monkeypatch.setattr("claims.backfill.runner._before_commit", fn)

    return Hooks()
