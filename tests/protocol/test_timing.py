"""ClaimTiming, duration parsing and the expiry judgement (docs/design.md §1)."""

from __future__ import annotations

import dataclasses

import pytest

from claims.protocol import (
    DEFAULT_RENEW_INTERVAL_MS,
    DEFAULT_TTL_MS,
    GRACE_MULTIPLIER,
    TTL_SAFETY_MULTIPLIER,
    ClaimConfigError,
    ClaimTiming,
    is_claim_expired,
)

# A TTL large enough that any renew interval under test passes the 3x rule.
ROOMY_TTL = "1000m"


def test_defaults_are_30s_ttl_and_5s_renew_interval():
    """ClaimTiming() is a 30 s TTL renewed every 5 s, matching the exported constants."""
    timing = ClaimTiming()

    assert (timing.ttl_ms, timing.renew_interval_ms) == (30_000, 5_000)
    assert (DEFAULT_TTL_MS, DEFAULT_RENEW_INTERVAL_MS) == (30_000, 5_000)
    assert (TTL_SAFETY_MULTIPLIER, GRACE_MULTIPLIER) == (3, 2)


def test_timing_is_frozen():
    """A ClaimTiming cannot be changed after construction."""
    timing = ClaimTiming()

    with pytest.raises(dataclasses.FrozenInstanceError):
        timing.ttl_ms = 1


def test_parse_takes_integers_of_milliseconds():
    """Integers are milliseconds as they are."""
    timing = ClaimTiming.parse(45_000, 9_999)

    assert (timing.ttl_ms, timing.renew_interval_ms) == (45_000, 9_999)


@pytest.mark.parametrize(
    ("text", "expected_ms"),
    [
        ("45s", 45_000),
        ("9999ms", 9_999),
        ("10m", 600_000),
        ("1.5s", 1_500),
        ("0.0001s", 1),
        ("0.5ms", 1),
        ("1.1s", 1_100),
        ("2.007s", 2_007),
        ("0.25m", 15_000),
        ("0.0041m", 246),
        ("0.0001m", 6),
    ],
)
def test_parse_takes_durations_rounded_up_to_whole_ms(text, expected_ms):
    """A "<number>ms|s|m" duration becomes its exact value in ms, rounded up only if fractional."""
    assert ClaimTiming.parse(ROOMY_TTL, text).renew_interval_ms == expected_ms


def test_parse_takes_both_arguments_as_durations():
    """TTL and renew interval are each parsed as a duration."""
    timing = ClaimTiming.parse("45s", "10s")

    assert (timing.ttl_ms, timing.renew_interval_ms) == (45_000, 10_000)


@pytest.mark.parametrize(
    "bad",
    [
        "",
        "45",
        "45h",
        "s",
        "ms",
        "-5s",
        "+5s",
        "1e3s",
        "abc",
        "4 5s",
        "5.s",
        "inf s",
        "nan",
        "5 sec",
    ],
)
def test_parse_rejects_malformed_strings(bad):
    """A string that is not "<number>ms|s|m" is a ClaimConfigError naming the value."""
    with pytest.raises(ClaimConfigError) as raised:
        ClaimTiming.parse(ROOMY_TTL, bad)

    assert repr(bad) in str(raised.value)


@pytest.mark.parametrize("bad", [45.0, None, [45], b"45s", True, False])
def test_parse_rejects_other_types_and_bools(bad):
    """Floats, None, lists, bytes and booleans are ClaimConfigErrors naming the value."""
    with pytest.raises(ClaimConfigError) as raised:
        ClaimTiming.parse(ROOMY_TTL, bad)

    assert repr(bad) in str(raised.value)


def test_parse_rejects_an_astronomically_long_number_as_config_error():
    """A duration whose number overflows a float is still a ClaimConfigError, not a crash."""
    with pytest.raises(ClaimConfigError):
        ClaimTiming.parse("9" * 400 + "s", "5s")


