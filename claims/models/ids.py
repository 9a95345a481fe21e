"""How long the ids every table stores may be (the protocol's id rules say the same)."""

from claims.protocol.ids import ENGINE_ID_MAX_LENGTH, WORKFLOW_ID_MAX_LENGTH

__all__ = ["ENGINE_ID_MAX_LENGTH", "WORKFLOW_ID_MAX_LENGTH"]
