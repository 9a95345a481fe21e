"""The reference meaning: which rows a query selects."""

from __future__ import annotations

import pytest

from claims.query import matches, parse

NOW = 1_796_378_400_000  # 2026-12-04T10:00:00Z
MINUTE = 60_000

HELD = {
    "id": "wf-1",
    "type": "order",
    "status": "running",
    "state": {"expired", "stranded"},
    "engine_id": "e-7f3a",
    "engine_name": "engine3@host-a",
    "epoch": 12,
    "expires": NOW - 5 * MINUTE,
    "claimed": NOW - 20 * MINUTE,
    "created": NOW - 60 * MINUTE,
    "updated": NOW - MINUTE,
    "failure": None,
}
# No holder, no failure, no times but created and updated.
OWNERLESS = {
    "id": "wf-2",
    "type": "invoice",
    "status": "completed",
    "state": {"ownerless"},
    "engine_id": None,
    "engine_name": None,
    "epoch": 3,
    "created": NOW - 90 * MINUTE,
    "updated": NOW - 30 * MINUTE,
    "failure": "TimeoutError",
}


@pytest.mark.parametrize(
    ("text", "held", "ownerless"),
    [
        (
            'type = "order" AND engine = "engine3@host-a" AND state = "expired" '
            "AND expires > now - 10m",
            True,
            False,
        ),
        ('id = "wf-1"', True, False),
        ('type != "order"', False, True),
        ('status IN ("running", "suspended")', True, False),
        ('status NOT IN ("running")', False, True),
        ("epoch > 3", True, False),
        ("epoch >= 3", True, True),
        ("epoch < 12", False, True),
        ("epoch <= 12", True, True),
        ("epoch BETWEEN 3 AND 12", True, True),
        ("epoch BETWEEN 4 AND 11", False, False),
        ("epoch IN (3, 12)", True, True),
        # Times: relative to now, or absolute.
        ("expires < now", True, False),
        ("expires > now - 5m", False, False),
        ("expires >= now - 5m", True, False),
        ('created < "2026-12-04T09:00:00Z"', False, True),
        ('created = "2026-12-04T09:00:00Z"', True, False),
        ("updated BETWEEN now - 30m AND now - 1m", True, True),
        ("claimed > now - 1d", True, False),
        # The state is a set: a stranded claim is also expired.
        ('state = "stranded"', True, False),
        ('state = "expired" AND state = "stranded"', True, False),
        ('state != "expired"', False, True),
        ('state IN ("live", "stranded")', True, False),
        ('state NOT IN ("live", "stranded")', False, True),
        # The engine is its id or its worker name.
        ('engine = "e-7f3a"', True, False),
        ('engine != "e-7f3a"', False, False),
        ('engine != "engine3@host-a"', False, False),
        ('engine != "other"', True, False),
        ('engine IN ("x", "engine3@host-a")', True, False),
        ('engine NOT IN ("x", "y")', True, False),
        ('engine STARTS_WITH "engine3@"', True, False),
        ('engine CONTAINS "7f3"', True, False),
        # Text matching is case-sensitive.
        ('id STARTS_WITH "wf-"', True, True),
        ('id STARTS_WITH "WF-"', False, False),
        ('failure CONTAINS "Timeout"', False, True),
        ('failure CONTAINS "timeout"', False, False),
        ('type CONTAINS ""', True, True),
        # Boolean structure.
        ('type = "order" OR type = "invoice"', True, True),
        ('NOT type = "order"', False, True),
        ('(type = "order" OR epoch = 3) AND NOT status = "running"', False, True),
    ],
)
def test_rows_selected(text, held, ownerless):
    query = parse(text)

    assert matches(query, HELD, NOW) is held
    assert matches(query, OWNERLESS, NOW) is ownerless


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # Every term on a value the row lacks is false, whatever its operator...
        ('engine = "x"', False),
        ('engine != "x"', False),
        ('engine NOT IN ("x")', False),
        ('engine CONTAINS ""', False),
        ("expires < now", False),
        ("expires != now", False),
        ("expires NOT IN (now)", False),
        ("expires BETWEEN now - 1d AND now + 1d", False),
        ('failure != "X"', False),
        # ...and NOT is plain negation, so it holds for such a row.
        ('NOT engine = "x"', True),
        ('NOT engine != "x"', True),
        ("NOT expires < now", True),
        ('NOT failure = "X"', True),
    ],
)
def test_a_term_on_an_absent_value_is_false_and_not_negates_it(text, expected):
    assert matches(parse(text), {"id": "wf-3", "state": {"ownerless"}}, NOW) is expected


def test_relative_times_are_counted_from_the_now_given():
    query = parse("expires > now - 10m")
    row = {"expires": NOW - 9 * MINUTE}

    assert matches(query, row, NOW)
    assert not matches(query, row, NOW + 2 * MINUTE)


def test_an_engine_without_a_worker_name_is_matched_by_its_id_alone():
    row = {"engine_id": "e-1", "engine_name": ""}

    assert matches(parse('engine = "e-1"'), row, NOW)
    assert matches(parse('engine != ""'), row, NOW)
    assert not matches(parse('engine = ""'), row, NOW)


def test_a_worker_name_without_an_engine_id_is_no_engine():
    row = {"engine_id": None, "engine_name": "engine3@host-a"}

    assert not matches(parse('engine = "engine3@host-a"'), row, NOW)


def test_a_row_without_a_state_set_is_in_no_state():
    assert not matches(parse('state = "live"'), {"state": None}, NOW)
    assert not matches(parse('state != "live"'), {}, NOW)
