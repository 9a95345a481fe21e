"""The benchmark's parts, their sizes, and the order ``scripts/bench`` runs them in."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .report import Section, Target

PARTS = (
    "renew",
    "reclaim",
    "failover",
    "micro",
    "pages",
    "sessions",
    "bulk",
    "fleet",
    "discovery",
    "failover-mass",
    "pages-1m",
    "bulk-1m",
)
# "fleet", "discovery", "failover-mass", "pages-1m" and "bulk-1m" seed 1,000,000 workflows
# (minutes each): run with --large, or ask for them by name.
LARGE_PARTS = ("fleet", "discovery", "failover-mass", "pages-1m", "bulk-1m")
DEFAULT_PARTS = tuple(part for part in PARTS if part not in LARGE_PARTS)
# PostgreSQL alone: what they measure (WAL) SQLite does not have.
POSTGRESQL_PARTS = ("fleet", "discovery", "failover-mass")
RENEW_SIZES = (10_000,)
LARGE_RENEW_SIZES = (10_000, 100_000)
# The pages at a million claims: the pages part's 100,000 and this many parked.
PAGES_PARKED = 900_000
# The engine-lease mode's failover: one engine's whole session of claims.
SESSION_FAILOVER_WORKFLOWS = 20_000


def run_parts(
    parts: Sequence[str], *, large: bool, binding: bool
) -> tuple[dict[str, Any], list[Target]]:
    """Run the chosen parts in order, printing each table as it is ready; return every
    part's figures by key, and the targets."""
    from . import (
        bulk,
        failover,
        fleet_discovery,
        fleet_scale,
        mass_failover,
        micro,
        pages,
        reclaim,
        reclaim_scale,
        renew,
        session_renew,
    )

    payload: dict[str, Any] = {}
    targets: list[Target] = []

    def show(measured: tuple[dict[str, Any], Section, list[Target]]) -> dict[str, Any]:
        data, section, found = measured
        targets.extend(found)
        print("\n".join(["", *section.render()]), flush=True)
        return data

    if "renew" in parts:
        sizes = LARGE_RENEW_SIZES if large else RENEW_SIZES
        payload["renew"] = [show(renew.run(n, binding=binding)) for n in sizes]
    if "reclaim" in parts:
        payload["reclaim"] = show(reclaim.run(binding=binding))
        payload["reclaim_scale"] = show(reclaim_scale.run(binding=binding, large=large))
    if "failover" in parts:
        payload["failover"] = show(failover.run(binding=binding))
    if "micro" in parts:
        payload["micro"] = show(micro.run(binding=binding))
    if "sessions" in parts:
        payload["sessions"] = show(session_renew.run(binding=binding))
        payload["failover_sessions"] = show(
            failover.run(binding=binding, mode="engine-lease", workflows=SESSION_FAILOVER_WORKFLOWS)
        )
        payload["pages_sessions"] = show(pages.run(binding=binding, sessions=True))
    if "pages" in parts:
        payload["pages"] = show(pages.run(binding=binding))
    if "bulk" in parts:
        payload["bulk"] = show(bulk.run(binding=binding))
    if "fleet" in parts:
        payload["fleet"] = show(fleet_scale.run(binding=binding))
    if "discovery" in parts:
        payload["discovery"] = show(fleet_discovery.run(binding=binding))
    if "failover-mass" in parts:
        payload["failover_mass"] = show(mass_failover.run(binding=binding))
    if "pages-1m" in parts:
        for sessions in (False, True):
            key = "pages_1m_sessions" if sessions else "pages_1m"
            payload[key] = show(pages.run(binding=binding, sessions=sessions, parked=PAGES_PARKED))
    if "bulk-1m" in parts:
        payload["bulk_1m"] = show(bulk.run_million(binding=binding))
    return payload, targets
