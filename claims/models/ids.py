"""How long the ids every table stores may be."""

WORKFLOW_ID_MAX_LENGTH = 255
ENGINE_ID_MAX_LENGTH = 255
