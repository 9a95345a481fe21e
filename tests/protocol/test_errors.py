"""The protocol's error vocabulary (docs/design.md §3)."""

from __future__ import annotations

import pytest

import claims.protocol
import claims.protocol.errors
from claims.protocol.errors import (
    ClaimConfigError,
    ClaimError,
    EngineDeposedError,
    OwnershipMarkerUnreadableError,
    OwnershipModeMismatchError,
    StaleEpochError,
    WorkflowClaimUnavailableError,
)

ERROR_NAMES = [
    "ClaimConfigError",
    "WorkflowClaimUnavailableError",
    "EngineDeposedError",
    "OwnershipModeMismatchError",
    "OwnershipMarkerUnreadableError",
    "StaleEpochError",
]


@pytest.mark.parametrize("name", ERROR_NAMES)
def test_errors_are_importable_from_the_package_and_the_errors_module(name):
    """Each error is the same class whether imported from claims.protocol or its errors module."""
    assert getattr(claims.protocol, name) is getattr(claims.protocol.errors, name)
    assert issubclass(getattr(claims.protocol, name), ClaimError)


def test_claim_config_error_is_a_value_error():
    """ClaimConfigError is a ValueError, so config loaders may catch either."""
    assert issubclass(ClaimConfigError, ValueError)
    assert isinstance(ClaimConfigError("ttl must be positive"), ValueError)


def test_workflow_claim_unavailable_error_keeps_its_arguments():
    """WorkflowClaimUnavailableError keeps .workflow_id and .held_by and names both."""
    error = WorkflowClaimUnavailableError("wf-1", "engine-b")

    assert (error.workflow_id, error.held_by) == ("wf-1", "engine-b")
    assert "wf-1" in str(error)
    assert "engine-b" in str(error)


def test_workflow_claim_unavailable_error_allows_unknown_holder():
    """held_by may be None when the holder is not known."""
    assert WorkflowClaimUnavailableError("wf-1", None).held_by is None


def test_engine_deposed_error_keeps_its_arguments():
    """EngineDeposedError keeps .workflow_id and names it."""
    error = EngineDeposedError("wf-1")

    assert error.workflow_id == "wf-1"
    assert "wf-1" in str(error)


def test_ownership_mode_mismatch_error_keeps_its_arguments():
    """OwnershipModeMismatchError keeps both modes and the establishment time, and names them."""
    error = OwnershipModeMismatchError("workflow-lease", "lease", 1_234)

    assert error.configured_mode == "workflow-lease"
    assert error.stored_mode == "lease"
    assert error.established_at_ms == 1_234
    message = str(error)
    assert "workflow-lease" in message
    assert "'lease'" in message
    assert "1234" in message


def test_stale_epoch_error_keeps_its_arguments():
    """StaleEpochError keeps .workflow_id, .expected_epoch and .current_epoch and names them."""
    error = StaleEpochError("wf-1", 3, 5)

    assert (error.workflow_id, error.expected_epoch, error.current_epoch) == ("wf-1", 3, 5)
    message = str(error)
    assert "wf-1" in message
    assert "3" in message
    assert "5" in message


def test_errors_are_raisable_and_catchable_as_claim_error():
    """Every protocol error can be caught as ClaimError."""
    for error in (
        ClaimConfigError("bad"),
        WorkflowClaimUnavailableError("wf", "b"),
        EngineDeposedError("wf"),
        OwnershipModeMismatchError("lease", "workflow-lease", None),
        OwnershipMarkerUnreadableError("unknown mode"),
        StaleEpochError("wf", 1, None),
    ):
        with pytest.raises(ClaimError):
            raise error
