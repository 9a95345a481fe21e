"""Injected time. Every protocol decision reads integer milliseconds from a Clock."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

Clock = Callable[[], int]


def system_clock() -> int:
    """Wall-clock milliseconds; engines in a fleet use a database-corrected clock instead."""
    return time.time_ns() // 1_000_000


class OffsetClock:
    """This process's monotonic clock shifted onto a reference time base (the database's).

    ``calibrate`` takes a reference reading bracketed by two local readings; half
    the round trip bounds the error of the estimate.
    """

    def __init__(self, offset_ms: int | None = None, *, skew_ms: int = 0) -> None:
        self._lock = threading.Lock()
        # A deliberate error on top of the calibrated time: fault-injection runs use it to
        # show what a clock the calibration cannot correct would do.
        self.skew_ms = skew_ms
        # Until the first calibration, the wall clock is the best reference we have.
        self._offset_ms = system_clock() - self._monotonic_ms() if offset_ms is None else offset_ms
        self.error_bound_ms = 0

    @staticmethod
    def _monotonic_ms() -> int:
        return time.monotonic_ns() // 1_000_000

    def __call__(self) -> int:
        with self._lock:
            offset = self._offset_ms
        return self._monotonic_ms() + offset + self.skew_ms

    def calibrate(self, read_reference_ms: Callable[[], int]) -> int:
        """Re-measure the offset; returns the skew (local wall clock minus reference).

        An injected skew counts as this clock's own error, so the engine page shows it.
        """
        before = self._monotonic_ms()
        reference = read_reference_ms()
        after = self._monotonic_ms()
        with self._lock:
            self._offset_ms = reference - (before + after) // 2
            self.error_bound_ms = (after - before + 1) // 2
        return system_clock() - (self() - self.skew_ms) + self.skew_ms
