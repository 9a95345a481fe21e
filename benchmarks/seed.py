"""Large fleets in a few statements: INSERT ... SELECT over a generated series of numbers.

PostgreSQL reads the series from ``generate_series``, SQLite from a recursive CTE, so
a million workflows (with their visibility rows and claim rows) load in seconds
instead of the minutes a million ORM objects would take.

Workflow ``g`` (id ``wf-%07d``) gets the rank ``r = g * STRIDE mod total``, a
permutation of 0..total-1 that scatters each band of ranks over the whole key space,
as real ids would be; the bands below decide what each workflow is. Python recovers
the ids of a band with the inverse permutation.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from django.db import connection

from claims.models import (
    ClaimEvent,
    EngineSession,
    OwnerlessMark,
    Workflow,
    WorkflowClaim,
    WorkflowVisibility,
)

from .setup import BATCH_SIZE, settle_marks

STRIDE = 7_919  # a prime: coprime with every total that is not one of its multiples
PAYLOAD = "x" * 180  # the anchors' dataset carries ~200 bytes of state per workflow
WORKFLOW_TYPES = ("order", "invoice", "ledger")  # the demo types, registered on the engine
MINUTE_MS = 60_000
DAY_MS = 24 * 60 * MINUTE_MS


@dataclass(frozen=True)
class Layout:
    """Bands of ranks, in this order; every workflow past them is finished.

    held: running, held by a live engine, valid for a TTL. in_grace: running, held,
    past its expiry but inside the grace (not a reclaim candidate). reserve: completed,
    claim row without holder, turned into stranded workflows on demand (``strand``).
    ownerless: running and never claimed (no claim row), as a start with no engine
    leaves them. Finished workflows keep their claim row (rows are never deleted).
    """

    total: int
    now_ms: int
    ttl_ms: int
    renew_interval_ms: int
    held: int = 0
    in_grace: int = 0
    reserve: int = 0
    ownerless: int = 0
    live_engines: int = 8
    # The engine-lease mode: held claims name session 1 of their engine and store no
    # expiry of their own (the caller opens the sessions); in_grace must then be empty.
    sessions: bool = False

    def __post_init__(self) -> None:
        if math.gcd(STRIDE, self.total) != 1:
            raise ValueError(f"total {self.total} must be coprime with {STRIDE}")
        if self.sessions and self.in_grace:
            raise ValueError("under sessions a claim is in grace with its session: no in_grace")
        if self.held + self.in_grace + self.reserve + self.ownerless > self.total:
            raise ValueError("the bands do not fit in the total")

    def band(self, name: str) -> tuple[int, int]:
        """[start, end) ranks of a band."""
        order = ("held", "in_grace", "reserve", "ownerless")
        start = sum(getattr(self, n) for n in order[: order.index(name)])
        return start, start + getattr(self, name)

    def ids(self, name: str) -> list[str]:
        """The ids of a band, in rank order (scattered over the key space)."""
        start, end = self.band(name)
        inverse = pow(STRIDE, -1, self.total)
        return [workflow_id(r * inverse % self.total) for r in range(start, end)]


def workflow_id(g: int) -> str:
    return f"wf-{g:07d}"


def _series(total: int) -> str:
    if connection.vendor == "postgresql":
        return f"WITH s(g) AS (SELECT generate_series(0, {total - 1}))"
    return f"WITH RECURSIVE s(g) AS (SELECT 0 UNION ALL SELECT g + 1 FROM s WHERE g < {total - 1})"


def _numbers(total: int) -> str:
    """The derived table n(g, r, wid)."""
    if connection.vendor == "postgresql":
        wid = "'wf-' || lpad(g::text, 7, '0')"
    else:
        wid = "printf('wf-%07d', g)"
    return f"(SELECT g, (CAST(g AS BIGINT) * {STRIDE}) % {total} AS r, {wid} AS wid FROM s) AS n"


def _table(model: type) -> str:
    return connection.ops.quote_name(model._meta.db_table)  # type: ignore[attr-defined]


def _status(layout: Layout) -> str:
    held_end = layout.band("in_grace")[1]
    reserve_end = layout.band("reserve")[1]
    ownerless_end = layout.band("ownerless")[1]
    return (
        f"CASE WHEN r < {held_end} THEN 'running' WHEN r < {reserve_end} THEN 'completed' "
        f"WHEN r < {ownerless_end} THEN 'running' "
        "WHEN g % 9 < 2 THEN 'failed' ELSE 'completed' END"
    )


def _type() -> str:
    a, b, c = WORKFLOW_TYPES
    return f"CASE g % 3 WHEN 0 THEN '{a}' WHEN 1 THEN '{b}' ELSE '{c}' END"


def _execute(sql: str) -> None:
    # No parameters: the statement is all literals we made, and '%' stays an operator.
    with connection.cursor() as cursor:
        cursor.execute(sql)


def seed(layout: Layout) -> dict[str, float | int | bool]:
    """Load the workflows, their visibility rows and their claim rows; return timings."""
    created = layout.now_ms - DAY_MS
    # Every workflow parked until a day on (a sleep's park, as the runtime writes it): the
    # running ones are due then, so a wake pass finds nothing due.
    wake_at = layout.now_ms + DAY_MS
    park = f'"park": {{"sleep": 0, "wake_at_ms": {wake_at}}}'
    state = f'{{"input": "{PAYLOAD}", "steps": {{}}, {park}}}'
    state_sql = f"CAST('{state}' AS jsonb)" if connection.vendor == "postgresql" else f"'{state}'"
    series, numbers = _series(layout.total), _numbers(layout.total)
    timings: dict[str, float | int | bool] = {"total": layout.total}
    started = time.perf_counter()
    _execute(
        f"{series} INSERT INTO {_table(Workflow)} "
        "(workflow_id, workflow_type, status, state, created_at_ms, updated_at_ms, due_at_ms) "
        f"SELECT wid, {_type()}, {_status(layout)}, {state_sql}, {created} + g, {created} + g, "
        f"CASE WHEN {_status(layout)} = 'running' THEN {wake_at} ELSE 0 END "
        f"FROM {numbers}"
    )
    timings["workflows_s"] = round(time.perf_counter() - started, 2)
    mark = time.perf_counter()
    _execute(
        f"{series} INSERT INTO {_table(WorkflowVisibility)} "
        "(workflow_id, status, workflow_type, updated_at_ms) "
        f"SELECT wid, {_status(layout)}, {_type()}, {created} + g FROM {numbers}"
    )
    timings["visibility_s"] = round(time.perf_counter() - mark, 2)
    mark = time.perf_counter()
    held_end = layout.band("held")[1]
    grace_end = layout.band("in_grace")[1]
    ownerless_start, ownerless_end = layout.band("ownerless")
    live = f"'bench-live-' || (g % {layout.live_engines})"
    expires = (
        f"CASE WHEN r < {held_end} THEN {layout.now_ms + layout.ttl_ms} - g % 1000 "
        f"WHEN r < {grace_end} THEN {layout.now_ms - layout.renew_interval_ms} END"
    )
    session_epoch = "NULL"
    if layout.sessions:
        expires, session_epoch = "NULL", f"CASE WHEN r < {held_end} THEN 1 END"
    _execute(
        f"{series} INSERT INTO {_table(WorkflowClaim)} "
        "(workflow_id, epoch, holder_engine_id, holder_epoch, holder_expires_at_ms, "
        "holder_claimed_at_ms, holder_session_epoch) "
        f"SELECT wid, 1 + g % 3, CASE WHEN r < {grace_end} THEN {live} END, "
        f"CASE WHEN r < {grace_end} THEN 1 + g % 3 END, {expires}, "
        f"CASE WHEN r < {grace_end} THEN {layout.now_ms - MINUTE_MS} END, {session_epoch} "
        f"FROM {numbers} WHERE r < {ownerless_start} OR r >= {ownerless_end}"
    )
    timings["claims_s"] = round(time.perf_counter() - mark, 2)
    mark = time.perf_counter()
    timings["analyzed"] = vacuum_analyze()
    timings["analyze_s"] = round(time.perf_counter() - mark, 2)
    timings["seed_s"] = round(time.perf_counter() - started, 2)
    return timings


def vacuum_analyze() -> bool:
    """The ownerless marks judged again (``setup.settle_marks``); on PostgreSQL, the fresh
    tables left as autovacuum would within minutes: visibility map set (index-only scans),
    hint bits written, statistics taken."""
    settle_marks()
    if connection.vendor != "postgresql":
        return False
    for model in (Workflow, WorkflowVisibility, WorkflowClaim, OwnerlessMark):
        _execute(f"VACUUM (ANALYZE) {_table(model)}")
    return True


def clear() -> None:
    """Empty the tables a fleet lives in (claim rows by raw SQL: the ORM refuses)."""
    for model in (
        WorkflowClaim,
        ClaimEvent,
        WorkflowVisibility,
        Workflow,
        EngineSession,
        OwnerlessMark,
    ):
        if connection.vendor == "postgresql":
            _execute(f"TRUNCATE {_table(model)}")
        else:
            _execute(f"DELETE FROM {_table(model)}")


def _each_chunk(sql: str, ids: list[str], params: tuple[Any, ...]) -> Iterator[Any]:
    """Run ``sql`` (with ``{ids}`` where the id list goes) over ids in chunks, yielding the
    cursor after each chunk's statement."""
    with connection.cursor() as cursor:
        for start in range(0, len(ids), BATCH_SIZE):
            chunk = ids[start : start + BATCH_SIZE]
            marks = ", ".join(["%s"] * len(chunk))
            cursor.execute(sql.format(ids=marks), [*params, *chunk])
            yield cursor


