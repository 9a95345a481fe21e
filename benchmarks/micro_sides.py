"""The sides of the single-claim comparison: our store, the same SQL sent raw, and the API.

Every side does the same operations on its own workflow ids, at the same fake-clock time.
The raw side sends the store's own statement text with the values written out by hand,
so the difference between the two is only what the store adds around the database.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from django.db import connection
from django.test.utils import CaptureQueriesContext

from claims.protocol import ClaimRegistry, ClaimTiming, Holder
from claims.protocol.records import ClaimEventRecord, EventKind
from claims.protocol.testing import FakeClock
from claims.store import OrmClaimStore
from claims.store.sql.claim_rows import HOLDER_COLUMNS, claim_statements

ME = "bench-micro"
DEAD = "bench-dead"
START_MS = 1_700_000_000_000
WARMUP = 200
OPS = 2_000
# Transaction control, which the comparison of statement texts leaves out.
_CONTROL = ("BEGIN", "COMMIT", "SAVEPOINT", "RELEASE SAVEPOINT", "ROLLBACK")


def dead_holder() -> Holder:
    return Holder(DEAD, 2, START_MS - 600_000, START_MS - 1_200_000)


def _event(
    workflow_id: str,
    kind: EventKind,
    before: int,
    after: int,
    at: int,
    moved_from: str | None = None,
) -> ClaimEventRecord:
    return ClaimEventRecord(workflow_id, kind, before, after, ME, at, holder_before=moved_from)


class Side:
    """One way of doing some of the operations, on its own set of workflow ids."""

    name = ""
    operations: tuple[str, ...] = ()

    def __init__(self, prefix: str) -> None:
        self.ids = [f"{prefix}-{i:05d}" for i in range(WARMUP + OPS)]
        self.samples: dict[str, list[float]] = {op: [] for op in self.operations}
        # The data statements sent by the first call of each operation, values bound.
        self.sent: dict[str, list[str]] = {}

    def op(self, op: str, workflow_id: str) -> bool:
        raise NotImplementedError

    def close(self) -> None:
        pass


class StoreSide(Side):
    """OrmClaimStore, sending the ClaimEvent rows the registry would send with each CAS."""

    name = "OrmClaimStore"
    operations = ("acquire", "renew", "release", "takeover", "read")

    def __init__(self, clock: FakeClock, timing: ClaimTiming) -> None:
        super().__init__("ms-s")
        self.store = OrmClaimStore()
        self.clock, self.ttl_ms = clock, timing.ttl_ms
        self.held: dict[str, Holder] = {}

    def op(self, op: str, workflow_id: str) -> bool:
        if op in self.sent:
            return self._op(op, workflow_id)
        with CaptureQueriesContext(connection) as queries:
            ok = self._op(op, workflow_id)
        self.sent[op] = [q["sql"] for q in queries.captured_queries if not _is_control(q["sql"])]
        return ok

    def _op(self, op: str, workflow_id: str) -> bool:
        now, store = self.clock(), self.store
        if op == "acquire":
            holder = Holder(ME, 2, now + self.ttl_ms, now)
            self.held[workflow_id] = holder
            return store.cas_grant(
                workflow_id,
                expected_epoch=1,
                expected_holder=None,
                holder=holder,
                event=_event(workflow_id, "acquired", 1, 2, now),
            )
        if op == "read":
            return store.read_claim(workflow_id) is not None
        held = self.held[workflow_id]
        if op == "renew":
            expires = now + self.ttl_ms
            self.held[workflow_id] = Holder(ME, 2, expires, held.claimed_at_ms)
            return store.cas_renew(workflow_id, held=held, expires_at_ms=expires)
        if op == "release":
            event = _event(workflow_id, "released", 2, 2, now)
            return store.cas_release(workflow_id, held=held, event=event)
        # takeover: the row was handed to a dead engine at epoch 2 in between
        return store.cas_grant(
            workflow_id,
            expected_epoch=2,
            expected_holder=dead_holder(),
            holder=Holder(ME, 3, now + self.ttl_ms, now),
            event=_event(workflow_id, "takeover", 2, 3, now, dead_holder().engine_id),
        )


def _is_control(sql: str) -> bool:
    return sql.upper().startswith(_CONTROL)


def holder_values(holder: Holder | None) -> tuple[Any, ...]:
    """A holder as the values of the store's holder columns, in their order: read off the
    column list, so a column the claims gain reaches the raw side's parameters too."""
    return tuple(
        None if holder is None else getattr(holder, name.removeprefix("holder_"))
        for name in HOLDER_COLUMNS
    )


def _event_values(
    workflow_id: str, kind: str, before: int, after: int, at: int, moved_from: str | None = None
) -> tuple:
    return (workflow_id, kind, before, after, ME, None, "", at, moved_from)


