"""The per-workflow claim protocol: pure Python, no Django, no Celery.

See README.md beside this file for the invariants every change must keep.
"""

from .constants import (
    AUTHORITATIVE_SCAN_LIMIT,
    DEFAULT_RENEW_INTERVAL_MS,
    DEFAULT_TTL_MS,
    GRACE_MULTIPLIER,
    OUTCOMES,
    OWNERSHIP_MODES,
    TAKEOVER_MAX_ATTEMPTS,
    TTL_SAFETY_MULTIPLIER,
)
from .errors import (
    ClaimConfigError,
    ClaimError,
    EngineDeposedError,
    InvalidTransitionError,
    InvalidWorkflowIdError,
    OwnershipMarkerUnreadableError,
    OwnershipModeMismatchError,
    StaleEpochError,
    WorkflowClaimUnavailableError,
    WorkflowNotFoundError,
)
from .gate import ensure_ownership_mode
from .ids import check_workflow_id
from .liveness import Liveness, RenewPassResult
from .metrics import ClaimMetrics, MetricsSnapshot, render_prometheus
from .offset_clock import Clock, OffsetClock, system_clock
from .passes import ReclaimPassResult, run_reclaim_pass, run_renew_pass
from .per_claim_leases import PerClaimLeases
from .reclaim import ReclaimTarget
from .records import ClaimEventRecord, ClaimResult, ClaimRow, Holder
from .registry import ClaimRegistry
from .session_leases import SessionLeases
from .store import ClaimStore
from .timing import ClaimTiming, is_claim_expired, parse_duration_ms
from .transitions import rotate_claim

__all__ = [
    "AUTHORITATIVE_SCAN_LIMIT",
    "DEFAULT_RENEW_INTERVAL_MS",
    "DEFAULT_TTL_MS",
    "GRACE_MULTIPLIER",
    "OUTCOMES",
    "OWNERSHIP_MODES",
    "TAKEOVER_MAX_ATTEMPTS",
    "TTL_SAFETY_MULTIPLIER",
    "ClaimConfigError",
    "ClaimError",
    "ClaimEventRecord",
    "ClaimMetrics",
    "ClaimRegistry",
    "ClaimResult",
    "ClaimRow",
    "ClaimStore",
    "ClaimTiming",
    "Clock",
    "EngineDeposedError",
    "Holder",
    "InvalidTransitionError",
    "InvalidWorkflowIdError",
    "Liveness",
    "MetricsSnapshot",
    "OffsetClock",
    "OwnershipMarkerUnreadableError",
    "OwnershipModeMismatchError",
    "PerClaimLeases",
    "ReclaimPassResult",
    "ReclaimTarget",
    "RenewPassResult",
    "SessionLeases",
    "StaleEpochError",
    "WorkflowClaimUnavailableError",
    "WorkflowNotFoundError",
    "check_workflow_id",
    "ensure_ownership_mode",
    "is_claim_expired",
    "parse_duration_ms",
    "render_prometheus",
    "rotate_claim",
    "run_reclaim_pass",
    "run_renew_pass",
    "system_clock",
]
