"""A set-based takeover of many claims (a dead engine's) is one log line naming the first
few and the count, not a line per claim; a handful stays a line each."""

from __future__ import annotations

import logging
from typing import Any

from claims.protocol import Holder
from claims.protocol.log_events import TAKEOVER_LINES_MAX

from .stores import GRACE_MS, START_MS, TTL_MS

EXPIRY = START_MS + TTL_MS


def test_a_crowd_of_takeovers_is_one_line(
    registry: Any, arrange: Any, workflows: Any, reclaim_target: Any, clock: Any, caplog: Any
) -> None:
    caplog.set_level(logging.DEBUG, logger="weftboard.claims")
    ids = [f"wf{n:02}" for n in range(TAKEOVER_LINES_MAX + 7)]
    for workflow_id in ids:
        workflows.put(workflow_id)
        arrange.put_row(workflow_id, epoch=2, holder=Holder("b", 2, EXPIRY, START_MS))
    clock.set(EXPIRY + GRACE_MS + 1)
    target = reclaim_target(registry("a"), on_reclaimed=lambda _wf: None)

    target.attempt_batch(ids)

    lines = [r.getMessage() for r in caplog.records if getattr(r, "event", None) == "takeover"]
    assert len(lines) == 1
    assert lines[0].startswith(f"event=takeover count={len(ids)} engine=a workflows=")
    named = lines[0].split('workflows="')[1].split(" +")[0].split()
    assert len(named) == TAKEOVER_LINES_MAX
    assert set(named) <= set(ids)
    assert "+7 more (see the audit log)" in lines[0]
