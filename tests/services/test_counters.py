"""Engine counters reach the database exactly, whatever happens to a flush."""

from __future__ import annotations

import pytest
from django.db import OperationalError, connection

from claims.models import ClaimCounter
from claims.services.engines import counters_record

pytestmark = pytest.mark.django_db

TOTALS = {"acquired": 12, "takeover": 3, "lost_race": 0, "renewal_failures": 2}


def stored(engine_id: str = "e1") -> dict[str, int]:
    return dict(ClaimCounter.objects.filter(engine_id=engine_id).values_list("name", "value"))


def answer_lost(execute, sql, params, many, context):
    """The statement runs and commits; the reply never reaches the engine."""
    execute(sql, params, many, context)
    raise OperationalError("server closed the connection unexpectedly")


def connection_broken(execute, sql, params, many, context):
    raise OperationalError("server closed the connection unexpectedly")


def test_totals_are_written_in_one_statement(django_assert_num_queries):
    with django_assert_num_queries(1):
        counters_record(engine_id="e1", totals=TOTALS)

    assert stored() == {"acquired": 12, "takeover": 3, "renewal_failures": 2}


def test_a_flush_whose_answer_was_lost_and_is_sent_again_counts_once():
    counters_record(engine_id="e1", totals={"acquired": 5})
    with connection.execute_wrapper(answer_lost), pytest.raises(OperationalError):
        counters_record(engine_id="e1", totals=TOTALS)

    counters_record(engine_id="e1", totals=TOTALS)  # the next flush, with the same totals

    assert stored() == {"acquired": 12, "takeover": 3, "renewal_failures": 2}


def test_a_flush_broken_before_it_reached_the_database_is_made_up_by_the_next():
    counters_record(engine_id="e1", totals={"acquired": 5, "takeover": 1})
    with connection.execute_wrapper(connection_broken), pytest.raises(OperationalError):
        counters_record(engine_id="e1", totals=TOTALS)
    assert stored() == {"acquired": 5, "takeover": 1}

    counters_record(engine_id="e1", totals={**TOTALS, "acquired": 13})

    assert stored() == {"acquired": 13, "takeover": 3, "renewal_failures": 2}


def test_a_late_smaller_total_never_lowers_a_counter():
    counters_record(engine_id="e1", totals={"acquired": 9})
    counters_record(engine_id="e1", totals={"acquired": 4})

    assert stored() == {"acquired": 9}


def test_engines_keep_counters_of_their_own():
    counters_record(engine_id="e1", totals={"acquired": 2})
    counters_record(engine_id="e2", totals={"acquired": 5})

    assert (stored("e1"), stored("e2")) == ({"acquired": 2}, {"acquired": 5})
