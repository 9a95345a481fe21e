"""Backfill tests never reach a broker: the run task's send is recorded instead. (A test
steps into a run through ``claims.backfill.runner.BackfillHooks``.)"""

from __future__ import annotations

from datetime import datetime

import pytest


@pytest.fixture(autouse=True)
def sent_runs(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, datetime | None]]:
    sent: list[tuple[int, datetime | None]] = []
    monkeypatch.setattr(
        "claims.services.backfills._enqueue", lambda job_id, eta: sent.append((job_id, eta))
    )
    return sent
