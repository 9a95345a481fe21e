"""The claim control plane's tables (docs/design.md §2), one module per entity. Times are
integer milliseconds (``*_ms``).

Every model and enum is re-exported here: Django finds the app's models in
``claims.models``, and the code imports them from it.
"""

from .audit import AuditEntry, AuditSubject
from .backfills import ACTIVE_BACKFILL_STATUSES, BackfillJob, BackfillStatus
from .bulk import (
    FINISHED_BULK_STATUSES,
    RUNNABLE_BULK_STATUSES,
    BulkAction,
    BulkItemOutcome,
    BulkJob,
    BulkJobItem,
    BulkJobStatus,
    BulkList,
)
from .claims import (
    ClaimEvent,
    ClaimEventKind,
    OwnershipMode,
    OwnershipModeMarker,
    WorkflowClaim,
    WorkflowClaimQuerySet,
)
from .engines import (
    ClaimCounter,
    CounterName,
    Engine,
    EngineEvent,
    EngineEventKind,
    EngineStatus,
    FleetSnapshot,
    PendingRedrive,
    ReclaimCursor,
    RetiredPassHistograms,
)
from .errors import ClaimRowsAreKeptError, SessionRowsAreKeptError
from .fleet_counts import FleetCountDelta, FleetCountKind, FleetCounts
from .fleet_history import FleetSnapshotHistory
from .id_search import ClaimIdSearch
from .ids import ENGINE_ID_MAX_LENGTH, WORKFLOW_ID_MAX_LENGTH
from .ownerless import OwnerlessMark
from .saved_queries import SAVED_QUERY_NAME_MAX_LENGTH, SavedQuery
from .sessions import EngineSession
from .tokens import ApiToken, ApiTokenScope
from .workflows import (
    TERMINAL_STATUSES,
    StepLedger,
    VisibilityWatermark,
    Workflow,
    WorkflowStatus,
    WorkflowVisibility,
)

__all__ = [
    "ACTIVE_BACKFILL_STATUSES",
    "ENGINE_ID_MAX_LENGTH",
    "FINISHED_BULK_STATUSES",
    "RUNNABLE_BULK_STATUSES",
    "SAVED_QUERY_NAME_MAX_LENGTH",
    "TERMINAL_STATUSES",
    "WORKFLOW_ID_MAX_LENGTH",
    "ApiToken",
    "ApiTokenScope",
    "AuditEntry",
    "AuditSubject",
    "BackfillJob",
    "BackfillStatus",
    "BulkAction",
    "BulkItemOutcome",
    "BulkJob",
    "BulkJobItem",
    "BulkJobStatus",
    "BulkList",
    "ClaimCounter",
    "ClaimEvent",
    "ClaimEventKind",
    "ClaimIdSearch",
    "ClaimRowsAreKeptError",
    "CounterName",
    "Engine",
    "EngineEvent",
    "EngineEventKind",
    "EngineSession",
    "EngineStatus",
    "FleetCountDelta",
    "FleetCountKind",
    "FleetCounts",
    "FleetSnapshot",
    "FleetSnapshotHistory",
    "OwnerlessMark",
    "OwnershipMode",
    "OwnershipModeMarker",
    "PendingRedrive",
    "ReclaimCursor",
    "RetiredPassHistograms",
    "SavedQuery",
    "SessionRowsAreKeptError",
    "StepLedger",
    "VisibilityWatermark",
    "Workflow",
    "WorkflowClaim",
    "WorkflowClaimQuerySet",
    "WorkflowStatus",
    "WorkflowVisibility",
]
