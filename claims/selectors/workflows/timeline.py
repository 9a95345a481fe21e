"""The epoch timeline of one workflow: who held which epoch when, from its ClaimEvents.

Pure: it takes event rows and returns lanes with positions in percent of the time
axis, so the template only places boxes. One lane per engine, plus one for
transitions with no engine (external rotations and forced releases).
"""

from __future__ import annotations

import bisect
import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

EXTERNAL_LANE = "external / operator"
# Events that start a holding period for their engine at epoch_after.
GRANTS = frozenset({"acquired", "takeover", "forced_takeover"})
# Events that move the epoch without granting it to an engine.
ROTATIONS = frozenset({"rotated", "forced_release"})


@dataclass
class Segment:
    epoch: int
    start_ms: int
    end_ms: int | None = None
    # After the epoch moved away, the old holder may still run until it notices
    # (its next renew or fenced write is refused and it logs "deposed").
    at_risk_until_ms: int | None = None
    left: float = 0.0
    width: float = 0.0
    risk_left: float = 0.0
    risk_width: float = 0.0
    open: bool = False


@dataclass
class Mark:
    kind: str
    at_ms: int
    epoch_before: int | None
    epoch_after: int | None
    actor: str | None
    reason: str
    left: float = 0.0

    @property
    def label(self) -> str:
        if self.epoch_after is not None and self.epoch_after != self.epoch_before:
            return f"{self.epoch_before or 0}→{self.epoch_after}"
        return str(self.epoch_after if self.epoch_after is not None else self.epoch_before)


@dataclass
class Lane:
    name: str
    is_engine: bool
    segments: list[Segment] = field(default_factory=list)
    marks: list[Mark] = field(default_factory=list)


@dataclass
class Timeline:
    start_ms: int
    end_ms: int
    lanes: list[Lane]
    ticks: list[tuple[float, int]]  # (left %, at_ms)
    gaps: list[tuple[float, int]]  # (left % of the middle of a long quiet gap, its length in ms)


MARGIN_PCT = 2.5
# The longest quiet gaps (at most GAP_LABELS) that take this share of the width and last
# this long get a label with their real length.
GAP_LABEL_SHARE = 0.10
GAP_LABEL_MIN_MS = 10_000
GAP_LABELS = 3


class _Axis:
    """Time to percent on a compressed scale: each gap between consecutive event times
    gets width log(1 + seconds), so an hour of quiet does not crush the seconds of
    a takeover into one pixel. Order is exact; long gaps are labelled with their length."""

    def __init__(self, times: list[int]) -> None:
        self.times = times
        self.weights = [math.log1p((b - a) / 1000) + 0.2 for a, b in itertools.pairwise(times)]
        self.total = sum(self.weights) or 1.0
        self.offsets = [0.0]
        for weight in self.weights:
            self.offsets.append(self.offsets[-1] + weight)

    def pct(self, at_ms: int) -> float:
        i = bisect.bisect_right(self.times, at_ms) - 1
        i = max(0, min(i, len(self.times) - 1))
        position = self.offsets[i]
        if i < len(self.weights):
            a, b = self.times[i], self.times[i + 1]
            position += self.weights[i] * (at_ms - a) / max(1, b - a)
        usable = 100 - 2 * MARGIN_PCT
        return round(MARGIN_PCT + usable * position / self.total, 3)

    def _labelled(self) -> list[int]:
        """The longest quiet gaps with room for a label: the reader's anchors for real time
        on an axis that is not linear."""
        wide = [
            i
            for i, weight in enumerate(self.weights)
            if weight / self.total >= GAP_LABEL_SHARE
            and self.times[i + 1] - self.times[i] >= GAP_LABEL_MIN_MS
        ]
        longest = sorted(wide, key=lambda i: self.times[i + 1] - self.times[i], reverse=True)
        return sorted(longest[:GAP_LABELS])

    def ticks(self) -> list[tuple[float, int]]:
        """The first and last times, plus each side of a labelled gap."""
        marks = {self.times[0], self.times[-1]}
        for i in self._labelled():
            marks.update((self.times[i], self.times[i + 1]))
        chosen: list[tuple[float, int]] = []
        for at in sorted(marks):
            left = self.pct(at)
            if not chosen or left - chosen[-1][0] >= 9:
                chosen.append((left, at))
        return chosen

    def gaps(self) -> list[tuple[float, int]]:
        return [
            (
                round((self.pct(self.times[i]) + self.pct(self.times[i + 1])) / 2, 3),
                self.times[i + 1] - self.times[i],
            )
            for i in self._labelled()
        ]


