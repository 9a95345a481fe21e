from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from claims.fleet_clock import fleet_clock
from claims.services.demo_fleet import demo_fleet_seed


class Command(BaseCommand):
    help = "Seed a demo fleet (workflows, claims, engines, some stranded) into an empty database."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--workflows", type=int, default=300)

    def handle(self, *args: Any, workflows: int, **options: Any) -> None:
        summary = demo_fleet_seed(clock=fleet_clock(), workflows=workflows)
        if summary.held == summary.ownerless_running == summary.unindexed_running == 0:
            self.stdout.write(f"demo data already present ({summary.workflows} workflows)")
            return
        self.stdout.write(
            f"seeded {summary.workflows} workflows: {summary.held} held, "
            f"{summary.ownerless_running} running without a holder, "
            f"{summary.unindexed_running} running but not indexed, "
            f"{summary.stranded_by_dead_engine} held by a vanished engine"
        )
