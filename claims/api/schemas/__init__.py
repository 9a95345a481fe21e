"""Request (``...In``) and response (``...Out``) schemas of the API, by sub-domain."""

from .backfills import BackfillIn, BackfillOut
from .claims import (
    ClaimFilterIn,
    ClaimOut,
    ClaimPageOut,
    ClaimStateOut,
    ExpiryOut,
    ForcedActionOut,
    ReleaseIn,
    StaleEpochOut,
    TakeoverIn,
)
from .common import READ_ERRORS, WRITE_ERRORS, ErrorOut, ValidationErrorOut, utc
from .engines import EngineListOut, EngineOut
from .reclaim import ReclaimCursorOut, RedriveFilterIn, RedriveOut, RedrivePageOut
from .workflows import (
    EventOut,
    OwnershipOut,
    WorkflowCancelIn,
    WorkflowCancelOut,
    WorkflowOut,
    WorkflowStartIn,
    WorkflowSuspendIn,
)

__all__ = [
    "READ_ERRORS",
    "WRITE_ERRORS",
    "BackfillIn",
    "BackfillOut",
    "ClaimFilterIn",
    "ClaimOut",
    "ClaimPageOut",
    "ClaimStateOut",
    "EngineListOut",
    "EngineOut",
    "ErrorOut",
    "EventOut",
    "ExpiryOut",
    "ForcedActionOut",
    "OwnershipOut",
    "ReclaimCursorOut",
    "RedriveFilterIn",
    "RedriveOut",
    "RedrivePageOut",
    "ReleaseIn",
    "StaleEpochOut",
    "TakeoverIn",
    "ValidationErrorOut",
    "WorkflowCancelIn",
    "WorkflowCancelOut",
    "WorkflowOut",
    "WorkflowStartIn",
    "WorkflowSuspendIn",
    "utc",
]
