"""What a read of the row says about claim statements whose answer was lost."""

from __future__ import annotations

from claims.protocol import ClaimRow, Holder
from claims.protocol.doubts import MAX_DOUBTS_PER_ID, Doubt, Doubts

MINE = Holder("a", 3, 40_000, 1_000)


def test_a_row_holding_what_a_doubted_statement_meant_to_write_says_it_was_written():
    doubts = Doubts()
    doubts.add("wf", Doubt(3, MINE, sent_monotonic_ms=500))

    verdict, doubt = doubts.judge("wf", ClaimRow("wf", 3, MINE))

    assert (verdict, doubt) == ("written", Doubt(3, MINE, 500))


def test_a_row_without_a_holder_at_the_released_epoch_says_the_release_landed():
    doubts = Doubts()
    doubts.add("wf", Doubt(3, None, sent_monotonic_ms=500))

    assert doubts.judge("wf", ClaimRow("wf", 3, None))[0] == "released"
    assert doubts.judge("wf", ClaimRow("wf", 4, None))[0] == "not-written"


def test_any_other_row_says_nothing_was_written():
    doubts = Doubts()
    doubts.add("wf", Doubt(3, MINE, sent_monotonic_ms=500))
    someone_else = Holder("b", 4, 50_000, 20_000)

    assert doubts.judge("wf", ClaimRow("wf", 4, someone_else))[0] == "not-written"
    assert doubts.judge("wf", ClaimRow("wf", 3, Holder("a", 3, 35_000, 1_000)))[0] == (
        "not-written"
    )
    assert doubts.judge("wf", None)[0] == "not-written"


def test_the_latest_of_several_doubted_statements_matching_wins_and_few_are_kept():
    doubts = Doubts()
    for n in range(MAX_DOUBTS_PER_ID + 3):
        doubts.add("wf", Doubt(3, Holder("a", 3, 40_000 + n, 1_000), sent_monotonic_ms=n))

    assert doubts.judge("wf", ClaimRow("wf", 3, Holder("a", 3, 40_000, 1_000)))[0] == (
        "not-written"  # the oldest was dropped
    )
    last = Holder("a", 3, 40_000 + MAX_DOUBTS_PER_ID + 2, 1_000)
    assert doubts.judge("wf", ClaimRow("wf", 3, last))[0] == "written"


def test_doubts_sent_long_ago_are_forgotten():
    doubts = Doubts()
    doubts.add("old", Doubt(1, MINE, sent_monotonic_ms=100))
    doubts.add("new", Doubt(1, MINE, sent_monotonic_ms=10_000))

    assert doubts.ids(sent_after_ms=5_000) == ["new"]
    assert not doubts.has("old")
