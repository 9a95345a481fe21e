"""Outages an engine lives through, logged once each way in the event format
(``claims.protocol.log_events``): the database, the broker, beat's ticks.

A pass that fails because the database is down would otherwise log a traceback on every
tick of every engine; the operator needs one line when it goes and one when it is back.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from celery import bootsteps
from django.db import InterfaceError, OperationalError

from claims.protocol.log_events import log_event
from claims.protocol.timing import ClaimTiming

logger = logging.getLogger("weftboard.claims")

# Errors that mean "the database is unreachable", not "this pass has a bug".
DATABASE_OUTAGE_ERRORS: tuple[type[Exception], ...] = (OperationalError, InterfaceError)


class DatabaseOutage:
    """Tracks whether this engine's passes reach the database, logging each change once."""

    def __init__(self, engine_id: str) -> None:
        self.engine_id = engine_id
        self._lock = threading.Lock()
        self._down = False

    def failed(self, pass_name: str, error: BaseException) -> None:
        with self._lock:
            first, self._down = not self._down, True
        if first:
            log_event(
                logger,
                logging.WARNING,
                "database-unreachable",
                engine=self.engine_id,
                pass_name=pass_name,
                error=f"{type(error).__name__}: {error}".strip(),
            )

    def succeeded(self) -> None:
        with self._lock:
            recovered, self._down = self._down, False
        if recovered:
            log_event(logger, logging.WARNING, "database-reconnected", engine=self.engine_id)


def log_ticks_missing(engine_id: str, timing: ClaimTiming, intervals: float) -> None:
    """No tick from beat for ``intervals`` renew intervals (the broker or beat is down):
    once per outage; the passes run on the engine's own timer until ticks return."""
    after_s = intervals * timing.renew_interval_ms / 1000
    log_event(logger, logging.WARNING, "ticks-missing", engine=engine_id, after_s=f"{after_s:.1f}")


def log_ticks_back(engine_id: str) -> None:
    log_event(logger, logging.WARNING, "ticks-back", engine=engine_id)


class BrokerReconnectLog(bootsteps.StartStopStep):
    """A consumer step that logs ``event=broker-reconnected`` each time the worker's
    connection to the broker is made again; Celery restarts consumer steps on reconnect."""

    requires = ("celery.worker.consumer.connection:Connection",)

    def __init__(self, parent: Any, **kwargs: Any) -> None:
        self.connected_before = False
        super().__init__(parent, **kwargs)

    def start(self, parent: Any) -> None:
        if self.connected_before:
            log_event(logger, logging.WARNING, "broker-reconnected", node=parent.hostname)
        self.connected_before = True
