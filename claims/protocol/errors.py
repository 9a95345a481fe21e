"""The protocol's error vocabulary; every interface maps these once."""


class ClaimError(Exception):
    """Base of every claim protocol error."""


class ClaimConfigError(ClaimError, ValueError):
    """A timing or configuration value breaks one of the protocol's rules."""


class WorkflowClaimUnavailableError(ClaimError):
    """An explicit single-workflow call met a live claim held by another engine."""

    def __init__(self, workflow_id: str, held_by: str | None) -> None:
        super().__init__(f"workflow {workflow_id!r} is claimed by engine {held_by!r}")
        self.workflow_id = workflow_id
        self.held_by = held_by


class EngineDeposedError(ClaimError):
    """This engine no longer owns the workflow: its fenced write was refused."""

    def __init__(self, workflow_id: str) -> None:
        super().__init__(f"engine was deposed from workflow {workflow_id!r}")
        self.workflow_id = workflow_id


class OwnershipModeMismatchError(ClaimError):
    """The fleet was established in another ownership mode than this engine's."""

    def __init__(
        self, configured_mode: str, stored_mode: str, established_at_ms: int | None
    ) -> None:
        super().__init__(
            f"ownership mode mismatch: this engine is configured for {configured_mode!r} "
            f"but the database was established in {stored_mode!r} "
            f"(at {established_at_ms} ms); refusing to start"
        )
        self.configured_mode = configured_mode
        self.stored_mode = stored_mode
        self.established_at_ms = established_at_ms


class OwnershipMarkerUnreadableError(ClaimError):
    """The ownership-mode marker exists but cannot be understood; it is never overwritten."""


class StaleEpochError(ClaimError):
    """An action named an epoch the claim has already moved past."""

    def __init__(
        self, workflow_id: str, expected_epoch: int | None, current_epoch: int | None
    ) -> None:
        super().__init__(
            f"claim of workflow {workflow_id!r} is at epoch {current_epoch}, "
            f"not the expected {expected_epoch}"
        )
        self.workflow_id = workflow_id
        self.expected_epoch = expected_epoch
        self.current_epoch = current_epoch


class InvalidInputError(ClaimConfigError):
    """Operator text or an identifier that breaks the one input rule (claims.protocol.text)."""


class InvalidWorkflowIdError(ClaimError, ValueError):
    """A workflow id that is empty, longer than 255 characters or holds control characters."""


class WorkflowNotFoundError(ClaimError, LookupError):
    def __init__(self, workflow_id: str) -> None:
        super().__init__(f"no workflow with id {workflow_id!r}")
        self.workflow_id = workflow_id


class ConflictError(ClaimError):
    """The current state of what a request names rules the request out (a 409): asking
    again changes nothing until that state changes."""


class InvalidTransitionError(ClaimError):
    """The workflow's status does not allow the requested change."""

    def __init__(self, workflow_id: str, status: str, action: str) -> None:
        super().__init__(f"cannot {action} workflow {workflow_id!r}: it is {status}")
        self.workflow_id = workflow_id
        self.status = status
        self.action = action


class SessionUnavailableError(RuntimeError):
    """This engine could not open a session, so it cannot grant claims now (engine-lease
    mode, claims.protocol.session_leases)."""


class SessionRenewalError(RuntimeError):
    """The session renewal raised (it is in doubt until the next one reads the row)."""
