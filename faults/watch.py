"""Watchers that sample the fleet while the run goes on.

``StrandedWatch`` asks the database twice a second which running workflows nobody owns
(no claim, no holder, or a holder expired past the grace) and keeps, per workflow, each
stretch of time it stayed that way. ``MetricsWatch`` scrapes /metrics every two seconds
and keeps the fleet counters of every scrape.
"""

from __future__ import annotations

import threading
import urllib.request
from dataclasses import dataclass, field

from django.db import close_old_connections, connection
from prometheus_client.parser import text_string_to_metric_families

from claims.models import Workflow, WorkflowClaim

from .history import database_now_ms

FLEET_COUNTERS = ("weft_workflow_claim_attempts", "weft_workflow_claim_renewal_failures")


@dataclass
class StrandedWatch:
    grace_ms: int
    interval_s: float = 0.5
    # Per workflow: [(first seen, last seen)] of each stretch without an owner.
    stretches: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    samples: int = 0
    # The most database sessions each process (by PGAPPNAME) held at once.
    sessions_max: dict[str, int] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    _open: dict[str, int] = field(default_factory=dict)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="stranded-watch", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        now = database_now_ms()
        for workflow_id, first in self._open.items():
            self.stretches.setdefault(workflow_id, []).append((first, now))
        self._open.clear()

    def unowned_now(self) -> tuple[int, set[str]]:
        workflows = connection.ops.quote_name(Workflow._meta.db_table)
        claims = connection.ops.quote_name(WorkflowClaim._meta.db_table)
        with connection.cursor() as cursor:
            cursor.execute("SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint")
            now = int(cursor.fetchone()[0])
            cursor.execute(
                f"SELECT w.workflow_id FROM {workflows} w"
                f" LEFT JOIN {claims} c ON c.workflow_id = w.workflow_id"
                " WHERE w.status = 'running' AND (c.workflow_id IS NULL"
                " OR c.holder_engine_id IS NULL OR c.holder_expires_at_ms + %s < %s)",
                [self.grace_ms, now],
            )
            unowned = {row[0] for row in cursor.fetchall()}
            cursor.execute(
                "SELECT application_name, count(*) FROM pg_stat_activity"
                " WHERE datname = current_database() AND application_name LIKE 'weftboard-%%'"
                " GROUP BY 1"
            )
            for name, count in cursor.fetchall():
                self.sessions_max[name] = max(self.sessions_max.get(name, 0), int(count))
            return now, unowned

    def _run(self) -> None:
        try:
            while not self._stop.wait(self.interval_s):
                try:
                    now, unowned = self.unowned_now()
                except Exception as error:  # the nemesis may have just dropped this session
                    self.errors.append(repr(error))
                    close_old_connections()
                    connection.close()
                    continue
                self.samples += 1
                for workflow_id in unowned:
                    self._open.setdefault(workflow_id, now)
                for workflow_id in [w for w in self._open if w not in unowned]:
                    first = self._open.pop(workflow_id)
                    self.stretches.setdefault(workflow_id, []).append((first, now))
        finally:
            close_old_connections()


def fleet_counters(text: str) -> dict[str, float]:
    """The fleet counter samples of one /metrics page, keyed by name and labels."""
    values: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        if family.name not in FLEET_COUNTERS:
            continue
        for sample in family.samples:
            if sample.name.endswith("_total"):
                labels = ",".join(f"{k}={v}" for k, v in sorted(sample.labels.items()))
                values[f"{sample.name}{{{labels}}}"] = sample.value
    return values


@dataclass
class MetricsWatch:
    url: str
    interval_s: float = 2.0
    scrapes: list[dict[str, float]] = field(default_factory=list)
    failures: int = 0
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="metrics-watch", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def scrape(self) -> dict[str, float] | None:
        try:
            with urllib.request.urlopen(self.url, timeout=10) as response:
                return fleet_counters(response.read().decode())
        except (OSError, ValueError):
            self.failures += 1
            return None

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            values = self.scrape()
            if values is not None:
                self.scrapes.append(values)
