"""The audit log: filters, keyset pages newest first, and the streamed CSV export."""

from __future__ import annotations

import csv
import io

import pytest

from claims.models import ClaimEvent

from .conftest import htmx, make_event

pytestmark = pytest.mark.django_db

JUNE_1 = 1_748_736_000_000  # 2025-06-01T00:00:00Z


@pytest.fixture
def events():
    make_event("wf-a", "acquired", engine_id="e-1", epoch_after=1, at_ms=JUNE_1)
    make_event(
        "wf-a",
        "forced_release",
        engine_id=None,
        epoch_before=1,
        epoch_after=2,
        actor="alice",
        reason="stuck",
        at_ms=JUNE_1 + 3_600_000,
    )
    make_event(
        "wf-b", "takeover", engine_id="e-2", epoch_before=4, epoch_after=5, at_ms=JUNE_1 + 7_200_000
    )


def ids_in(html: str) -> list[str]:
    return [w for w in ("wf-a", "wf-b") if f'href="/workflows/{w}/"' in html]


@pytest.mark.parametrize(
    ("query", "kinds"),
    [
        ("", ["takeover", "forced_release", "acquired"]),
        ("kind=takeover", ["takeover"]),
        ("engine=e-1", ["acquired"]),
        ("actor=alice", ["forced_release"]),
        ("operator=1", ["forced_release"]),
        ("prefix=wf-a", ["forced_release", "acquired"]),
        ("since=2025-06-01T00:30", ["takeover", "forced_release"]),
        ("until=2025-06-01T01:30", ["forced_release", "acquired"]),
        ("since=2025-06-01T00:30&until=2025-06-01T01:30", ["forced_release"]),
    ],
)
def test_filters_newest_first(operator_client, events, query, kinds):
    """Each filter narrows the log; rows come newest first."""
    html = operator_client.get(f"/audit/?{query}", **htmx()).content.decode()

    shown = [k for k in ("takeover", "forced_release", "acquired") if f'kind--{k}">{k}<' in html]
    assert shown == kinds
    positions = [html.index(f'kind--{k}">') for k in kinds]
    assert positions == sorted(positions)


def test_actor_and_reason_are_shown(operator_client, events):
    """Operator actions name their user and reason; engine transitions say "engine"."""
    html = operator_client.get("/audit/").content.decode()

    assert "<strong>alice</strong>" in html
    assert "stuck" in html


def test_keyset_pages_go_to_older_events(operator_client):
    """Older » follows the last event id; the pages do not overlap."""
    for n in range(60):
        make_event(f"wf-{n:02d}", "acquired", epoch_after=1, at_ms=JUNE_1 + n)

    first = operator_client.get("/audit/", **htmx()).content.decode()
    cursor = first.split("cursor=")[1].split('"')[0]
    second = operator_client.get(f"/audit/?cursor={cursor}", **htmx()).content.decode()

    assert 'href="/workflows/wf-59/"' in first
    assert 'href="/workflows/wf-10/"' in first
    assert 'href="/workflows/wf-09/"' not in first
    assert 'href="/workflows/wf-09/"' in second
    assert 'href="/workflows/wf-10/"' not in second
    assert "Older" not in second.split('aria-label="Pages"')[1]


@pytest.mark.parametrize("rows", [3, 30])
def test_query_count_is_fixed(operator_client, rows, django_assert_num_queries):
    """One read for the page whatever the number of events, one for the engines' names."""
    for n in range(rows):
        make_event(f"wf-{n}", "acquired", at_ms=n)

    with django_assert_num_queries(4):
        operator_client.get("/audit/", **htmx())


def test_csv_export_streams_the_filtered_rows(operator_client, events):
    """?format=csv streams every matching event as CSV with a header row."""
    response = operator_client.get("/audit/?format=csv&prefix=wf-a")

    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/csv")
    assert "attachment" in response["Content-Disposition"]
    assert response.streaming
    text = b"".join(response.streaming_content).decode()
    rows = list(csv.reader(io.StringIO(text)))
    # The header line as a spreadsheet shows it (pinned here, not read from the selector).
    assert text.splitlines()[0] == (
        "id,at_ms,at_utc,workflow_id,kind,epoch_before,epoch_after,engine_id,actor,reason"
    )
    assert [(r[3], r[4], r[8], r[9]) for r in rows[1:]] == [
        ("wf-a", "forced_release", "alice", "stuck"),
        ("wf-a", "acquired", "", ""),
    ]


@pytest.mark.parametrize(
    "reason",
    ["=cmd|' /C calc'!A0", "+1+1", "-2+3", "@SUM(A1)", "\tlead", "\rlead"],
)
def test_csv_export_neutralises_cells_a_spreadsheet_would_run(operator_client, reason):
    ClaimEvent.objects.create(
        workflow_id='=HYPERLINK("http://evil.example")',
        kind="forced_release",
        epoch_before=1,
        epoch_after=2,
        engine_id=None,
        actor="alice",
        reason=reason,
        at_ms=1_000,
    )

    response = operator_client.get("/audit/?format=csv")

    [row] = list(csv.reader(io.StringIO(b"".join(response.streaming_content).decode())))[1:]
    assert row[3] == '\'=HYPERLINK("http://evil.example")'
    assert row[9] == "'" + reason


def test_csv_export_needs_a_login(client, db):
    """The export is a page like the others: no session, no data."""
    assert client.get("/audit/?format=csv").status_code == 302


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("kind=exploded", "kind must be one of"),
        ("since=yesterday", "since must be a UTC date and time"),
        ("since=2025-06-02T00:00&until=2025-06-01T00:00", "since must be earlier than until"),
        ("cursor=-4", "cursor must be"),
        ("actor=" + "a" * 151, "at most 150 characters"),
    ],
)
def test_bad_filters_are_a_400(operator_client, query, message):
    """Filters the log cannot use are refused with the reason."""
    response = operator_client.get(f"/audit/?{query}")

    assert response.status_code == 400
    assert message in response.content.decode()
    assert ClaimEvent.objects.count() == 0
