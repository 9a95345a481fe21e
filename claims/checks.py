"""System checks: `manage.py check` and runserver report a bad claim setting."""

from __future__ import annotations

from typing import Any

from django.core import checks


def check_claim_timing(**kwargs: Any) -> list[checks.CheckMessage]:
    from claims.conf import claim_timing
    from claims.protocol.errors import ClaimConfigError

    try:
        claim_timing()
    except ClaimConfigError as error:
        return [
            checks.Error(
                str(error),
                hint="Use durations like '30s', '9999ms' or '10m', with TTL >= 3 x renew interval.",
                id="claims.E001",
            )
        ]
    return []


def register_checks() -> None:
    checks.register(check_claim_timing)
