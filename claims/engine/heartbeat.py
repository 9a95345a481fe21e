"""What an engine writes after each sub-pass (docs/design.md §4, "Heartbeat"): its clock
calibrated, its `Engine` row (each pass's last result and timing, the pass histograms),
and its counters' totals (§6)."""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import Any

from claims.engine.broker_guard import rejected_total as broker_rejected_total
from claims.fleet_clock import database_now_ms
from claims.protocol import ClaimMetrics, ClaimRegistry, OffsetClock
from claims.protocol.pass_histogram import PassHistogram
from claims.services import engines
from claims.services.engines import session_counter_totals


class EngineHeartbeat:
    def __init__(
        self,
        registry: ClaimRegistry,
        *,
        clock: OffsetClock,
        metrics: ClaimMetrics,
        pass_names: Iterable[str],
    ) -> None:
        self.registry = registry
        self.engine_id = registry.engine_id
        self.clock = clock
        self.metrics = metrics
        self._summary_lock = threading.Lock()
        self._summary: dict[str, Any] = {}
        self._flush_lock = threading.Lock()
        self._histograms = {name: PassHistogram() for name in pass_names}

    def after_pass(self, name: str, duration_s: float, summary: dict[str, Any]) -> bool:
        """Write the row and the counters; returns whether the row took the heartbeat
        (False: the engine is not active or disposing any more, see engine_heartbeat)."""
        skew = self.clock.calibrate(database_now_ms)
        now = self.clock()
        self._histograms[name].observe(duration_s)
        with self._summary_lock:
            self._summary[name] = {
                **summary,
                "at_ms": now,
                "duration_ms": round(duration_s * 1000, 1),
            }
            self._summary["histograms"] = {n: h.as_json() for n, h in self._histograms.items()}
            snapshot = dict(self._summary)
        applied = engines.engine_heartbeat(
            engine_id=self.engine_id,
            now_ms=now,
            held_count=len(self.registry.held_workflow_ids()),
            clock_skew_ms=skew,
            clock_error_ms=self.clock.error_bound_ms,
            pass_summary=snapshot,
        )
        self.flush_counters()
        return applied

    def flush_counters(self) -> None:
        """Persist the counters' totals (one flush at a time; a failed one is simply
        repeated by the next, since it writes totals, not increments)."""
        with self._flush_lock:
            snapshot = self.metrics.snapshot()
            engines.counters_record(
                engine_id=self.engine_id,
                totals={
                    **snapshot["attempts"],
                    "renewal_failures": snapshot["renewal_failures"],
                    "broker_rejected": broker_rejected_total(),
                    **session_counter_totals(self.metrics.session_counts()),
                },
            )
