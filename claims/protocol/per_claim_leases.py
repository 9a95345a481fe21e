"""The workflow-lease mode (weft's): each claim carries its own expiry, renewed on its own.

Renewal itself (one statement per claim, or set-based per pass, and what a statement in
doubt did) is ``renewal.ClaimRenewals``; this is the mode's answer to each question the
registry asks of its liveness strategy (``liveness.py``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Literal

from .fleet_share import FleetShare
from .held_claims import HeldClaims
from .liveness import RenewPassResult, SessionRenewal
from .metrics import ClaimMetrics
from .records import ClaimResult, ClaimRow, Holder
from .renewal import RENEW_CHUNK, ClaimRenewals
from .session_lease import EngineSessionLease
from .session_takeover import close_expired_sessions_for

logger = logging.getLogger("weftboard.claims")


class PerClaimLeases:
    """Liveness claim by claim: a holder carries its own expiry, and each claim's local
    deadline follows its own last renewal."""

    session: EngineSessionLease | None = None  # no session: nothing renews claims at once

    def __init__(self) -> None:
        self._renewals: ClaimRenewals | None = None

    def bind(self, held: HeldClaims) -> None:
        if self._renewals is not None:
            raise ValueError("a liveness strategy serves one registry")
        self._renewals = ClaimRenewals(held)

    @property
    def claims(self) -> HeldClaims:
        return self.renewals.claims

    @property
    def renewals(self) -> ClaimRenewals:
        assert self._renewals is not None, "bind() first"
        return self._renewals

    def start(self) -> None:
        """Nothing to open: each grant carries its own expiry."""

    def session_epoch(self) -> int | None:
        return None

    def names_current(self, holder: Holder) -> bool:
        """A claim of this engine carries its own expiry: one naming a session is an
        engine-lease grant, which nothing here would renew."""
        return holder.session_epoch is None

    def within_deadline(self, workflow_id: str) -> bool:
        """True while my last successful grant or renewal cannot yet have lapsed.

        Measured from before that statement was sent, so a stalled engine stops
        starting side effects before anyone could have taken the claim over.
        """
        claims = self.claims
        with claims._lock:
            deadline = claims._deadline_ms.get(workflow_id)
        return deadline is not None and claims._monotonic() < deadline

    def prepare_takeover(self, rows: Mapping[str, ClaimRow], now_ms: int) -> dict[str, ClaimRow]:
        """Close the expired sessions the rows name: an engine-lease engine that died
        before the fleet switched mode left them (docs/design.md §12, "Switching")."""
        return close_expired_sessions_for(self.claims, rows, now_ms)

    def give_up_all(self, release: Callable[[str], object]) -> None:
        """Best effort: one failure never keeps the others held."""
        for workflow_id in self.claims.held_workflow_ids():
            try:
                release(workflow_id)
            except Exception:
                logger.exception("could not release workflow %s at shutdown", workflow_id)

    def forget_moved_claims(self, share: FleetShare | None = None) -> int:
        """Nothing to read: the next renewal of a moved claim fails, and drops it."""
        return 0

    def renew(self, workflow_id: str) -> ClaimResult:
        return self.renewals.renew(workflow_id)

    def renew_all(self, *, chunk_size: int = RENEW_CHUNK) -> list[tuple[str, ClaimResult | None]]:
        return self.renewals.renew_all(chunk_size=chunk_size)

    def renew_session(self) -> SessionRenewal:
        """No session to renew: one is never open in this mode."""
        claims = self.claims
        with claims._lock:
            return SessionRenewal("not-open", None, len(claims._held))

    def renew_pass(self, metrics: ClaimMetrics | None) -> RenewPassResult:
        """Renew every held claim; ``lost`` and store errors both count as renewal failures."""
        outcomes: list[tuple[str, Literal["renewed", "failed"]]] = []
        for workflow_id, result in self.renew_all():
            if result is not None and result.status == "not-held":
                continue  # released while the pass ran: neither renewed nor a failure
            renewed = result is not None and result.status == "renewed"
            outcomes.append((workflow_id, "renewed" if renewed else "failed"))
            if not renewed and metrics is not None:
                metrics.record_renewal_failure()
        if metrics is not None:
            metrics.set_active_claims(len(self.claims.held_workflow_ids()))
        renewed_count = sum(status == "renewed" for _, status in outcomes)
        return RenewPassResult(outcomes, renewed_count, len(outcomes) - renewed_count)
