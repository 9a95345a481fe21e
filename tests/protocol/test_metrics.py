"""ClaimMetrics and its Prometheus text (docs/design.md §6)."""

from __future__ import annotations

import threading

import pytest
from prometheus_client.parser import text_string_to_metric_families

from claims.protocol import OUTCOMES, ClaimMetrics, render_prometheus

EXPECTED_TEXT = """\
# HELP weft_workflow_claim_attempts_total Total per-workflow ownership claim attempts, by outcome
# TYPE weft_workflow_claim_attempts_total counter
weft_workflow_claim_attempts_total{outcome="acquired"} 3
weft_workflow_claim_attempts_total{outcome="takeover"} 0
weft_workflow_claim_attempts_total{outcome="lost_race"} 1
weft_workflow_claim_attempts_total{outcome="deposed"} 0
weft_workflow_claim_attempts_total{outcome="backoff_skipped"} 0
# HELP weft_workflow_claims_active Workflows this engine currently holds a claim for
# TYPE weft_workflow_claims_active gauge
weft_workflow_claims_active 2
# HELP weft_workflow_claim_renewal_failures_total Total per-workflow claim renewal failures
# TYPE weft_workflow_claim_renewal_failures_total counter
weft_workflow_claim_renewal_failures_total 0
"""


def _example_metrics() -> ClaimMetrics:
    metrics = ClaimMetrics()
    for _ in range(3):
        metrics.record_attempt("acquired")
    metrics.record_attempt("lost_race")
    metrics.set_active_claims(2)
    return metrics


def test_outcomes_are_the_five_seed_outcomes_in_order():
    """The outcomes are weft's five, in the order they are rendered."""
    assert OUTCOMES == ("acquired", "takeover", "lost_race", "deposed", "backoff_skipped")


def test_fresh_metrics_are_all_zero():
    """A new ClaimMetrics has every outcome at zero, no active claims and no failures."""
    assert ClaimMetrics().snapshot() == {
        "attempts": dict.fromkeys(OUTCOMES, 0),
        "active_claims": 0,
        "renewal_failures": 0,
    }


def test_record_and_snapshot():
    """Attempts count per outcome, failures count up, and the gauge holds the last value set."""
    metrics = ClaimMetrics()
    metrics.record_attempt("takeover")
    metrics.record_attempt("takeover")
    metrics.record_attempt("backoff_skipped")
    metrics.record_renewal_failure()
    metrics.set_active_claims(7)
    metrics.set_active_claims(4)

    assert metrics.snapshot() == {
        "attempts": {
            "acquired": 0,
            "takeover": 2,
            "lost_race": 0,
            "deposed": 0,
            "backoff_skipped": 1,
        },
        "active_claims": 4,
        "renewal_failures": 1,
    }


def test_snapshot_is_a_copy():
    """Mutating a snapshot changes neither the metrics nor later snapshots."""
    metrics = _example_metrics()
    snapshot = metrics.snapshot()

    snapshot["attempts"]["acquired"] = 99
    snapshot["attempts"]["bogus"] = 1
    snapshot["active_claims"] = 99
    snapshot["renewal_failures"] = 99

    again = metrics.snapshot()
    assert again["attempts"] == {**dict.fromkeys(OUTCOMES, 0), "acquired": 3, "lost_race": 1}
    assert again["active_claims"] == 2
    assert again["renewal_failures"] == 0


def test_reset_zeroes_everything():
    """reset returns every counter and the gauge to zero."""
    metrics = _example_metrics()
    metrics.record_renewal_failure()

    metrics.reset()

    assert metrics.snapshot() == ClaimMetrics().snapshot()


@pytest.mark.parametrize("bad", [-1, 1.5, True, False, 2**53, "3", None])
def test_set_active_claims_rejects_negative_non_integer_and_unsafe_values(bad):
    """The gauge takes only integers in [0, 2**53); anything else is a ValueError and no change."""
    metrics = ClaimMetrics()
    metrics.set_active_claims(5)

    with pytest.raises(ValueError, match="active claims"):
        metrics.set_active_claims(bad)

    assert metrics.snapshot()["active_claims"] == 5


def test_set_active_claims_accepts_the_largest_safe_integer():
    """2**53 - 1 is the largest accepted gauge value."""
    metrics = ClaimMetrics()

    metrics.set_active_claims(2**53 - 1)

    assert metrics.snapshot()["active_claims"] == 2**53 - 1


@pytest.mark.parametrize("bad", ["lost-race", "renewed", "", "ACQUIRED"])
def test_unknown_outcome_is_rejected(bad):
    """Only the five outcomes may be recorded; others are a ValueError and add no key."""
    metrics = ClaimMetrics()

    with pytest.raises(ValueError, match="outcome"):
        metrics.record_attempt(bad)

    assert metrics.snapshot()["attempts"] == dict.fromkeys(OUTCOMES, 0)


def test_render_prometheus_is_exactly_the_seed_text():
    """The rendering of one engine's snapshot is byte-for-byte the seed's text, newline-ended."""
    assert render_prometheus(_example_metrics().snapshot()) == EXPECTED_TEXT


def test_render_prometheus_parses_to_the_snapshot_samples():
    """A Prometheus parser reads back the three families with every outcome present."""
    families = {
        family.name: family
        for family in text_string_to_metric_families(
            render_prometheus(_example_metrics().snapshot())
        )
    }

    attempts = families["weft_workflow_claim_attempts"]
    assert attempts.type == "counter"
    assert attempts.documentation == "Total per-workflow ownership claim attempts, by outcome"
    assert [(s.name, s.labels, s.value) for s in attempts.samples] == [
        ("weft_workflow_claim_attempts_total", {"outcome": "acquired"}, 3),
        ("weft_workflow_claim_attempts_total", {"outcome": "takeover"}, 0),
        ("weft_workflow_claim_attempts_total", {"outcome": "lost_race"}, 1),
        ("weft_workflow_claim_attempts_total", {"outcome": "deposed"}, 0),
        ("weft_workflow_claim_attempts_total", {"outcome": "backoff_skipped"}, 0),
    ]
    active = families["weft_workflow_claims_active"]
    assert active.type == "gauge"
    assert [(s.name, s.labels, s.value) for s in active.samples] == [
        ("weft_workflow_claims_active", {}, 2)
    ]
    failures = families["weft_workflow_claim_renewal_failures"]
    assert failures.type == "counter"
    assert [(s.name, s.value) for s in failures.samples] == [
        ("weft_workflow_claim_renewal_failures_total", 0)
    ]
    assert set(families) == {
        "weft_workflow_claim_attempts",
        "weft_workflow_claims_active",
        "weft_workflow_claim_renewal_failures",
    }


def test_render_prometheus_of_a_zero_snapshot_lists_every_outcome():
    """Every outcome is rendered even when nothing was recorded."""
    text = render_prometheus(ClaimMetrics().snapshot())

    for outcome in OUTCOMES:
        assert f'weft_workflow_claim_attempts_total{{outcome="{outcome}"}} 0\n' in text


def test_concurrent_record_attempt_loses_no_increment():
    """8 threads x 1000 record_attempt calls count exactly 8000."""
    metrics = ClaimMetrics()
    start = threading.Barrier(8)

    def work():
        start.wait()
        for _ in range(1000):
            metrics.record_attempt("acquired")
            metrics.record_renewal_failure()

    threads = [threading.Thread(target=work) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    snapshot = metrics.snapshot()
    assert snapshot["attempts"]["acquired"] == 8000
    assert snapshot["renewal_failures"] == 8000
