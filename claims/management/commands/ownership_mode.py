"""Show the fleet's ownership mode, or switch it while no engine runs (docs/design.md §12)."""

from __future__ import annotations

import getpass
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from claims.models import OwnershipModeMarker
from claims.protocol.constants import ENGINE_OWNERSHIP_MODES
from claims.protocol.errors import ClaimConfigError, ClaimError


class Command(BaseCommand):
    help = (
        "Show the ownership mode the fleet's engines run, or switch it with --switch-to. "
        "A switch is refused while any engine is active or disposing: stop every engine, "
        "switch, then start them with WEFT_OWNERSHIP_MODE set to the new mode."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--switch-to",
            choices=ENGINE_OWNERSHIP_MODES,
            help="the mode to switch the fleet to",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        from claims.fleet_clock import fleet_clock
        from claims.services.ownership import ownership_mode_switch

        target = options.get("switch_to")
        if target is None:
            marker = OwnershipModeMarker.objects.filter(id=1).first()
            if marker is None:
                self.stdout.write("no engine has started yet: the first one sets the mode")
            else:
                self.stdout.write(f"{marker.mode} (since {marker.established_at_ms} ms)")
            return
        try:
            switch = ownership_mode_switch(
                mode=target, now_ms=fleet_clock()(), actor=f"manage.py ({getpass.getuser()})"
            )
        except (ClaimError, ClaimConfigError) as error:
            raise CommandError(str(error)) from error
        if not switch.switched:
            self.stdout.write(f"the fleet is in the {switch.mode} mode already; nothing changed")
            return
        self.stdout.write(
            f"switched from {switch.previous or 'no mode'} to {switch.mode}: start the engines "
            f"with WEFT_OWNERSHIP_MODE={switch.mode}"
        )
