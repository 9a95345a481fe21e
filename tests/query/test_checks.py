"""A query that reads but means nothing is refused, naming the field and the value."""

from __future__ import annotations

import pytest

from claims.query import FIELDS, QueryError, parse

KNOWN = ", ".join(FIELDS)


@pytest.mark.parametrize(
    ("text", "position", "message"),
    [
        ("typ = 1", 0, f"unknown field 'typ' (known fields: {KNOWN}); did you mean type?"),
        ("colour = 1", 0, f"unknown field 'colour' (known fields: {KNOWN})"),
        ('epoch = 1 AND zzz IN ("a")', 14, f"unknown field 'zzz' (known fields: {KNOWN})"),
        ('epoch = "x"', 8, 'epoch takes a whole number, not "x"'),
        ("epoch = 9223372036854775808", 8, "epoch takes a number up to 9223372036854775807"),
        (
            'state = "bogus"',
            8,
            'state has no value "bogus"; it is one of live, in-grace, '
            "expired, invalid, ownerless, stranded, attention",
        ),
        ('state IN ("live", "gone")', 18, 'state has no value "gone"'),
        (
            'status = "runing"',
            9,
            'status has no value "runing"; it is one of pending, '
            "running, suspended, completed, failed, cancelled, timed_out",
        ),
        ("type = 5", 7, 'type takes quoted text like "x", not 5'),
        ("engine = now", 9, "engine is not a time; now applies to times"),
        ('state < "live"', 6, "state cannot be compared with <: it takes =, !=, IN and NOT IN"),
        ('type >= "a"', 5, "type cannot be compared with >="),
        ('id BETWEEN "a" AND "b"', 3, "id cannot be compared with BETWEEN"),
        ('epoch CONTAINS "1"', 6, "CONTAINS applies to id, type, engine, failure, not epoch"),
        (
            'state STARTS_WITH "li"',
            6,
            "STARTS_WITH applies to id, type, engine, failure, not state",
        ),
        ("type CONTAINS 5", 14, 'CONTAINS takes quoted text, as in type CONTAINS "x"'),
        ('expires > "yesterday"', 10, 'expires: "yesterday" is not a time'),
        ('expires > "2026-12-04"', 10, 'expires: "2026-12-04" is not a time'),
        ('expires > "2026-12-04T10:00:00+02:00"', 10, "a time is in UTC (Z or +00:00), not +02:00"),
        ('expires > "2026-02-30T10:00:00Z"', 10, "no such date and time"),
        ("expires > 1700000000000", 10, "expires takes a time like now - 10m"),
        ("expires > now - 3651d", 16, "a relative time reaches at most 3650d"),
        ('created BETWEEN now - 1h AND "x"', 29, 'created: "x" is not a time'),
    ],
)
def test_meaningless_query_is_refused(text, position, message):
    with pytest.raises(QueryError) as raised:
        parse(text)

    assert message in raised.value.message
    assert raised.value.position == position


def test_every_value_in_a_list_is_checked_against_its_field():
    with pytest.raises(QueryError) as raised:
        parse('epoch IN (1, 2, "three")')

    assert raised.value.message == 'epoch takes a whole number, not "three"'
    assert raised.value.position == 16
