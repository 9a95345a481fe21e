"""The ownership-mode gate: a fleet runs in one ownership mode for its whole life."""

from __future__ import annotations

from .constants import OWNERSHIP_MODES
from .errors import OwnershipMarkerUnreadableError, OwnershipModeMismatchError
from .offset_clock import Clock
from .store import ClaimStore


def ensure_ownership_mode(store: ClaimStore, mode: str, clock: Clock) -> tuple[str, int | None]:
    """Establish ``mode`` if no engine has yet, else insist it matches.

    Runs before any claim work. An unreadable marker stops the boot; it is
    never overwritten, since guessing could split the fleet across two modes.
    """
    if mode not in OWNERSHIP_MODES:
        raise ValueError(f"ownership mode must be one of {OWNERSHIP_MODES}; got {mode!r}")
    marker = store.read_ownership_mode()
    if marker is None:
        store.insert_ownership_mode(mode, clock())
        marker = store.read_ownership_mode()
        if marker is None:
            raise OwnershipMarkerUnreadableError("ownership-mode marker vanished after insert")
    stored_mode, established_at_ms = marker
    if stored_mode not in OWNERSHIP_MODES:
        raise OwnershipMarkerUnreadableError(
            f"ownership-mode marker holds unknown mode {stored_mode!r}; fix it by hand"
        )
    if stored_mode != mode:
        raise OwnershipModeMismatchError(mode, stored_mode, established_at_ms)
    return stored_mode, established_at_ms
