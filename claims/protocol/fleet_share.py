"""What beat read once for the whole fleet, handed to each engine with its tick
(docs/design.md §4, "Beat reads for the fleet").

Every engine's reclaim and wake passes used to begin with the same few short reads: is
anything stale, which marks name a running workflow, the scan's page, the claims others
moved, this engine's recent grants, its workflows now due. With nothing stranded each read
finds nothing, and fifty engines sending them every interval cost ten times what five do.
Beat now sends each engine its share of one read of each for the fleet, and an engine with
nothing to take, forget or wake sends no statement at all.

A share never widens what an engine may do: each part stands in for one of the engine's own
reads only when it covers what that read would have covered, and any part that does not (a
share too old, a list past its bound, a window that starts after the engine's last look) is
read by the engine itself, as it is when no share comes (beat down, the engine ticking
itself, a tick from an older beat). Every grant still judges the row it changes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

# The most ids a share carries in one list: past it, the list is left out and each engine
# reads for itself. A tick is one broker message per engine; 1,000 ids keep it under 50 kB.
SHARE_LIMIT = 1_000


@dataclass(frozen=True)
class FleetShare:
    """One engine's share of beat's reads at ``read_at_ms`` (the database's clock, read with
    them: whichever process runs the fan-out, its own clock does not move them). ``None``
    in a field: not read for it."""

    read_at_ms: int
    # No holder was stale when beat read, and none can become stale before this time (the
    # earliest claim or open session expiry, plus the grace): a stale-holder read before it
    # finds nothing that is not a session closed since, which the next share shows.
    quiet_until_ms: int | None = None
    # The running workflows the ownerless marks name with no holder (discovery's second
    # source), and the candidates of the scan page beat read for the fleet (the third).
    unheld: tuple[str, ...] | None = None
    scanned: tuple[str, ...] | None = None
    # The claim moves (takeover, forced release or takeover, rotation) from this engine, and
    # those naming no engine before, whose event time is at or after ``moves_since_ms``:
    # (workflow id, epoch after).
    moves_since_ms: int | None = None
    moves: tuple[tuple[str, int], ...] | None = None
    # The claims naming this engine granted at or after ``grants_since_ms`` (the audit).
    grants_since_ms: int | None = None
    grants: tuple[str, ...] | None = None
    # This engine's running workflows whose next drive was due when beat read.
    due: tuple[str, ...] | None = None

    def quiet_at(self, now_ms: int) -> bool:
        """Whether a stale-holder read at ``now_ms`` would find nothing beat did not see."""
        return self.quiet_until_ms is not None and self.read_at_ms <= now_ms < self.quiet_until_ms

    def moves_cover(self, since_ms: int) -> tuple[tuple[str, int], ...] | None:
        """The moves, if they reach back to ``since_ms`` (the engine's own read's start)."""
        if self.moves is None or self.moves_since_ms is None or self.moves_since_ms > since_ms:
            return None
        return self.moves

    def grants_cover(self, since_ms: int) -> tuple[str, ...] | None:
        """This engine's grants, if they reach back to ``since_ms``."""
        if self.grants is None or self.grants_since_ms is None or self.grants_since_ms > since_ms:
            return None
        return self.grants

    def page_only(self) -> FleetShare:
        """This share's scan page alone: every other read is the engine's own again."""
        return FleetShare(read_at_ms=self.read_at_ms, scanned=self.scanned)

    def with_earlier_page(self, earlier: FleetShare) -> FleetShare:
        """This share, carrying also the page of an earlier one no pass took (beat moved
        the cursor past it)."""
        if not earlier.scanned:
            return self
        merged = tuple(dict.fromkeys([*(earlier.scanned or ()), *(self.scanned or ())]))
        return replace(self, scanned=merged)

    def as_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"read_at_ms": self.read_at_ms}
        for name in ("quiet_until_ms", "moves_since_ms", "grants_since_ms"):
            if getattr(self, name) is not None:
                data[name] = getattr(self, name)
        for name in ("unheld", "scanned", "grants", "due"):
            if getattr(self, name) is not None:
                data[name] = list(getattr(self, name))
        if self.moves is not None:
            data["moves"] = [[workflow_id, epoch] for workflow_id, epoch in self.moves]
        return data

    @classmethod
    def from_json(cls, data: object) -> FleetShare | None:
        """The share a tick carried, or None for anything not shaped as ``as_json`` makes it
        (the engine then reads everything for itself)."""
        if not isinstance(data, dict) or not _is_int(data.get("read_at_ms")):
            return None
        fields: dict[str, Any] = {"read_at_ms": data["read_at_ms"]}
        for name in ("quiet_until_ms", "moves_since_ms", "grants_since_ms"):
            value = data.get(name)
            if value is not None and not _is_int(value):
                return None
            fields[name] = value
        for name in ("unheld", "scanned", "grants", "due"):
            ids = data.get(name)
            if ids is not None:
                if not _are_ids(ids):
                    return None
                fields[name] = tuple(ids)
        moves = data.get("moves")
        if moves is not None:
            if not isinstance(moves, list) or len(moves) > SHARE_LIMIT:
                return None
            pairs = []
            for move in moves:
                if not (
                    isinstance(move, list)
                    and len(move) == 2
                    and isinstance(move[0], str)
                    and _is_int(move[1])
                ):
                    return None
                pairs.append((move[0], move[1]))
            fields["moves"] = tuple(pairs)
        if (fields.get("moves") is None) != (fields.get("moves_since_ms") is None):
            return None
        if (fields.get("grants") is None) != (fields.get("grants_since_ms") is None):
            return None
        return cls(**fields)


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _are_ids(ids: object) -> bool:
    return (
        isinstance(ids, list)
        and len(ids) <= SHARE_LIMIT
        and all(isinstance(workflow_id, str) for workflow_id in ids)
    )


def ids_within_limit(ids: Sequence[str]) -> tuple[str, ...] | None:
    """``ids`` as a share carries them, or None when there are more than SHARE_LIMIT."""
    return tuple(ids) if len(ids) <= SHARE_LIMIT else None