def _lane(lanes: dict[str, Lane], name: str, *, is_engine: bool) -> Lane:
    if name not in lanes:
        lanes[name] = Lane(name, is_engine)
    return lanes[name]


@dataclass
class _Holding:
    """The segment an engine holds now, and the segments another engine's grant closed
    (keyed by engine and epoch, so a later "deposed" can mark the time they ran at risk)."""

    segment: Segment | None = None
    engine: str | None = None
    superseded: dict[tuple[str, int], Segment] = field(default_factory=dict)

    def grant(self, lane: Lane, engine: str, epoch: int, at_ms: int) -> None:
        self.segment, self.engine = Segment(epoch, at_ms), engine
        lane.segments.append(self.segment)

    def close(self, at_ms: int, *, by_other: bool) -> None:
        if self.segment is not None and self.engine is not None:
            self.segment.end_ms = at_ms
            if by_other:
                self.superseded[(self.engine, self.segment.epoch)] = self.segment
        self.segment, self.engine = None, None


def _mark(event: dict[str, Any]) -> Mark:
    return Mark(
        event["kind"],
        event["at_ms"],
        event["epoch_before"],
        event["epoch_after"],
        event["actor"],
        event["reason"] or "",
    )


def _apply(event: dict[str, Any], lane: Lane, holding: _Holding) -> None:
    """Move the holding along one event: grants open a segment, rotations and releases
    close it, and a deposed engine's late notice extends its old segment's risk."""
    kind, engine, at = event["kind"], event["engine_id"], event["at_ms"]
    epoch_after = event["epoch_after"]
    if kind in GRANTS and engine and epoch_after is not None:
        holding.close(at, by_other=holding.engine != engine)
        holding.grant(lane, engine, epoch_after, at)
    elif kind == "adopted" and engine and holding.segment is None and epoch_after is not None:
        holding.grant(lane, engine, epoch_after, at)
    elif kind in ROTATIONS:
        holding.close(at, by_other=True)
    elif kind == "released" and holding.segment is not None and holding.engine == engine:
        holding.close(at, by_other=False)
    elif kind == "deposed" and engine:
        stale = holding.superseded.get((engine, event["epoch_before"] or 0))
        if stale is not None and stale.end_ms is not None and at > stale.end_ms:
            stale.at_risk_until_ms = at


def _place(lanes: list[Lane], pct: Callable[[int], float]) -> None:
    """Give every segment, risk tail and mark its position in percent of the axis."""
    for lane in lanes:
        for segment in lane.segments:
            segment.left = pct(segment.start_ms)
            finish = segment.end_ms if segment.end_ms is not None else segment.start_ms
            segment.width = max(0.4, round(pct(finish) - segment.left, 3))
            if segment.at_risk_until_ms is not None:
                segment.risk_left = pct(finish)
                segment.risk_width = round(pct(segment.at_risk_until_ms) - pct(finish), 3)
        for mark in lane.marks:
            mark.left = pct(mark.at_ms)


def epoch_timeline(
    events: list[dict[str, Any]], *, now_ms: int, holder_engine_id: str | None, epoch: int | None
) -> Timeline | None:
    """Lanes from events in id order; the current holder's segment stays open until now."""
    if not events:
        return None
    lanes: dict[str, Lane] = {}
    holding = _Holding()
    for event in events:
        engine = event["engine_id"]
        lane = _lane(lanes, engine or EXTERNAL_LANE, is_engine=bool(engine))
        lane.marks.append(_mark(event))
        _apply(event, lane, holding)

    held = holding.segment
    if held is not None:
        still_held = holding.engine == holder_engine_id and held.epoch == epoch
        held.end_ms = now_ms if still_held else max(held.start_ms, events[-1]["at_ms"])
        held.open = still_held

    axis = _Axis(sorted({e["at_ms"] for e in events} | {max(now_ms, events[-1]["at_ms"])}))
    _place(list(lanes.values()), axis.pct)
    ordered = sorted(lanes.values(), key=lambda lane: (not lane.is_engine,))
    return Timeline(axis.times[0], axis.times[-1], ordered, axis.ticks(), axis.gaps())
