"""Injected time. Every protocol decision reads integer milliseconds from a Clock."""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

Clock = Callable[[], int]

# A calibration whose round trip took longer than this says little about the offset (the
# reply may have waited in a starved or paused process): it is not used.
MAX_ROUND_TRIP_MS = 1_000
# Samples kept; the one with the least error (round trip, plus drift since it was taken)
# sets the offset, as NTP's clock filter does.
SAMPLE_WINDOW = 16
SAMPLE_MAX_AGE_MS = 300_000
# How fast a correction is applied, as a share of elapsed time: 10 ms per second. The
# clock never steps after its first calibration, so it never runs backwards, and a
# duration measured on it is off by at most 1 % while a correction is under way.
SLEW_RATE = 0.01
# What a crystal may drift between samples, counted into the error bound (100 ppm).
DRIFT_RATE = 1e-4


def system_clock() -> int:
    """Wall-clock milliseconds; engines in a fleet use a database-corrected clock instead."""
    return time.time_ns() // 1_000_000


def monotonic_ms() -> int:
    return time.monotonic_ns() // 1_000_000


@dataclass(frozen=True)
class _Sample:
    offset_ms: float  # reference minus local monotonic, at the sample's midpoint
    round_trip_ms: int
    taken_at_ms: int  # local monotonic

    def error_ms(self, now_ms: int) -> float:
        return self.round_trip_ms / 2 + DRIFT_RATE * max(0, now_ms - self.taken_at_ms)


class OffsetClock:
    """This process's monotonic clock shifted onto a reference time base (the database's).

    ``calibrate`` takes a reference reading bracketed by two local readings; the
    reference's time then lay within half the round trip of the midpoint's. The first
    calibration sets the offset outright; later ones feed a window of samples whose best
    one (least round trip, counting drift since) is the target, approached by slewing at
    SLEW_RATE, so readings never go backwards. A sample that contradicts the best one
    (their intervals do not meet: the reference itself moved) empties the window.
    ``error_bound_ms`` is the larger of what the best and the latest sample prove: the
    distance from the offset in force to the sample's, plus the sample's own half round
    trip and drift since. A slow sample widens it until a quick one comes.
    """

    def __init__(
        self,
        offset_ms: int | None = None,
        *,
        skew_ms: int = 0,
        monotonic: Callable[[], int] = monotonic_ms,
    ) -> None:
        self._lock = threading.Lock()
        self._monotonic = monotonic
        # A deliberate error on top of the calibrated time: fault-injection runs use it to
        # show what a clock the calibration cannot correct would do.
        self.skew_ms = skew_ms
        # Until the first calibration, the wall clock is the best reference we have.
        start = float(system_clock() - monotonic() if offset_ms is None else offset_ms)
        self._calibrated = False
        self._samples: deque[_Sample] = deque(maxlen=SAMPLE_WINDOW)
        self._target_ms = self._slew_base_ms = start
        self._slew_from_ms = monotonic()
        self._best: _Sample | None = None
        self._latest: _Sample | None = None
        self._last_reading = -(2**63)
        self.rejected_samples = 0

    def monotonic_ms(self) -> int:
        """The raw local clock, untouched by calibration: for deadlines of this process."""
        return self._monotonic()

    def __call__(self) -> int:
        now = self._monotonic()
        with self._lock:
            reading = math.floor(now + self._offset_at(now)) + self.skew_ms
            # Slewing alone keeps readings in order; this also holds across threads.
            reading = max(reading, self._last_reading)
            self._last_reading = reading
        return reading

    @property
    def error_bound_ms(self) -> int:
        now = self._monotonic()
        with self._lock:
            offset = self._offset_at(now)
            proven = [
                abs(sample.offset_ms - offset) + sample.error_ms(now)
                for sample in (self._best, self._latest)
                if sample is not None
            ]
            return math.ceil(max(proven, default=0))

    def calibrate(self, read_reference_ms: Callable[[], int]) -> int:
        """Take a sample of the reference; returns the skew (local wall clock minus
        reference), counting an injected skew as this clock's own error."""
        before = self._monotonic()
        reference = read_reference_ms()
        after = self._monotonic()
        sample = _Sample(reference - (before + after) / 2, after - before, after)
        with self._lock:
            if not self._calibrated:
                self._calibrated = True
                self._samples.append(sample)
                self._best = self._latest = sample
                self._target_ms = self._slew_base_ms = sample.offset_ms
                self._slew_from_ms = after
            elif sample.round_trip_ms > MAX_ROUND_TRIP_MS:
                self.rejected_samples += 1
            else:
                if self._best is not None and self._contradicts(sample, self._best, after):
                    self._samples.clear()
                self._samples.append(sample)
                self._latest = sample
                self._retarget(after)
        return system_clock() - (self() - self.skew_ms) + self.skew_ms

    @staticmethod
    def _contradicts(sample: _Sample, other: _Sample, now_ms: int) -> bool:
        reach = sample.error_ms(now_ms) + other.error_ms(now_ms)
        return abs(sample.offset_ms - other.offset_ms) > reach

    def _retarget(self, now_ms: int) -> None:
        """Aim at the best sample of the window; caller holds the lock."""
        fresh = [s for s in self._samples if now_ms - s.taken_at_ms <= SAMPLE_MAX_AGE_MS]
        best = min(fresh or self._samples, key=lambda s: s.error_ms(now_ms))
        self._best = best
        if best.offset_ms != self._target_ms:
            self._slew_base_ms = self._offset_at(now_ms)
            self._slew_from_ms = now_ms
            self._target_ms = best.offset_ms

    def _offset_at(self, now_ms: int) -> float:
        """The offset in force at ``now_ms``: moving toward the target at SLEW_RATE."""
        gap = self._target_ms - self._slew_base_ms
        reach = SLEW_RATE * max(0, now_ms - self._slew_from_ms)
        if abs(gap) <= reach:
            return self._target_ms
        return self._slew_base_ms + math.copysign(reach, gap)
