"""/metrics: weft's claim families summed over the fleet, and the weftboard_* series."""

from __future__ import annotations

import pytest
from django.test import override_settings
from prometheus_client.parser import text_string_to_metric_families

from claims.fleet_clock import fleet_now
from claims.models import ClaimCounter, Engine, EngineStatus
from claims.protocol import OUTCOMES

pytestmark = pytest.mark.django_db


def scrape(client, **headers):
    response = client.get("/metrics", **headers)
    assert response.status_code == 200, response.content
    return {
        sample.name + str(sorted(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(response.content.decode())
        for sample in family.samples
    }


def engine(engine_id, *, status=EngineStatus.ACTIVE, held=0, summary=None, heartbeat_at_ms=0):
    return Engine.objects.create(
        engine_id=engine_id,
        hostname="h",
        pid=1,
        started_at_ms=0,
        heartbeat_at_ms=heartbeat_at_ms,
        status=status,
        held_count=held,
        pass_summary=summary or {},
    )


def key(name, **labels):
    """A fleet sample's key: every series of /metrics' fleet collector has scope="fleet"."""
    return name + str(sorted({"scope": "fleet", **labels}.items()))


def test_every_outcome_is_present_at_zero_on_an_empty_fleet(client):
    """With no engine yet, each of the five outcomes is exported as 0."""
    samples = scrape(client)

    for outcome in OUTCOMES:
        assert samples[key("weft_workflow_claim_attempts_total", outcome=outcome)] == 0
    assert samples[key("weft_workflow_claims_active")] == 0
    assert samples[key("weft_workflow_claim_renewal_failures_total")] == 0


def test_counters_sum_over_every_engine_ever_seen_and_gauge_over_live_ones(client):
    """Counters of stopped and dead engines still count; held claims only of live engines."""
    engine("a", held=5)
    engine("b", status=EngineStatus.DISPOSING, held=2)
    engine("c", status=EngineStatus.DEAD, held=9)
    ClaimCounter.objects.create(engine_id="a", name="takeover", value=3)
    ClaimCounter.objects.create(engine_id="c", name="takeover", value=4)
    ClaimCounter.objects.create(engine_id="gone", name="renewal_failures", value=2)

    samples = scrape(client)

    assert samples[key("weft_workflow_claim_attempts_total", outcome="takeover")] == 7
    assert samples[key("weft_workflow_claims_active")] == 7
    assert samples[key("weft_workflow_claim_renewal_failures_total")] == 2
    assert samples[key("weftboard_engines", status="dead")] == 1
    assert samples[key("weftboard_engines", status="active")] == 1


def test_pass_histograms_add_up_across_engines(client):
    """Persisted cumulative buckets of two engines are summed into one histogram per pass."""
    counts = [1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]  # one fast pass, one over 10 s
    histograms = {"renew": {"counts": counts, "sum": 12.0}}
    engine("a", summary={"histograms": histograms})
    engine("b", summary={"histograms": histograms})

    samples = scrape(client)

    assert samples[key("weftboard_pass_duration_seconds_count", **{"pass": "renew"})] == 4
    assert samples[key("weftboard_pass_duration_seconds_sum", **{"pass": "renew"})] == 24.0
    bucket = key("weftboard_pass_duration_seconds_bucket", le="0.005", **{"pass": "renew"})
    assert samples[bucket] == 2


def test_no_workflow_id_is_ever_a_label(client):
    """Label names stay within a small, bounded set; only the per-engine gauge names engines."""
    engine("a", held=1, heartbeat_at_ms=fleet_now()[0])
    response = client.get("/metrics")
    labels = {
        (family.name, label)
        for family in text_string_to_metric_families(response.content.decode())
        for sample in family.samples
        for label in sample.labels
    }
    assert not [pair for pair in labels if pair[1] == "workflow_id"]
    assert {name for name, label in labels if label == "engine"} == {"weftboard_engine_held_claims"}


@override_settings(WEFTBOARD_METRICS_TOKEN="s3cret")
def test_metrics_token_is_required_when_configured(client):
    """With a token configured, a scrape without it is 401 and one with it succeeds."""
    assert client.get("/metrics").status_code == 401
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer wrong").status_code == 401
    assert scrape(client, HTTP_AUTHORIZATION="Bearer s3cret")


@override_settings(WEFTBOARD_METRICS_TOKEN="s3cret")
@pytest.mark.parametrize("header", ["s3cret", "Basic s3cret", "Token s3cret", "Bearers3cret"])
def test_the_metrics_token_counts_only_under_the_bearer_scheme(client, header):
    assert client.get("/metrics", HTTP_AUTHORIZATION=header).status_code == 401
