"""Engines, one engine, and the reclaim scan's progress."""

from __future__ import annotations

import re

import pytest

from claims.conf import claim_timing
from claims.models import ClaimCounter, ClaimEvent, ReclaimCursor, Workflow
from claims.services.engines import fleet_snapshot_take

from .conftest import htmx, make_claim, make_engine, make_workflow, now_ms

pytestmark = pytest.mark.django_db


def reclaim_summary(now: int, **candidates: int) -> dict:
    found = {
        "stale_holders": 0,
        "unheld_indexed": 0,
        "authoritative_scan": 0,
        "pending_redrives": 0,
    }
    found.update(candidates)
    return {
        "reclaim": {
            "status": "completed",
            "at_ms": now,
            "duration_ms": 40.0,
            "candidates": found,
            "scanned": 500,
            "wrapped": False,
            "attempted": 3,
            "reclaimed": 2,
            "errors": 0,
        },
        "histograms": {"renew": {"counts": [5, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1], "sum": 0.2}},
    }


def test_engines_list_live_first_with_holdings_and_counters(operator_client):
    """Active engines come before dead ones; holdings link to the claims filtered by engine."""
    make_engine("e-dead", status="dead", heartbeat_at_ms=0)
    make_engine("e-live")
    make_claim("wf-1", engine="e-live")
    ClaimCounter.objects.create(engine_id="e-live", name="takeover", value=5)

    html = operator_client.get("/engines/", **htmx()).content.decode()

    assert html.index("/engines/e-live/") < html.index("/engines/e-dead/")
    assert 'href="/claims/?engine=e-live">1</a>' in html
    assert "0 / 5" in html  # acquired / takeover


def test_engines_table_rows_show_passes_skew_and_plain_counters(operator_client):
    """Per pass: when it last finished, how long it took and a late flag; counters unformatted."""
    now = now_ms()
    summary = {
        "renew": {"at_ms": now - 1_000, "duration_ms": 40.0},
        "reclaim": {"at_ms": now - 90_000, "duration_ms": 1_500},
    }
    make_engine("e-1", clock_skew_ms=-12, clock_error_ms=None, pass_summary=summary)
    ClaimCounter.objects.create(engine_id="e-1", name="acquired", value=12_345)

    html = operator_client.get("/engines/", **htmx("engines-live")).content.decode()

    finished = r'<td class="stack"><time datetime="[^"]+" title="[^"]+">[^<]+ ago</time>'
    assert re.search(finished + "<small>40.0 ms</small></td>", html)
    assert re.search(finished + ' <span class="flag">late</span><small>1.5 s</small></td>', html)
    assert '<td class="stack"><span class="muted">—</span></td>' in html  # wake: not run yet
    assert "<span>-12 ms</span><small>± ? ms</small>" in html
    assert '<td class="num">12345 / 0</td>' in html


def test_engines_status_filter(operator_client):
    """?status=dead lists only dead engines; an unknown status is a 400."""
    make_engine("e-dead", status="dead")
    make_engine("e-live")

    html = operator_client.get("/engines/?status=dead", **htmx()).content.decode()

    assert "/engines/e-dead/" in html
    assert "/engines/e-live/" not in html
    assert operator_client.get("/engines/?status=zombie").status_code == 400


@pytest.mark.parametrize("rows", [3, 30])
@pytest.mark.parametrize(("snapshot", "queries"), [(True, 5), (False, 6)])
def test_engines_query_count_is_fixed(
    operator_client, rows, snapshot, queries, django_assert_num_queries
):
    """Engines, counters and holdings are three reads whatever the fleet's size; the
    holdings come from beat's fresh fleet snapshot, and without one are counted (a fourth)."""
    for n in range(rows):
        make_engine(f"e-{n}")
        make_claim(f"wf-{n}", engine=f"e-{n}")
        ClaimCounter.objects.create(engine_id=f"e-{n}", name="acquired", value=1)
    if snapshot:
        fleet_snapshot_take(now_ms=now_ms(), timing=claim_timing())

    with django_assert_num_queries(queries):
        operator_client.get("/engines/", **htmx())