class RawSide(Side):
    """The store's statements, written out by hand on a connection Django knows nothing of.

    PostgreSQL: psycopg, autocommit, each statement prepared; SQLite: the sqlite3 module,
    with the CAS and its event in one BEGIN IMMEDIATE transaction, as the store does there.
    """

    operations = StoreSide.operations

    def __init__(self, clock: FakeClock, timing: ClaimTiming) -> None:
        super().__init__("ms-r")
        self.clock, self.ttl_ms = clock, timing.ttl_ms
        self.held: dict[str, Holder] = {}
        self._noting = False
        self.statements = claim_statements()
        self.vendor = connection.vendor
        if self.vendor == "postgresql":
            self.name = "psycopg, same SQL"
            self._pg = psycopg_connection()
            self._cursor = self._pg.cursor()
        else:
            self.name = "sqlite3, same SQL"
            settings = connection.settings_dict
            # The same pragmas as Django's connection (settings: WAL, synchronous=NORMAL).
            self._lite = sqlite3.connect(settings["NAME"], isolation_level=None, timeout=20)
            self._lite.execute("PRAGMA synchronous=NORMAL")

    def op(self, op: str, workflow_id: str) -> bool:
        if op in self.sent:
            return self._op(op, workflow_id)
        self.sent[op] = []
        self._noting = True
        try:
            return self._op(op, workflow_id)
        finally:
            self._noting = False

    def _op(self, op: str, workflow_id: str) -> bool:
        now, s = self.clock(), self.statements
        if op == "acquire":
            holder = Holder(ME, 2, now + self.ttl_ms, now)
            self.held[workflow_id] = holder
            cas = (2, *holder_values(holder), workflow_id, 1, *holder_values(None))
            event = _event_values(workflow_id, "acquired", 1, 2, now)
            return self._transition(op, "grant", cas, event) == 1
        if op == "read":
            return self._fetch(op, s.read, (workflow_id,)) is not None
        held = self.held[workflow_id]
        mine = holder_values(held)
        if op == "renew":
            expires = now + self.ttl_ms
            self.held[workflow_id] = Holder(ME, 2, expires, held.claimed_at_ms)
            return self._execute(op, s.renew, (expires, workflow_id, 2, *mine)) == 1
        if op == "release":
            event = _event_values(workflow_id, "released", 2, 2, now)
            return self._transition(op, "release", (workflow_id, 2, *mine), event) == 1
        taker = Holder(ME, 3, now + self.ttl_ms, now)
        cas = (3, *holder_values(taker), workflow_id, 2, *holder_values(dead_holder()))
        event = _event_values(workflow_id, "takeover", 2, 3, now, dead_holder().engine_id)
        return self._transition(op, "grant", cas, event) == 1

    def _transition(self, op: str, name: str, cas: tuple, event: tuple) -> int:
        if self.vendor == "postgresql":
            return self._execute(op, self.statements.logged[name], (*cas, *event))
        self._lite.execute("BEGIN IMMEDIATE")
        try:
            applied = self._execute(op, self.statements.transitions[name], cas)
            if applied == 1:
                self._execute(op, self.statements.event, event)
        except BaseException:
            self._lite.execute("ROLLBACK")
            raise
        self._lite.execute("COMMIT")
        return applied

    def _execute(self, op: str, sql: str, params: tuple) -> int:
        self._note(op, sql, params)
        if self.vendor == "postgresql":
            self._cursor.execute(sql, params, prepare=True)
            return int(self._cursor.rowcount)
        return self._lite.execute(sql.replace("%s", "?"), params).rowcount

    def _fetch(self, op: str, sql: str, params: tuple) -> Any:
        self._note(op, sql, params)
        if self.vendor == "postgresql":
            self._cursor.execute(sql, params, prepare=True)
            return self._cursor.fetchone()
        return self._lite.execute(sql.replace("%s", "?"), params).fetchone()

    def _note(self, op: str, sql: str, params: tuple) -> None:
        """Keep the first call's statements with their values bound, as Django logs them."""
        if not self._noting:
            return
        if self.vendor == "postgresql":
            bound = connection.ops.compose_sql(sql, params)  # type: ignore[attr-defined]
        else:
            bound = connection.ops.last_executed_query(None, sql, params)
        self.sent.setdefault(op, []).append(bound)

    def close(self) -> None:
        if self.vendor == "postgresql":
            self._pg.close()
        else:
            self._lite.close()


class RegistrySide(Side):
    """The public API: reads, expiry judgement, the CAS and its ClaimEvent row."""

    name = "ClaimRegistry (API)"
    operations = ("acquire", "renew", "release", "takeover")

    def __init__(self, clock: FakeClock, timing: ClaimTiming) -> None:
        super().__init__("ms-g")
        self.registry = ClaimRegistry(OrmClaimStore(), engine_id=ME, clock=clock, timing=timing)

    def op(self, op: str, workflow_id: str) -> bool:
        registry = self.registry
        if op == "acquire":
            return registry.acquire(workflow_id).status == "acquired"
        if op == "renew":
            return registry.renew(workflow_id).status == "renewed"
        if op == "release":
            return registry.release(workflow_id).status == "released"
        return registry.takeover(workflow_id).status == "acquired"


def psycopg_connection() -> Any:
    """A psycopg connection of its own to the benchmark database, in autocommit."""
    import psycopg

    settings = connection.settings_dict
    return psycopg.connect(
        dbname=settings["NAME"],
        user=settings.get("USER") or None,
        password=settings.get("PASSWORD") or None,
        host=settings.get("HOST") or None,
        port=settings.get("PORT") or None,
        autocommit=True,
    )
