"""What a run is asked to do, and its database; nothing here needs Django set up."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from .fleet_under_test import Timing


@dataclass
class Options:
    seed: int
    duration_s: float
    workflows: int
    engines: int
    server_url: str
    database: str
    workdir: Path
    ownership_mode: str = "workflow-lease"
    timing: Timing = field(default_factory=Timing)

    @property
    def short(self) -> bool:
        return self.duration_s < 120

    def database_url(self) -> str:
        parts = urlsplit(self.server_url)
        return urlunsplit((parts.scheme, parts.netloc, f"/{self.database}", "", ""))


def database_recreate(options: Options) -> None:
    """Drop and create the run's own database on the server (never the configured one)."""
    import psycopg

    if not options.database.startswith("weftboard_faults"):
        raise SystemExit(f"faults: refusing to recreate database {options.database!r}")
    with psycopg.connect(options.server_url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{options.database}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{options.database}"')
