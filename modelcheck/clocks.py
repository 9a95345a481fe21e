"""The world's one clock, and each engine's view of it (its skew)."""

from __future__ import annotations

from claims.protocol.testing import FakeClock


class SkewedClock:
    """The world's time as one engine reads it: ahead of it or behind by ``skew_ms``.

    An object, not a closure, so that a copy of the world carries its own clock."""

    def __init__(self, world: FakeClock, skew_ms: int) -> None:
        self.world = world
        self.skew_ms = skew_ms

    def __call__(self) -> int:
        return self.world() + self.skew_ms
