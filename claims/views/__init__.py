"""Operator pages: thin views over claims.selectors and the claim services."""

from .actions import (
    claim_release,
    claim_takeover,
    workflow_cancel_action,
    workflow_resume_action,
    workflow_suspend_action,
)
from .audit import audit
from .claims import claims
from .engine_actions import engine_drain_view, engine_release, engine_undrain_view
from .engines import engine, engines
from .overview import overview
from .queues import backfills, redrives
from .reclaim import reclaim
from .workflows import workflow

__all__ = [
    "audit",
    "backfills",
    "claim_release",
    "claim_takeover",
    "claims",
    "engine",
    "engine_drain_view",
    "engine_release",
    "engine_undrain_view",
    "engines",
    "overview",
    "reclaim",
    "redrives",
    "workflow",
    "workflow_cancel_action",
    "workflow_resume_action",
    "workflow_suspend_action",
]
