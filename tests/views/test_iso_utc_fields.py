"""ISO 8601 UTC on the pages: the audit CSV's text timestamps beside the millisecond
ones, and date fields that accept and show 2026-12-03T09:30:00Z and refuse the rest."""

from __future__ import annotations

import csv
import io

import pytest

from claims.utc_text import iso_utc, parse_iso_utc

from .conftest import make_event

pytestmark = pytest.mark.django_db

DEC_3_0930 = 1_796_290_200_000  # 2026-12-03T09:30:00Z


def csv_rows(client, query: str = "") -> list[dict[str, str]]:
    response = client.get(f"/audit/?format=csv{query}")
    assert response.status_code == 200
    text = b"".join(response.streaming_content).decode()
    return list(csv.DictReader(io.StringIO(text)))


def test_the_csv_has_an_iso_utc_column_right_after_each_ms_column(operator_client):
    make_event("wf-a", "acquired", engine_id="e-1", epoch_after=1, at_ms=DEC_3_0930 + 250)

    response = operator_client.get("/audit/?format=csv")
    header = b"".join(response.streaming_content).decode().splitlines()[0].split(",")
    [row] = csv_rows(operator_client)

    assert header.index("at_utc") == header.index("at_ms") + 1
    assert (row["at_ms"], row["at_utc"]) == (str(DEC_3_0930 + 250), "2026-12-03T09:30:00.250Z")


def test_the_csv_stays_one_query_per_chunk(operator_client, django_assert_max_num_queries):
    """The text column is computed from the row: no query per row."""
    for index in range(30):
        make_event(f"wf-{index}", "acquired", engine_id="e-1", epoch_after=1, at_ms=DEC_3_0930)
    with django_assert_max_num_queries(8):
        assert len(csv_rows(operator_client)) == 30


@pytest.mark.parametrize(
    "value",
    [
        "2026-12-03T09:30:00Z",
        "2026-12-03T09:30:00.000Z",
        "2026-12-03T09:30:00+00:00",
        "2026-12-03T09:30Z",
        "2026-12-03T09:30",  # what a browser's datetime-local field sends: read as UTC
    ],
)
def test_iso_utc_forms_are_accepted(value):
    assert parse_iso_utc(value) == DEC_3_0930
    assert iso_utc(DEC_3_0930) == "2026-12-03T09:30:00.000Z"


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("yesterday", "like 2026-12-03T09:30:00Z"),
        ("2026-12-03", "like 2026-12-03T09:30:00Z"),
        ("2026-12-03 09:30:00", "like 2026-12-03T09:30:00Z"),
        ("2026-12-03T09:30:00+02:00", "only UTC is accepted (Z or +00:00), not +02:00"),
        ("2026-02-30T09:30:00Z", "no such date and time"),
        ("1796290200000", "like 2026-12-03T09:30:00Z"),
    ],
)
def test_anything_else_is_a_400_that_says_what_is_accepted(operator_client, value, reason):
    from urllib.parse import quote

    response = operator_client.get(f"/audit/?since={quote(value)}")

    assert response.status_code == 400
    body = response.content.decode()
    assert "since must be a UTC date and time" in body
    assert reason.replace("+", "&#x2B;") in body or reason in body


def test_a_field_shows_back_the_instant_as_iso_utc(operator_client):
    """Whatever accepted form was sent, the field shows the canonical ISO UTC text."""
    html = operator_client.get("/audit/?since=2026-12-03T09:30&until=2026-12-04T00:00:00%2B00:00")
    text = html.content.decode()

    assert 'name="since" value="2026-12-03T09:30:00Z"' in text
    assert 'name="until" value="2026-12-04T00:00:00Z"' in text
    assert 'placeholder="2026-12-03T09:30:00Z"' in text
    assert 'type="datetime-local"' not in text  # a browser's field would drop the Z


def test_filtering_by_iso_utc_bounds(operator_client):
    make_event("wf-early", "acquired", engine_id="e-1", epoch_after=1, at_ms=DEC_3_0930 - 1)
    make_event("wf-late", "acquired", engine_id="e-1", epoch_after=1, at_ms=DEC_3_0930)

    rows = csv_rows(operator_client, "&since=2026-12-03T09:30:00Z")

    assert [row["workflow_id"] for row in rows] == ["wf-late"]
