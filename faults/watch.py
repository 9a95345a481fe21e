"""Watchers that sample the fleet while the run goes on.

``StrandedWatch`` asks the database twice a second which running workflows are not moving:
not parked until a time still ahead, and with no progress (no checkpoint, no terminal
write) for longer than TTL + 3 x renew interval, whether anyone holds them or not. It keeps,
per workflow, each stretch of time it stayed that way, and whether a live holder had it
then (a ghost: held but not driven). ``MetricsWatch`` scrapes /metrics every two seconds
and keeps the fleet counters of every scrape.
"""

from __future__ import annotations

import threading
import urllib.request
from dataclasses import dataclass, field

from django.db import close_old_connections, connection
from prometheus_client.parser import text_string_to_metric_families

from claims.models import EngineSession, Workflow, WorkflowClaim

from .history import database_now_ms
from .processes import BackgroundThread

FLEET_COUNTERS = ("weft_workflow_claim_attempts", "weft_workflow_claim_renewal_failures")


@dataclass(frozen=True)
class Stretch:
    """A time a running workflow made no progress past the bound."""

    first_ms: int  # when it had gone the bound without progress
    last_ms: int
    held: bool  # a live (unexpired) holder named it all along: a ghost


@dataclass
class StrandedWatch(BackgroundThread):
    grace_ms: int
    bound_ms: int
    interval_s: float = 0.5
    stretches: dict[str, list[Stretch]] = field(default_factory=dict)
    samples: int = 0
    # The most database sessions each process (by PGAPPNAME) held at once.
    sessions_max: dict[str, int] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    _open: dict[str, tuple[int, bool]] = field(default_factory=dict)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None
    thread_name = "stranded-watch"

    def stop(self) -> None:
        super().stop()
        now = database_now_ms()
        for workflow_id, (first, held) in self._open.items():
            self.stretches.setdefault(workflow_id, []).append(Stretch(first, now, held))
        self._open.clear()

    def stalled_now(self) -> tuple[int, dict[str, tuple[int, bool]]]:
        """Workflow id -> (when it went the bound without progress, held by a live holder)."""
        workflows = connection.ops.quote_name(Workflow._meta.db_table)
        claims = connection.ops.quote_name(WorkflowClaim._meta.db_table)
        sessions = connection.ops.quote_name(EngineSession._meta.db_table)
        with connection.cursor() as cursor:
            cursor.execute("SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint")
            now = int(cursor.fetchone()[0])
            # Progress is the last version written; a sleep that ended counts from its wake.
            cursor.execute(
                "SELECT w.workflow_id,"
                " GREATEST(w.updated_at_ms, COALESCE((w.state->'park'->>'wake_at_ms')::bigint, 0)),"
                # A session holder's claim (the engine-lease mode) lives while its open
                # session does: its expiry is the session's.
                " c.holder_engine_id IS NOT NULL"
                " AND COALESCE(c.holder_expires_at_ms, s.expires_at_ms) + %s >= %s"
                f" FROM {workflows} w LEFT JOIN {claims} c ON c.workflow_id = w.workflow_id"
                f" LEFT JOIN {sessions} s ON s.engine_id = c.holder_engine_id"
                " AND s.epoch = c.holder_session_epoch AND s.closed_at_ms IS NULL"
                " WHERE w.status = 'running'"
                " AND GREATEST(w.updated_at_ms,"
                " COALESCE((w.state->'park'->>'wake_at_ms')::bigint, 0)) < %s",
                [self.grace_ms, now, now - self.bound_ms],
            )
            stalled = {row[0]: (int(row[1]) + self.bound_ms, bool(row[2])) for row in cursor}
            cursor.execute(
                "SELECT application_name, count(*) FROM pg_stat_activity"
                " WHERE datname = current_database() AND application_name LIKE 'weftboard-%%'"
                " GROUP BY 1"
            )
            for name, count in cursor.fetchall():
                self.sessions_max[name] = max(self.sessions_max.get(name, 0), int(count))
            return now, stalled

    def _run(self) -> None:
        try:
            while not self._stop.wait(self.interval_s):
                try:
                    now, stalled = self.stalled_now()
                except Exception as error:  # the nemesis may have just dropped this session
                    self.errors.append(repr(error))
                    close_old_connections()
                    connection.close()
                    continue
                self.samples += 1
                for workflow_id, (since, held) in stalled.items():
                    first, was_held = self._open.get(workflow_id, (since, True))
                    self._open[workflow_id] = (first, was_held and held)
                for workflow_id in [w for w in self._open if w not in stalled]:
                    first, held = self._open.pop(workflow_id)
                    self.stretches.setdefault(workflow_id, []).append(Stretch(first, now, held))
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
                # scope="fleet" is on every fleet series (docs/design.md §6): not part of a key.
                labels = ",".join(
                    f"{k}={v}" for k, v in sorted(sample.labels.items()) if k != "scope"
                )
                values[f"{sample.name}{{{labels}}}"] = sample.value
    return values


@dataclass
class MetricsWatch(BackgroundThread):
    url: str
    interval_s: float = 2.0
    scrapes: list[dict[str, float]] = field(default_factory=list)
    failures: int = 0
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None
    thread_name = "metrics-watch"

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
