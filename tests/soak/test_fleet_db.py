"""The soak's read of the fleet's database: which claims a killed engine let go itself."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

from soak.fleet_db import FleetDatabase


def test_only_the_engines_own_release_at_the_held_epoch_counts_as_let_go(tmp_path: Path) -> None:
    """Read just before its kill, the engine may still finish a workflow and release it at
    the same epoch: that claim is let go, not stranded. A release by another engine, or at
    another epoch, is no release of the claim it held."""
    path = tmp_path / "fleet.sqlite3"
    with closing(sqlite3.connect(path)) as db, db:
        db.execute(
            "CREATE TABLE claims_claimevent (workflow_id TEXT, kind TEXT, epoch_before INTEGER,"
            " epoch_after INTEGER, engine_id TEXT)"
        )
        db.executemany(
            "INSERT INTO claims_claimevent VALUES (?, ?, ?, ?, ?)",
            [
                ("wf-own", "released", 5, 5, "dead"),
                ("wf-other-engine", "released", 5, 5, "live"),
                ("wf-earlier-epoch", "released", 4, 4, "dead"),
                ("wf-taken", "takeover", 5, 6, "live"),
            ],
        )
    held = {"wf-own": 5, "wf-other-engine": 5, "wf-earlier-epoch": 5, "wf-taken": 5}

    assert FleetDatabase(path).released_by("dead", held) == {"wf-own"}
