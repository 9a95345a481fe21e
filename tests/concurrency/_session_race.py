"""One engine renews its session while rival engines try to close it for takeover the moment
it is expired; every result is recorded for ``check_session_race``.

Spawned child processes import this module before Django is set up, so nothing here
imports Django, the models or the store at module level.
"""

from __future__ import annotations

import random
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

from claims.protocol import ClaimTiming
from claims.protocol.session_lease import EngineSessionLease, close_expired_session
from claims.protocol.sessions import derive_session_state

from ._race_engine import run_spawned

# With the clock of _race_engine (1,500 ms every 10 ms of real time), a session nobody
# renews is expired (TTL + 2 x renew interval = 5 s) about 35 ms of real time later; the
# owner pauses 0 to 60 ms between renewals, so it often wakes to an expired session.
TIMING = ClaimTiming(ttl_ms=3_000, renew_interval_ms=1_000)
OWNER = "session-owner"
RIVAL_COUNT = 3
DURATION_S = 3.0
MAX_OWNER_PAUSE_S = 0.060


def run_owner(store: Any, clock: Any, seed: int) -> dict[str, Any]:
    """Renew, pausing at random; on a lost session open the next one. Records each
    (call, status, epoch, expires) in order."""
    rng = random.Random(seed)
    lease = EngineSessionLease(store, engine_id=OWNER, clock=clock, timing=TIMING)
    results: list[tuple[str, str, int | None, int | None]] = []
    deadline = time.monotonic() + DURATION_S
    while time.monotonic() < deadline:
        if lease.epoch is None:
            opened = lease.open()
            results.append(("open", opened.status, opened.epoch, opened.expires_at_ms))
        else:
            renewed = lease.renew()
            results.append(("renew", renewed.status, renewed.epoch, renewed.expires_at_ms))
        time.sleep(rng.uniform(0, MAX_OWNER_PAUSE_S))
    return {"role": "owner", "results": results}


def run_rival(store: Any, clock: Any, rival_id: str) -> dict[str, Any]:
    """Read the owner's session and close it whenever the rule says it is expired.
    Records each close that applied as (epoch, expiry it compared, now)."""
    closes: list[tuple[int, int, int]] = []
    judged = Counter[str]()
    deadline = time.monotonic() + DURATION_S
    while time.monotonic() < deadline:
        row = store.read_session(OWNER)
        now = clock()
        state = derive_session_state(row, now, TIMING)
        judged[state] += 1
        if row is not None and close_expired_session(
            store, row, now_ms=now, timing=TIMING, by=rival_id
        ):
            closes.append((row.epoch, row.expires_at_ms, now))
        elif state == "expired":
            # Judged expired, yet the close did not apply: a renewal or a rival came first.
            judged["expired-close-refused"] += 1
        time.sleep(0.002)
    return {"role": "rival", "rival": rival_id, "closes": closes, "judged": dict(judged)}


def check_session_race(reports: list[dict[str, Any]], final_row: Any) -> dict[str, Any]:
    """Every close compared the expiry of the owner's last renewal that applied at that
    epoch (no renewal applied after a close), no epoch closed twice, and the owner was
    told of each close by its next call at that epoch."""
    (owner,) = [report for report in reports if report["role"] == "owner"]
    closes = [
        tuple(close)
        for report in reports
        if report["role"] == "rival"
        for close in report["closes"]
    ]
    by_epoch = Counter(epoch for epoch, _, _ in closes)
    assert all(count == 1 for count in by_epoch.values()), f"an epoch closed twice: {by_epoch}"
    last_applied: dict[int, int] = {}
    told_lost: set[int] = set()
    for call, status, epoch, expires in owner["results"]:
        if status in ("opened", "renewed"):
            assert epoch not in told_lost, f"{call} applied at epoch {epoch} after it was lost"
            last_applied[epoch] = expires
        elif status == "lost" and call == "renew":
            told_lost.add(epoch)
    for epoch, compared, now in closes:
        assert compared == last_applied[epoch], (
            f"epoch {epoch} closed on expiry {compared}, but the owner's last renewal that "
            f"applied wrote {last_applied[epoch]}: a renewal landed after the close"
        )
        assert now > compared + TIMING.grace_ms, f"epoch {epoch} closed before it expired"
    open_epoch = max(last_applied)
    untold = {epoch for epoch, _, _ in closes} - told_lost - {open_epoch}
    assert not untold, f"the owner was never told it lost epochs {sorted(untold)}"
    assert told_lost <= set(by_epoch), "the owner lost a session nobody closed"
    assert final_row.epoch == open_epoch
    statuses = Counter(status for _, status, _, _ in owner["results"])
    judged = Counter[str]()
    for report in reports:
        judged.update(report.get("judged", {}))
    return {"owner": dict(statuses), "closes": len(closes), "judged": dict(judged)}


def process_main(
    role: str, database_url: str, clock_value: Any, ready: Any, go: Any, seed: int, out: str
) -> None:
    """Entry point of one spawned process: its own Django and connection."""

    def body(clock: Callable[[], int]) -> dict[str, Any]:
        from claims.store import OrmClaimStore

        store = OrmClaimStore()
        return run_owner(store, clock, seed) if role == "owner" else run_rival(store, clock, role)

    run_spawned({"role": role, "error": None}, database_url, (clock_value, ready, go), out, body)