def test_parse_rejects_durations_of_2_to_the_53_ms_or_more():
    """Durations must stay exact in a JavaScript number: 2**53 ms is refused, 2**53 - 1 is fine."""
    with pytest.raises(ClaimConfigError):
        ClaimTiming.parse(2**53, 1)

    assert ClaimTiming.parse(2**53 - 1, 1).ttl_ms == 2**53 - 1


@pytest.mark.parametrize(
    ("ttl", "interval"),
    [(0, 1), (-1, 1), (30_000, 0), (30_000, -5), ("0s", "0ms"), (-30_000, -5_000)],
)
def test_non_positive_values_are_rejected_with_rule_and_values(ttl, interval):
    """Zero or negative values fail with a message naming the positivity rule and the values."""
    with pytest.raises(ClaimConfigError) as raised:
        ClaimTiming.parse(ttl, interval)

    message = str(raised.value)
    assert "positive" in message


def test_non_positive_message_names_the_values():
    """The positivity message shows both values in ms."""
    with pytest.raises(ClaimConfigError) as raised:
        ClaimTiming(ttl_ms=30_000, renew_interval_ms=-5)

    assert "30000" in str(raised.value)
    assert "-5" in str(raised.value)


@pytest.mark.parametrize(("ttl", "interval"), [(5_000, 5_000), (5_000, 6_000), ("5s", "5s")])
def test_renew_interval_not_below_ttl_is_rejected(ttl, interval):
    """A renew interval >= TTL fails naming the strictly-less rule and both values."""
    with pytest.raises(ClaimConfigError) as raised:
        ClaimTiming.parse(ttl, interval)

    message = str(raised.value)
    assert "strictly less" in message
    assert "5000" in message


def test_ttl_of_exactly_three_renew_intervals_is_accepted():
    """TTL == 3 x renew interval is the smallest accepted TTL."""
    timing = ClaimTiming(ttl_ms=15_000, renew_interval_ms=5_000)

    assert timing.ttl_ms == 15_000


def test_ttl_one_ms_under_three_renew_intervals_is_rejected():
    """TTL == 3 x renew interval - 1 fails naming the 3x rule and both values."""
    with pytest.raises(ClaimConfigError) as raised:
        ClaimTiming(ttl_ms=14_999, renew_interval_ms=5_000)

    message = str(raised.value)
    assert "3 x renew interval" in message
    assert "14999" in message
    assert "5000" in message


@pytest.mark.parametrize("bad", [True, 1.5, "30000", None])
def test_constructor_rejects_non_integers(bad):
    """The constructor takes integers only; booleans and others are ClaimConfigErrors."""
    with pytest.raises(ClaimConfigError):
        ClaimTiming(ttl_ms=bad, renew_interval_ms=5_000)
    with pytest.raises(ClaimConfigError):
        ClaimTiming(ttl_ms=30_000, renew_interval_ms=bad)


def test_claim_config_error_is_a_value_error():
    """Configuration errors can be caught as ValueError."""
    with pytest.raises(ValueError, match="ttl"):
        ClaimTiming.parse("soon", "5s")


def test_is_claim_expired_is_strict_at_grace_boundary():
    """A claim is alive at exactly expires + 2 x renew interval and expired one ms later."""
    timing = ClaimTiming(ttl_ms=30_000, renew_interval_ms=5_000)
    expires = 1_000_000

    assert not is_claim_expired(expires, expires, timing)
    assert not is_claim_expired(expires, expires + 10_000, timing)
    assert is_claim_expired(expires, expires + 10_001, timing)


def test_is_claim_expired_scales_grace_with_renew_interval():
    """The grace is twice the configured renew interval, not a fixed amount."""
    timing = ClaimTiming(ttl_ms=90_000, renew_interval_ms=30_000)

    assert not is_claim_expired(0, 60_000, timing)
    assert is_claim_expired(0, 60_001, timing)
