"""The claim events an operator acts on are logged once each, in the event format
(``event=<name> workflow=… epoch=… engine=…``), on both stores."""

from __future__ import annotations

import logging

from claims.protocol import Holder
from tests.log_reader import read_line

from .stores import GRACE_MS, START_MS, TTL_MS

EXPIRY = START_MS + TTL_MS


def event_lines(caplog, event: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if getattr(r, "event", None) == event]


def test_a_lost_claim_is_logged_once_in_the_event_format(registry, clock, caplog):
    """Renewing twice after a takeover reports one claim-lost line, at WARNING."""
    caplog.set_level(logging.DEBUG, logger="weftboard.claims")
    a = registry("a")
    a.acquire("wf")
    clock.set(EXPIRY + GRACE_MS + 1)
    assert registry("b").takeover("wf").status == "acquired"

    a.renew("wf")
    a.renew("wf")

    assert event_lines(caplog, "claim-lost") == ["event=claim-lost workflow=wf epoch=1 engine=a"]
    lost = [r for r in caplog.records if getattr(r, "event", None) == "claim-lost"]
    assert lost[0].levelno == logging.WARNING


def test_a_takeover_is_logged_once(registry, arrange, workflows, reclaim_target, clock, caplog):
    """A reclaim attempt that takes a lapsed claim over logs one takeover line."""
    caplog.set_level(logging.DEBUG, logger="weftboard.claims")
    workflows.put("wf")
    arrange.put_row("wf", epoch=6, holder=Holder("b", 6, EXPIRY, START_MS))
    clock.set(EXPIRY + GRACE_MS + 1)
    target = reclaim_target(registry("a"), on_reclaimed=lambda _wf: None)

    assert target.attempt("wf") == "reclaimed"
    target.attempt("wf")  # held now: nothing more to log

    assert event_lines(caplog, "takeover") == ["event=takeover workflow=wf epoch=7 engine=a"]


def test_a_set_based_takeover_logs_each_grant_once(
    registry, arrange, workflows, reclaim_target, clock, caplog
):
    """The batch path logs the same line per workflow it took over."""
    caplog.set_level(logging.DEBUG, logger="weftboard.claims")
    for workflow_id in ("wf1", "wf2"):
        workflows.put(workflow_id)
        arrange.put_row(workflow_id, epoch=2, holder=Holder("b", 2, EXPIRY, START_MS))
    clock.set(EXPIRY + GRACE_MS + 1)
    target = reclaim_target(registry("a"), on_reclaimed=lambda _wf: None)

    target.attempt_batch(["wf1", "wf2"])

    assert sorted(event_lines(caplog, "takeover")) == [
        "event=takeover workflow=wf1 epoch=3 engine=a",
        "event=takeover workflow=wf2 epoch=3 engine=a",
    ]


def test_a_hostile_workflow_id_cannot_forge_fields_of_a_logged_line(registry, clock, caplog):
    """An id with quotes, equals signs and a line separator is one quoted, escaped value:
    the line read back holds the fields written and nothing else."""
    caplog.set_level(logging.DEBUG, logger="weftboard.claims")
    hostile = 'wf" epoch=999 engine=forged\u2028event=takeover'
    a = registry("a")
    a.acquire(hostile)
    clock.set(EXPIRY + GRACE_MS + 1)
    assert registry("b").takeover(hostile).status == "acquired"

    a.renew(hostile)

    [line] = event_lines(caplog, "claim-lost")
    assert read_line(line) == [
        ("event", "claim-lost"),
        ("workflow", hostile),
        ("epoch", "1"),
        ("engine", "a"),
    ]
    assert "\u2028" not in caplog.text
