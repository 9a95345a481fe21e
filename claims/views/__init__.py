"""Operator pages: thin views over claims.selectors and the claim services."""

from .actions import workflow_action
from .audit import audit
from .claims import claims
from .engine_actions import engine_drain_action, engine_release
from .engines import engine, engines
from .frame import engine_floor
from .overview import overview
from .queues import backfills, redrives
from .reclaim import reclaim
from .workflows import workflow

__all__ = [
    "audit",
    "backfills",
    "claims",
    "engine",
    "engine_drain_action",
    "engine_floor",
    "engine_release",
    "engines",
    "overview",
    "reclaim",
    "redrives",
    "workflow",
    "workflow_action",
]
