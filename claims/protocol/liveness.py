"""How one engine keeps its claims alive: the one thing the ownership modes differ in.

A registry composes exactly one liveness strategy, chosen where the engine is built
(``claims/engine/local.py``, from ``WEFT_OWNERSHIP_MODE``) and never asked about again:

- ``PerClaimLeases`` (``workflow-lease``, weft's mode): each claim carries its own expiry
  and is renewed on its own, set-based per pass.
- ``SessionLeases`` (``engine-lease``): each claim names the engine's session and lives
  while it does; the pass renews the session alone (docs/design.md §12).

The strategy alone mints the holder a grant writes (``session_epoch``: the one holder
rule, ``decisions.new_holder``, then gives it an expiry or a session), renews, judges the
local deadline and whether a cached holder is still this engine's, prepares a takeover
and gives every claim up at shutdown. Grants, adoption, release and fenced writes are
the registry's, the same in every mode. A third mode (weft's global ``lease``) is one
more class with these members (docs/design.md §12, "A third mode").
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Literal, Protocol

from .fleet_share import FleetShare
from .held_claims import HeldClaims
from .metrics import ClaimMetrics
from .records import ClaimResult, ClaimRow, Holder
from .session_lease import EngineSessionLease


@dataclass(frozen=True)
class RenewPassResult:
    """One renew pass: per claim in the workflow-lease mode, counts only under a session
    (nothing in it grows with the claims held)."""

    outcomes: list[tuple[str, Literal["renewed", "failed"]]] = field(default_factory=list)
    renewed_count: int = 0
    failed_count: int = 0


@dataclass(frozen=True, slots=True)
class SessionRenewal:
    """What one renewal of the engine's session did, how many claims are held after it, and
    how many a lost session took with it (``not-open``: no session is open, and in the
    workflow-lease mode none ever is)."""

    status: Literal["renewed", "lost", "failed", "not-open"]
    epoch: int | None
    held: int
    lost: int = 0


class Liveness(Protocol):
    """What a registry asks of its ownership mode; every member answers for that mode."""

    @property
    def session(self) -> EngineSessionLease | None:
        """The engine's session lease, for reading (pages, tests); None without one."""
        ...

    def bind(self, held: HeldClaims) -> None:
        """Serve this registry's cache, once: a strategy belongs to one registry."""
        ...

    def start(self) -> None:
        """At boot, before any grant: open what the mode renews, if it can."""
        ...

    def session_epoch(self) -> int | None:
        """The session a grant names now (None: the claim carries its own expiry),
        opening one first if the mode needs one and none is open."""
        ...

    def names_current(self, holder: Holder) -> bool:
        """Whether this engine may keep and drive a claim with this holder now."""
        ...

    def within_deadline(self, workflow_id: str) -> bool:
        """True while the claim's last known renewal cannot yet have lapsed."""
        ...

    def renew(self, workflow_id: str) -> ClaimResult: ...

    def renew_all(self, *, chunk_size: int) -> list[tuple[str, ClaimResult | None]]: ...

    def renew_session(self) -> SessionRenewal: ...

    def renew_pass(self, metrics: ClaimMetrics | None) -> RenewPassResult:
        """The renew pass: every held claim kept alive, failures counted per workflow."""
        ...

    def forget_moved_claims(self, share: FleetShare | None = None) -> int:
        """Drop the cached claims others moved that no renewal will find; how many. Beat's
        ``share`` of the fleet's moves stands in for the read when it reaches back far
        enough."""
        ...

    def prepare_takeover(self, rows: Mapping[str, ClaimRow], now_ms: int) -> dict[str, ClaimRow]:
        """Before a takeover judges ``rows``: end what must end first (an expired
        session), and return the rows as they now stand."""
        ...

    def give_up_all(self, release: Callable[[str], object]) -> None:
        """At shutdown: give every held claim up (``release`` gives up one)."""
        ...
