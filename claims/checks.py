"""System checks: `manage.py check` and runserver report a bad claim setting; `check
--deploy` also reports production settings that leave a door open."""

from __future__ import annotations

from typing import Any

from django.core import checks


def check_claim_timing(**kwargs: Any) -> list[checks.CheckMessage]:
    from claims.conf import claim_timing, ownership_mode
    from claims.protocol.errors import ClaimConfigError

    found: list[checks.CheckMessage] = []
    try:
        claim_timing()
    except ClaimConfigError as error:
        found.append(
            checks.Error(
                str(error),
                hint="Use durations like '30s', '9999ms' or '10m', with TTL >= 3 x renew interval.",
                id="claims.E001",
            )
        )
    try:
        ownership_mode()
    except ClaimConfigError as error:
        found.append(
            checks.Error(
                str(error),
                hint="Leave it unset for weft's per-workflow lease, or set 'engine-lease'.",
                id="claims.E002",
            )
        )
    return found


def check_rates(**kwargs: Any) -> list[checks.CheckMessage]:
    """The per-user write and read rates parse, or every request would fail on them."""
    from claims.http.user_limits import READS, WRITES

    found: list[checks.CheckMessage] = []
    for limit in (WRITES, READS):
        try:
            limit.rate()
        except ValueError as error:
            found.append(
                checks.Error(
                    f"{limit.setting}: {error}",
                    hint="Use a whole number per s, min, h or d, like 60/min, or 'off'.",
                    id="claims.E003",
                )
            )
    return found


def check_deploy_settings(**kwargs: Any) -> list[checks.CheckMessage]:
    from django.conf import settings

    found: list[checks.CheckMessage] = []
    if settings.SECURE_PROXY_SSL_HEADER and not settings.WEFTBOARD_TRUSTED_PROXY_COUNT:
        found.append(
            checks.Warning(
                "Behind a proxy (WEFTBOARD_PROXY_SSL_HEADER is set) every sign-in seems to come"
                " from the proxy's address, so the sign-in lock is per user name alone: anyone"
                " can lock an operator out.",
                hint="Set WEFTBOARD_TRUSTED_PROXY_COUNT to the number of proxies in front.",
                id="weftboard.W001",
            )
        )
    if settings.WEFTBOARD_HTTPS and not settings.WEFTBOARD_METRICS_TOKEN:
        found.append(
            checks.Warning(
                "/metrics answers anyone: it shows the fleet's counts and each scrape runs"
                " queries on the database.",
                hint="Set WEFTBOARD_METRICS_TOKEN and give Prometheus the same bearer token.",
                id="weftboard.W002",
            )
        )
    return found


def register_checks() -> None:
    checks.register(check_claim_timing)
    checks.register(check_rates)
    checks.register(check_deploy_settings, checks.Tags.security, deploy=True)
