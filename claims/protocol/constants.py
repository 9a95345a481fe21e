"""Protocol constants shared by every engine of a fleet (docs/design.md §3)."""

from typing import Final, Literal

DEFAULT_TTL_MS: Final = 30_000
DEFAULT_RENEW_INTERVAL_MS: Final = 5_000
# A TTL shorter than three renew intervals leaves too little room for two
# missed renewals before the claim can be taken over.
TTL_SAFETY_MULTIPLIER: Final = 3
# Expiry waits this many renew intervals past expires_at, absorbing clock skew.
GRACE_MULTIPLIER: Final = 2
TAKEOVER_MAX_ATTEMPTS: Final = 5
AUTHORITATIVE_SCAN_LIMIT: Final = 500
# A reclaim pass takes its candidates over this many at a time (one set-based takeover per
# chunk), checking its time budget between chunks.
RECLAIM_CHUNK: Final = 1_000
# Timestamps must stay exact in a JavaScript number (weft shares the rows).
MAX_SAFE_INTEGER: Final = 2**53 - 1
# What a BIGINT column holds on both databases. A keyset cursor carries the value of the
# row a page ended on, so it is taken back anywhere in this range, even where the row
# itself is outside the rules (a time past year 9999 another program wrote); past it a
# number is an error in the database, not a position, so an edited cursor is refused.
COLUMN_INT_MIN: Final = -(2**63)
COLUMN_INT_MAX: Final = 2**63 - 1

Outcome = Literal["acquired", "takeover", "lost_race", "deposed", "backoff_skipped"]
OUTCOMES: Final[tuple[Outcome, ...]] = (
    "acquired",
    "takeover",
    "lost_race",
    "deposed",
    "backoff_skipped",
)

OwnershipMode = Literal["lease", "workflow-lease", "engine-lease"]
OWNERSHIP_MODES: Final[tuple[OwnershipMode, ...]] = ("lease", "workflow-lease", "engine-lease")
# The modes a weftboard engine runs: weft's per-workflow lease, and claims held under one
# session lease per engine (docs/design.md §12). weft's "lease" mode is known to the gate,
# so a weft fleet's marker is refused by name, but no weftboard engine runs it.
EngineOwnershipMode = Literal["workflow-lease", "engine-lease"]
ENGINE_OWNERSHIP_MODES: Final[tuple[EngineOwnershipMode, ...]] = ("workflow-lease", "engine-lease")
