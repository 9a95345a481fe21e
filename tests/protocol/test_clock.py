"""The database-corrected clock, and the deliberate skew the fault harness gives an engine."""

from __future__ import annotations

import pytest

from claims.fleet_clock import SKEW_VARIABLE, injected_skew_ms
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


# -- calibration under a starved process, a slow database and a moving reference --------

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from claims.protocol.offset_clock import MAX_ROUND_TRIP_MS, SLEW_RATE  # noqa: E402
from claims.protocol.testing import FakeClock  # noqa: E402


class Database:
    """A reference clock: the fake local monotonic clock, plus an offset that may jump."""

    def __init__(self, local: FakeClock, offset_ms: int) -> None:
        self.local, self.offset_ms = local, offset_ms

    def now(self) -> int:
        return self.local() + self.offset_ms

    def read(self, *, request_ms: int = 1, reply_ms: int = 1):
        """A reading that spends ``request_ms`` on the way there and ``reply_ms`` back
        (a starved or paused process takes its time to see the reply)."""

        def read_reference() -> int:
            self.local.advance(request_ms)
            answer = self.now()
            self.local.advance(reply_ms)
            return answer

        return read_reference


def calibrated(offset_ms: int = 50_000) -> tuple[FakeClock, Database, OffsetClock]:
    local = FakeClock(1_000_000)
    database = Database(local, offset_ms)
    clock = OffsetClock(offset_ms=0, monotonic=local)
    clock.calibrate(database.read())
    return local, database, clock


def test_the_first_calibration_sets_the_offset_outright():
    _local, database, clock = calibrated()

    assert abs(clock() - database.now()) <= 1
    assert clock.error_bound_ms <= 2


def test_a_reply_that_waited_in_a_paused_process_is_not_used():
    """The case seen in production: answered at once, read 10 s later; half the delay
    would have set the clock back 5 s."""
    _local, database, clock = calibrated()
    before = clock()

    clock.calibrate(database.read(request_ms=1, reply_ms=10_000))

    assert clock.rejected_samples == 1
    assert abs(clock() - database.now()) <= 1
    assert clock() > before


def test_a_slow_but_usable_sample_does_not_displace_a_better_one():
    local, database, clock = calibrated()

    clock.calibrate(database.read(request_ms=1, reply_ms=MAX_ROUND_TRIP_MS - 10))
    assert abs(clock() - database.now()) <= 2
    # It proves little, and the bound says so, until a quick sample comes.
    assert clock.error_bound_ms >= (MAX_ROUND_TRIP_MS - 10) // 2
    local.advance(5_000)
    clock.calibrate(database.read())

    assert abs(clock() - database.now()) <= 2
    assert clock.error_bound_ms <= 3


def test_a_reference_that_jumped_back_is_followed_by_slewing_never_backwards():
    local, database, clock = calibrated()
    database.offset_ms -= 5_000  # the database's clock was set back 5 s
    readings = []

    clock.calibrate(database.read())
    for _ in range(1_000):
        local.advance(1_000)
        readings.append(clock())
        assert abs(readings[-1] - database.now()) <= clock.error_bound_ms + 1
        clock.calibrate(database.read())

    assert readings == sorted(readings)
    assert abs(clock() - database.now()) <= 2


def test_a_jump_forward_is_slewed_at_the_slew_rate():
    local, database, clock = calibrated()
    database.offset_ms += 2_000
    clock.calibrate(database.read())
    start = clock()

    local.advance(10_000)

    assert clock() - start == pytest.approx(10_000 * (1 + SLEW_RATE), abs=3)
    assert clock.error_bound_ms >= database.now() - clock()


def test_the_error_bound_covers_drift_between_samples():
    """A local clock 80 ppm fast: between calibrations the bound grows with the drift."""
    local, database, clock = calibrated()
    for _ in range(20):
        local.advance(60_000)
        database.offset_ms -= 5  # 5 ms per minute: about 80 ppm
        assert abs(clock() - database.now()) <= clock.error_bound_ms + 1
        clock.calibrate(database.read())


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(0, 20_000),  # time until the next calibration
            st.integers(0, 300),  # request leg of the round trip
            st.integers(0, 15_000),  # reply leg: a starved process may sit on it
            st.integers(-3_000, 3_000),  # a step of the database's clock before it
        ),
        min_size=1,
        max_size=40,
    )
)
def test_readings_never_go_backwards_and_the_bound_holds_after_each_calibration(steps):
    local, database, clock = calibrated()
    last = clock()
    for wait_ms, request_ms, reply_ms, jump_ms in steps:
        local.advance(wait_ms)
        database.offset_ms += jump_ms
        assert clock() >= last
        clock.calibrate(database.read(request_ms=request_ms, reply_ms=reply_ms))
        last = clock()
        if request_ms + reply_ms <= MAX_ROUND_TRIP_MS:
            # A sample just taken: the bound must cover the error it reveals.
            assert abs(last - database.now()) <= clock.error_bound_ms + 1
