"""The overview: fleet counts, outcome counters and each alert an on-call engineer acts on."""

from __future__ import annotations

import json

import pytest

from claims.conf import claim_timing
from claims.models import ClaimCounter, PendingRedrive, VisibilityWatermark
from claims.services.engines import fleet_snapshot_take

from .conftest import RENEW_MS, TTL_MS, htmx, make_claim, make_engine, make_workflow, now_ms

pytestmark = pytest.mark.django_db


def fresh_passes(now: int) -> dict:
    return {name: {"at_ms": now, "duration_ms": 12.5} for name in ("renew", "reclaim", "wake")}


@pytest.fixture
def healthy():
    """One engine, heartbeating, holding one running workflow; the index is complete."""
    now = now_ms()
    make_engine("e-1", pass_summary=fresh_passes(now))
    make_workflow("wf-1")
    make_claim("wf-1", engine="e-1")
    VisibilityWatermark.objects.create(version=1, built_at_ms=now)


def overview(client) -> str:
    return client.get("/", **htmx()).content.decode()


def test_healthy_fleet_has_no_alerts(operator_client, healthy):
    """Nothing stranded, nothing late, nothing skewed: the strip says so."""
    assert "No alerts" in overview(operator_client)


def test_counts_by_engine_status_and_claim_state(operator_client, healthy):
    """Engines by status and claims by derived state link to their filtered lists."""
    make_engine("e-dead", status="dead", heartbeat_at_ms=0)
    make_claim("wf-free", engine=None)

    html = overview(operator_client)

    assert 'href="/engines/?status=dead"' in html
    assert 'href="/claims/?state=ownerless"' in html
    assert 'href="/claims/?state=live"' in html


def test_outcome_counters_are_fleet_sums_and_feed_the_sparklines(operator_client, healthy):
    """The five outcomes and renewal failures are summed over every engine ever seen."""
    ClaimCounter.objects.create(engine_id="e-1", name="takeover", value=3)
    ClaimCounter.objects.create(engine_id="e-old", name="takeover", value=4)
    ClaimCounter.objects.create(engine_id="e-old", name="renewal_failures", value=2)

    html = overview(operator_client)

    start = html.index("data-counters='") + len("data-counters='")
    counters = json.loads(html[start : html.index("'", start)])
    assert counters == {
        "acquired": 0,
        "takeover": 7,
        "lost_race": 0,
        "deposed": 0,
        "backoff_skipped": 0,
        "renewal_failures": 2,
    }
    assert html.count('data-spark="') == 6


def test_running_workflow_without_holder_is_a_stranded_alert(operator_client, healthy):
    """A running workflow with no holder (or no claim row at all) is listed."""
    make_workflow("wf-stranded")
    make_workflow("wf-free")
    make_claim("wf-free", engine=None)

    html = overview(operator_client)

    assert "2 running workflow(s) with no holder" in html
    assert 'href="/workflows/wf-stranded/"' in html


def test_claims_held_by_a_silent_engine_are_an_alert(operator_client, healthy):
    """Held by an engine whose heartbeat is older than two renew intervals: not progressing."""
    now = now_ms()
    make_engine("e-silent", heartbeat_at_ms=now - 3 * RENEW_MS, pass_summary=fresh_passes(now))
    make_workflow("wf-stuck")
    make_claim("wf-stuck", engine="e-silent")

    html = overview(operator_client)

    assert "1 claim(s) held by a silent or dead engine" in html
    assert 'href="/workflows/wf-stuck/"' in html


def test_ageing_redrives_are_an_alert(operator_client, healthy):
    """A re-drive pending for longer than the TTL is ageing."""
    now = now_ms()
    PendingRedrive.objects.create(
        engine_id="e-1",
        workflow_id="wf-1",
        epoch=1,
        first_failed_at_ms=now - TTL_MS - 1,
        last_failed_at_ms=now,
    )

    assert "1 re-drive(s) pending for longer than the TTL" in overview(operator_client)


def test_recently_dead_engine_is_an_alert(operator_client, healthy):
    """An engine marked dead within the hour is reported; a long-dead one is not."""
    now = now_ms()
    make_engine("e-dead", status="dead", heartbeat_at_ms=now - 100_000)
    make_engine("e-ancient", status="dead", heartbeat_at_ms=now - 10 * 3_600_000)

    assert "1 engine(s) died in the last hour" in overview(operator_client)


def test_clock_skew_over_the_safe_limit_is_an_alert(operator_client, healthy):
    """Skew above TTL - 3 x renew interval (15 s here) is flagged with the engine."""
    make_engine("e-skewed", clock_skew_ms=15_001, pass_summary=fresh_passes(now_ms()))

    html = overview(operator_client)

    assert "1 engine(s) with clock skew over 15000 ms" in html
    assert 'href="/engines/e-skewed/"' in html


def test_late_pass_is_an_alert(operator_client, healthy):
    """A pass that has not finished for over two renew intervals is late."""
    now = now_ms()
    passes = fresh_passes(now)
    passes["reclaim"]["at_ms"] = now - 2 * RENEW_MS - 1_000
    make_engine("e-slow", pass_summary=passes)

    assert "1 engine(s) with a pass late by over 2 intervals" in overview(operator_client)


def test_missing_watermark_is_an_alert(operator_client, healthy):
    """Without a VisibilityWatermark the index is incomplete."""
    VisibilityWatermark.objects.all().delete()

    assert "Visibility index incomplete" in overview(operator_client)


@pytest.mark.parametrize("rows", [3, 30])
@pytest.mark.parametrize(("snapshot", "queries"), [(False, 12), (True, 9)])
def test_query_count_does_not_grow_with_the_fleet(
    operator_client, rows, snapshot, queries, django_assert_num_queries
):
    """A fixed number of reads whatever the size (plus session and user): six, the
    charts' history window, and the fleet snapshot when beat took a fresh one, else the
    three scans it stands for."""
    now = now_ms()
    for n in range(rows):
        make_engine(f"e-{n}", pass_summary=fresh_passes(now))
        make_workflow(f"wf-{n}")
        make_claim(f"wf-{n}", engine=f"e-{n}" if n % 3 else None)
        ClaimCounter.objects.create(engine_id=f"e-{n}", name="acquired", value=n)
    if snapshot:
        fleet_snapshot_take(now_ms=now_ms(), timing=claim_timing())

    with django_assert_num_queries(queries):
        operator_client.get("/", **htmx())
