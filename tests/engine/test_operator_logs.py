"""Logs an operator can read: routine per-tick lines stay out of INFO, and each outage or
dead engine is logged once, in the event format (docs/design.md §10)."""

from __future__ import annotations

import logging
from types import SimpleNamespace

import pytest
from django.db import OperationalError

from claims.engine.outages import BrokerReconnectLog, DatabaseOutage
from claims.protocol.log_events import event_line
from claims.services.engines import DEAD_AFTER_TTLS, engines_mark_silent_dead
from tests import factories
from weftboard.logs import ROUTINE_TASKS, QuietRoutineTasks

TTL = 30_000
NOW = 10_000_000


def events(caplog, name: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if getattr(r, "event", None) == name]


def celery_info(logger_name: str, message: str, args: object) -> None:
    """Log as Celery does: one mapping argument (worker) or a tuple (beat)."""
    logging.getLogger(logger_name).info(message, args)


@pytest.mark.parametrize("task", sorted(ROUTINE_TASKS))
def test_routine_task_lines_are_not_logged_at_info(caplog, task):
    """Received, succeeded and beat's "Sending due task" lines of a tick never reach INFO."""
    caplog.set_level(logging.DEBUG)
    celery_info(
        "celery.worker.strategy", "Task %(name)s[%(id)s] received", {"name": task, "id": "1"}
    )
    celery_info(
        "celery.app.trace",
        "Task %(name)s[%(id)s] succeeded in %(runtime)ss: %(return_value)s",
        {"name": task, "id": "1", "runtime": 0.01, "return_value": None},
    )
    logging.getLogger("celery.beat").info("Scheduler: Sending due task %s (%s)", "entry", task)

    assert [r for r in caplog.records if r.name.startswith("celery")] == []


def test_other_tasks_and_failures_still_log(caplog):
    """An operator's task (adopt) logs as before, and a routine task's failure is kept."""
    caplog.set_level(logging.DEBUG)
    celery_info(
        "celery.worker.strategy",
        "Task %(name)s[%(id)s] received",
        {"name": "claims.adopt", "id": "2"},
    )
    logging.getLogger("celery.app.trace").error(
        "Task %(name)s[%(id)s] raised unexpected: %(exc)s",
        {"name": "claims.engine_tick", "id": "3", "exc": "boom"},
    )

    messages = [r.getMessage() for r in caplog.records if r.name.startswith("celery")]
    assert messages == [
        "Task claims.adopt[2] received",
        "Task claims.engine_tick[3] raised unexpected: boom",
    ]


def test_the_filter_is_installed_by_the_logging_settings():
    """settings.LOGGING puts the filter on the three Celery loggers that log per tick."""
    for name in ("celery.worker.strategy", "celery.app.trace", "celery.beat"):
        assert any(isinstance(f, QuietRoutineTasks) for f in logging.getLogger(name).filters)


def test_event_line_format():
    """One format: event first, then key=value in order; None reads '-', spaces are quoted."""
    assert event_line("claim-lost", workflow="wf-1", epoch=3, engine=None) == (
        "event=claim-lost workflow=wf-1 epoch=3 engine=-"
    )
    assert event_line("database-unreachable", error="could not connect") == (
        'event=database-unreachable error="could not connect"'
    )


def test_a_database_outage_is_logged_once_each_way(caplog):
    """Passes failing on every tick give one unreachable line, and one reconnected line."""
    caplog.set_level(logging.DEBUG, logger="weftboard.claims")
    outage = DatabaseOutage("e1")

    outage.succeeded()
    for name in ("renew", "reclaim", "renew"):
        outage.failed(name, OperationalError("connection refused"))
    outage.succeeded()
    outage.succeeded()

    assert events(caplog, "database-unreachable") == [
        "event=database-unreachable engine=e1 pass_name=renew"
        ' error="OperationalError: connection refused"'
    ]
    assert events(caplog, "database-reconnected") == ["event=database-reconnected engine=e1"]


def test_a_broker_reconnect_is_logged_once_per_reconnect(caplog):
    """The first connection is the start, not a reconnect; each later one logs a line."""
    caplog.set_level(logging.DEBUG, logger="weftboard.claims")
    consumer = SimpleNamespace(hostname="engine1@host")
    step = BrokerReconnectLog(consumer)

    step.start(consumer)
    assert events(caplog, "broker-reconnected") == []
    step.start(consumer)
    assert events(caplog, "broker-reconnected") == ["event=broker-reconnected node=engine1@host"]


@pytest.mark.django_db
def test_a_dead_engine_is_logged_once(caplog):
    """Marking a silent engine dead logs it once; the next check finds nothing new to log."""
    caplog.set_level(logging.DEBUG, logger="weftboard.claims")
    for engine_id, silent_ms in (("gone", DEAD_AFTER_TTLS * TTL + 5_000), ("live", 1_000)):
        factories.make_engine(engine_id, started_at_ms=0, heartbeat_at_ms=NOW - silent_ms)

    assert engines_mark_silent_dead(now_ms=NOW, ttl_ms=TTL) == 1
    assert engines_mark_silent_dead(now_ms=NOW + 1, ttl_ms=TTL) == 0

    assert events(caplog, "engine-dead") == ["event=engine-dead engine=gone silent_s=95"]