def execute_in(sql: str, ids: list[str], params: tuple[Any, ...] = ()) -> int:
    """Run ``sql`` over ids in chunks (see ``_each_chunk``); rows changed."""
    return sum(max(cursor.rowcount, 0) for cursor in _each_chunk(sql, ids, params))


def count_in(sql: str, ids: list[str], params: tuple[Any, ...] = ()) -> int:
    """Sum a ``SELECT COUNT(*) ... IN ({ids})`` over ids in chunks."""
    return sum(int(cursor.fetchone()[0]) for cursor in _each_chunk(sql, ids, params))


def add_parked(
    count: int, engines: list[str], *, now_ms: int, sessions: bool, prefix: str = "wf-p"
) -> dict[str, float | int | bool]:
    """Add ``count`` parked workflows to a fleet already there: running, indexed, each held
    live by one of ``engines`` (in turn) and acquired once (one claim event), under session
    1 of its engine in the engine-lease mode (the caller opens the sessions) or with an
    expiry well inside the TTL. Their ids (``prefix`` and 7 digits) sort after ``wf-0...``."""
    if not engines:
        raise ValueError("parked workflows need at least one live engine")
    series = _series(count)
    wake_at = now_ms + DAY_MS
    parked = (
        f'{{"input": "parked", "steps": {{}}, "park": {{"sleep": 0, "wake_at_ms": {wake_at}}}}}'
    )
    if connection.vendor == "postgresql":
        wid = f"'{prefix}' || lpad(g::text, 7, '0')"
        state = f"CAST('{parked}' AS jsonb)"
    else:
        wid = f"printf('{prefix}%07d', g)"
        state = f"'{parked}'"
    holder = "CASE g % {n} {whens} END".format(
        n=len(engines),
        whens=" ".join(f"WHEN {i} THEN '{engine}'" for i, engine in enumerate(engines)),
    )
    numbers = f"(SELECT g, {wid} AS wid, {holder} AS holder FROM s) AS n"
    created = now_ms - DAY_MS
    claimed = now_ms - 10 * MINUTE_MS
    expires, session_epoch = ("NULL", "1") if sessions else (f"{now_ms + 10 * MINUTE_MS}", "NULL")
    timings: dict[str, float | int | bool] = {"parked": count}
    started = time.perf_counter()
    _execute(
        f"{series} INSERT INTO {_table(Workflow)} "
        "(workflow_id, workflow_type, status, state, created_at_ms, updated_at_ms, due_at_ms) "
        f"SELECT wid, {_type()}, 'running', {state}, {created} + g, {claimed}, {wake_at} "
        f"FROM {numbers}"
    )
    _execute(
        f"{series} INSERT INTO {_table(WorkflowVisibility)} "
        "(workflow_id, status, workflow_type, updated_at_ms) "
        f"SELECT wid, 'running', {_type()}, {claimed} FROM {numbers}"
    )
    _execute(
        f"{series} INSERT INTO {_table(WorkflowClaim)} "
        "(workflow_id, epoch, holder_engine_id, holder_epoch, holder_expires_at_ms, "
        "holder_claimed_at_ms, holder_session_epoch) "
        f"SELECT wid, 1, holder, 1, {expires}, {claimed}, {session_epoch} FROM {numbers}"
    )
    _execute(
        f"{series} INSERT INTO {_table(ClaimEvent)} "
        "(workflow_id, kind, epoch_before, epoch_after, engine_id, reason, at_ms) "
        f"SELECT wid, 'acquired', NULL, 1, holder, '', {claimed} FROM {numbers}"
    )
    timings["insert_s"] = round(time.perf_counter() - started, 2)
    mark = time.perf_counter()
    timings["analyzed"] = vacuum_analyze()
    timings["analyze_s"] = round(time.perf_counter() - mark, 2)
    return timings
