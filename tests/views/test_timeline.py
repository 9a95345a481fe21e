"""The epoch timeline: lanes per engine, holding segments per epoch, marks per event."""

from __future__ import annotations

from claims.selectors.workflows.timeline import EXTERNAL_LANE, epoch_timeline

T0 = 1_700_000_000_000


def event(kind, at, engine=None, before=None, after=None, actor=None, reason=""):
    return {
        "kind": kind,
        "at_ms": T0 + at,
        "engine_id": engine,
        "epoch_before": before,
        "epoch_after": after,
        "actor": actor,
        "reason": reason,
    }


def drawn(events, **kwargs):
    """The timeline, asserted to exist (events were given)."""
    timeline = epoch_timeline(events, **kwargs)
    assert timeline is not None
    return timeline


def lanes(timeline):
    return {lane.name: lane for lane in timeline.lanes}


def test_no_events_is_no_timeline():
    """Nothing to draw without events."""
    assert epoch_timeline([], now_ms=T0, holder_engine_id=None, epoch=None) is None


def test_takeover_ends_the_old_holders_segment_and_starts_the_new_one():
    """A takeover closes the previous epoch's segment at the takeover time; the new holder's
    segment stays open until now while it still holds the claim."""
    timeline = drawn(
        [
            event("acquired", 0, "e-a", None, 1),
            event("takeover", 60_000, "e-b", 1, 2),
        ],
        now_ms=T0 + 90_000,
        holder_engine_id="e-b",
        epoch=2,
    )

    a, b = lanes(timeline)["e-a"], lanes(timeline)["e-b"]
    assert [(s.epoch, s.start_ms - T0, s.end_ms - T0, s.open) for s in a.segments] == [
        (1, 0, 60_000, False)
    ]
    assert [(s.epoch, s.start_ms - T0, s.end_ms - T0, s.open) for s in b.segments] == [
        (2, 60_000, 90_000, True)
    ]
    assert [m.label for m in b.marks] == ["1→2"]


def test_late_deposed_notice_marks_the_window_the_old_holder_may_still_run():
    """After its epoch moved, an engine may run until it notices; the timeline shows that
    window from the epoch move to the deposed event."""
    timeline = drawn(
        [
            event("acquired", 0, "e-a", None, 1),
            event("forced_takeover", 10_000, "e-b", 1, 2, actor="alice"),
            event("deposed", 14_000, "e-a", 1, None),
        ],
        now_ms=T0 + 20_000,
        holder_engine_id="e-b",
        epoch=2,
    )

    (segment,) = lanes(timeline)["e-a"].segments
    assert segment.end_ms == T0 + 10_000
    assert segment.at_risk_until_ms == T0 + 14_000
    assert segment.risk_width > 0


def test_rotations_without_an_engine_go_to_the_external_lane():
    """Cancel rotations and forced releases have no engine: they land in their own lane and
    close the holder's segment."""
    timeline = drawn(
        [
            event("acquired", 0, "e-a", None, 1),
            event("forced_release", 5_000, None, 1, 2, actor="alice", reason="stuck"),
        ],
        now_ms=T0 + 6_000,
        holder_engine_id=None,
        epoch=2,
    )

    by_name = lanes(timeline)
    assert by_name["e-a"].segments[0].end_ms == T0 + 5_000
    (mark,) = by_name[EXTERNAL_LANE].marks
    assert (mark.kind, mark.actor, mark.reason, mark.label) == (
        "forced_release",
        "alice",
        "stuck",
        "1→2",
    )
    assert [lane.name for lane in timeline.lanes][-1] == EXTERNAL_LANE


def test_release_closes_the_segment_and_positions_stay_in_order_within_the_track():
    """Positions are percentages in event order, inside the track's margins."""
    timeline = drawn(
        [
            event("acquired", 0, "e-a", None, 1),
            event("released", 3_600_000, "e-a", 1, 1),
            event("acquired", 3_601_000, "e-b", 1, 2),
        ],
        now_ms=T0 + 3_602_000,
        holder_engine_id="e-b",
        epoch=2,
    )

    marks = sorted((m for lane in timeline.lanes for m in lane.marks), key=lambda m: m.at_ms)
    lefts = [m.left for m in marks]
    assert lefts == sorted(lefts)
    assert 0 < lefts[0] < lefts[-1] < 100
    # The hour of quiet is compressed: the two acquisitions a second apart stay visible.
    assert lefts[2] - lefts[1] > 3
    assert timeline.gaps
    assert timeline.gaps[0][1] == 3_600_000


def test_a_holder_that_lost_its_claim_silently_is_not_drawn_as_holding_now():
    """If the claim row no longer names the last grantee, its segment is not left open."""
    timeline = drawn(
        [event("acquired", 0, "e-a", None, 1)],
        now_ms=T0 + 50_000,
        holder_engine_id=None,
        epoch=2,
    )

    (segment,) = lanes(timeline)["e-a"].segments
    assert not segment.open
