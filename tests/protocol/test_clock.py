"""The database-corrected clock, and the deliberate skew the fault harness gives an engine."""

from __future__ import annotations

import pytest

from claims.clock import SKEW_VARIABLE, injected_skew_ms
from claims.protocol import OffsetClock
from claims.protocol.errors import ClaimConfigError


def test_calibration_puts_the_clock_on_the_reference_time_base():
    clock = OffsetClock(offset_ms=0)
    reference = clock() + 86_400_000  # a reference a day ahead of this process

    clock.calibrate(lambda: reference)

    assert abs(clock() - reference) < 1_000
    assert clock.error_bound_ms >= 0


def test_a_skew_shifts_every_reading_and_survives_calibration():
    plain, skewed = OffsetClock(offset_ms=0), OffsetClock(offset_ms=0, skew_ms=5_000)
    reference = plain()
    plain.calibrate(lambda: reference)
    skewed.calibrate(lambda: reference)

    assert 4_000 < skewed() - plain() < 6_000


def test_calibration_reports_the_skew_as_this_clocks_error():
    plain, skewed = OffsetClock(offset_ms=0), OffsetClock(offset_ms=0, skew_ms=5_000)
    reference = plain()

    reported = skewed.calibrate(lambda: reference) - plain.calibrate(lambda: reference)

    assert 4_000 < reported < 6_000


def test_no_skew_unless_the_variable_says_so(monkeypatch):
    monkeypatch.delenv(SKEW_VARIABLE, raising=False)
    assert injected_skew_ms() == 0
    monkeypatch.setenv(SKEW_VARIABLE, "-2500")
    assert injected_skew_ms() == -2500


@pytest.mark.parametrize("raw", ["5s", "1.5", "ahead"])
def test_a_skew_that_is_not_whole_milliseconds_is_refused_by_name(monkeypatch, raw):
    monkeypatch.setenv(SKEW_VARIABLE, raw)
    with pytest.raises(ClaimConfigError, match=SKEW_VARIABLE):
        injected_skew_ms()