def test_engine_page_shows_skew_passes_histogram_and_holdings(operator_client):
    """One engine: heartbeat, skew with its error bound, pass summaries and durations."""
    now = now_ms()
    make_engine("e-1", clock_skew_ms=7, clock_error_ms=2, pass_summary=reclaim_summary(now))
    make_claim("wf-1", engine="e-1")
    ClaimEvent.objects.create(workflow_id="wf-1", kind="acquired", engine_id="e-1", at_ms=now)

    html = operator_client.get("/engines/e-1/").content.decode()

    assert "7 ms</span> ± 2 ms" in html
    assert "renew pass durations" in html
    assert 'href="/claims/?engine=e-1">1 claims</a>' in html
    assert "stale_holders=0" in html
    assert 'href="/workflows/wf-1/"' in html


def test_unknown_engine_is_a_404_and_a_bad_id_a_400(operator_client):
    """Engine ids are checked like workflow ids."""
    assert operator_client.get("/engines/nope/").status_code == 404
    assert operator_client.get("/engines/" + "e" * 256 + "/").status_code == 400


def test_reclaim_cursor_is_a_progress_bar_over_the_keyspace(operator_client):
    """Position = ids at or before the cursor over all ids; candidates summed by source."""
    for n in range(600):
        Workflow(
            workflow_id=f"wf-{n:04d}",
            workflow_type="t",
            status="completed",
            created_at_ms=0,
            updated_at_ms=0,
        ).save()
    ReclaimCursor.objects.create(
        name="default",
        last_workflow_id="wf-0149",
        wraps=3,
        scanned_total=1234,
        updated_at_ms=now_ms(),
        updated_by="e-1",
    )
    make_engine("e-1", pass_summary=reclaim_summary(now_ms(), stale_holders=4))
    make_engine("e-2", pass_summary=reclaim_summary(now_ms(), stale_holders=1, unheld_indexed=2))

    html = operator_client.get("/reclaim/", **htmx()).content.decode()

    assert 'aria-valuenow="25.0"' in html
    assert "150 of 600 workflow ids" in html
    assert "3 full sweeps" in html
    assert '<span class="kpi__value">5</span><span class="kpi__label">stale</span>' in html
    assert "next wrap in about" in html


def test_a_page_beat_read_names_beat_not_an_engine(operator_client):
    ReclaimCursor.objects.create(name="default", updated_at_ms=now_ms(), updated_by="beat")

    html = operator_client.get("/reclaim/", **htmx()).content.decode()

    assert "beat, for the fleet" in html
    assert "/engines/beat" not in html


def test_reclaim_pass_rows_list_candidates_in_source_order(operator_client):
    """stale, unheld (index), unheld (scan), re-drives: the columns of the headings."""
    summary = reclaim_summary(
        now_ms(), stale_holders=4, unheld_indexed=2, authoritative_scan=1, pending_redrives=3
    )
    make_engine("e-1", pass_summary=summary)

    html = operator_client.get("/reclaim/", **htmx("reclaim-live")).content.decode()

    headings = re.findall(r'<th scope="col" class="num" title="[^"]+">([^<]+)</th>', html)
    assert headings[:4] == ["stale", "unheld (index)", "unheld (scan)", "re-drives"]
    cells = "".join(f'<td class="num">{n}</td>' for n in (4, 2, 1, 3))
    assert re.search(r"<td>completed</td>\s*" + cells, html)


def test_reclaim_page_query_count(operator_client, django_assert_num_queries):
    """Cursor, beat's snapshot (none here), one counting query over the keyspace, live
    engines, their names."""
    make_workflow("wf-1")
    make_engine("e-1", pass_summary=reclaim_summary(now_ms()))

    with django_assert_num_queries(7):
        operator_client.get("/reclaim/", **htmx())
