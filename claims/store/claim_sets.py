"""The claim rows many at a time: set-based reads, grants and renewals, and the holder
queries of the reclaim pass; each a statement or two for any number of rows."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace

from django.db import connection, transaction
from django.db.models import Q

from claims.models import ClaimEvent, WorkflowClaim
from claims.models.claims import HOLDER_GARBLED, HOLDER_PRESENT, MOVED_FROM_KINDS
from claims.protocol.records import (
    ClaimRow,
    GrantPlan,
    Holder,
    SessionPair,
    StaleHolders,
)

from .rows import HOLDER_COLUMNS, claim_row_from_values, event_row
from .session_pairs import SessionPairWatch
from .sessions import SessionQueries
from .sql.claim_rows import claim_statements

CHUNK = 5_000


def _plan_row(plan: GrantPlan) -> list[object]:
    """A plan as a grant_many row: key, expected epoch and holder, the holder to grant."""
    observed = plan.expected_holder
    return [
        plan.workflow_id,
        plan.expected_epoch,
        None if observed is None else observed.engine_id,
        None if observed is None else observed.epoch,
        None if observed is None else observed.expires_at_ms,
        None if observed is None else observed.claimed_at_ms,
        None if observed is None else observed.session_epoch,
        plan.holder.engine_id,
        plan.holder.expires_at_ms,
        plan.holder.claimed_at_ms,
        plan.holder.session_epoch,
    ]


def _as_columns(rows: Sequence[Sequence[object]]) -> list[list[object]]:
    """Rows as one list per column: the arrays PostgreSQL's unnest takes."""
    return [list(column) for column in zip(*rows, strict=True)]


class ClaimSetQueries(SessionQueries):
    """Set-based reads and writes of the claim rows, chunked to CHUNK rows a statement."""

    def read_claims(self, workflow_ids: Sequence[str]) -> dict[str, ClaimRow]:
        """Many claim rows; those of session holders with their sessions, read in one more
        statement for all the engines they name."""
        rows: dict[str, ClaimRow] = {}
        for start in range(0, len(workflow_ids), CHUNK):
            chunk = workflow_ids[start : start + CHUNK]
            for workflow_id, *values in WorkflowClaim.objects.filter(
                workflow_id__in=chunk
            ).values_list("workflow_id", "epoch", *HOLDER_COLUMNS):
                rows[workflow_id] = claim_row_from_values(workflow_id, *values)
        joined = {
            workflow_id: engine
            for workflow_id, row in rows.items()
            if row.holder is not None and (engine := row.holder.session_engine()) is not None
        }
        if not joined:
            return rows
        sessions = self.read_sessions(set(joined.values()))
        for workflow_id, engine in joined.items():
            rows[workflow_id] = replace(rows[workflow_id], session=sessions.get(engine))
        return rows

    def grant_many(self, plans: Sequence[GrantPlan]) -> set[str]:
        granted: set[str] = set()
        for start in range(0, len(plans), CHUNK):
            chunk = plans[start : start + CHUNK]
            sql = claim_statements(connection.vendor).grant_many
            granted |= self._execute_with_events(sql, [_plan_row(p) for p in chunk], chunk)
        return granted

    def insert_many(self, plans: Sequence[GrantPlan]) -> set[str]:
        inserted: set[str] = set()
        for start in range(0, len(plans), CHUNK):
            chunk = plans[start : start + CHUNK]
            rows: list[list[object]] = [
                [
                    p.workflow_id,
                    p.holder.engine_id,
                    p.holder.expires_at_ms,
                    p.holder.claimed_at_ms,
                    p.holder.session_epoch,
                ]
                for p in chunk
            ]
            sql = claim_statements(connection.vendor).insert_many
            inserted |= self._execute_with_events(sql, rows, chunk)
        return inserted

    def _execute_with_events(
        self, sql: str, rows: list[list[object]], plans: Sequence[GrantPlan]
    ) -> set[str]:
        """Run one set-based statement (``grant_many`` or ``insert_many``) and write the
        events of the rows it changed, in one transaction."""
        with transaction.atomic(), connection.cursor() as cursor:
            if connection.vendor == "postgresql":
                cursor.execute(sql, _as_columns(rows))
            else:
                cursor.execute(sql, [json.dumps(rows)])
            changed = {workflow_id for (workflow_id,) in cursor.fetchall()}
            ClaimEvent.objects.bulk_create(
                event_row(plan.event)
                for plan in plans
                if plan.event is not None and plan.workflow_id in changed
            )
        return changed

    def renew_many(self, held: Sequence[tuple[str, Holder]], *, expires_at_ms: int) -> set[str]:
        if not held:
            return set()
        sql = claim_statements(connection.vendor).renew_many
        rows = [
            (wf, h.epoch, h.engine_id, h.expires_at_ms, h.claimed_at_ms, h.session_epoch)
            for wf, h in held
        ]
        with connection.cursor() as cursor:
            if connection.vendor == "postgresql":
                ids, epochs, engines, expires, claimed, sessions = _as_columns(rows)
                cursor.execute(
                    sql,
                    [expires_at_ms, ids, epochs, epochs, engines, expires, claimed, sessions, ids],
                )
            else:
                cursor.execute(sql, [expires_at_ms, json.dumps(rows)])
            return {workflow_id for (workflow_id,) in cursor.fetchall()}

    def list_stale_holders(self, *, expired_before_ms: int) -> list[str]:
        return self.find_stale_holders(expired_before_ms=expired_before_ms).workflow_ids

    def find_stale_holders(
        self,
        *,
        expired_before_ms: int,
        sweep_above: int | None = None,
        listing_engine: str = "",
        pairs_fresh_within_ms: int | None = None,
    ) -> StaleHolders:
        # Two reads, each along its own partial index, instead of one over every held row
        # (an OR of the two would be judged row by row): the expiries before the bound
        # (a held row's, so present), and the garbled holders (present and invalid).
        stale = set(
            WorkflowClaim.objects.filter(
                holder_expires_at_ms__isnull=False, holder_expires_at_ms__lt=expired_before_ms
            ).values_list("workflow_id", flat=True)
        )
        stale.update(
            WorkflowClaim.objects.filter(HOLDER_GARBLED).values_list("workflow_id", flat=True)
        )
        named, swept = self._stale_session_holders(
            expired_before_ms, sweep_above, listing_engine, pairs_fresh_within_ms
        )
        stale.update(named)
        return StaleHolders(sorted(stale), swept)

    def stale_holder_exists(
        self, *, expired_before_ms: int, pairs_fresh_within_ms: int | None = None
    ) -> bool:
        """Whether ``find_stale_holders`` would find anything, read as far as the first
        (beat's question for the fleet, claims/services/fleet_share.py): an expiry before
        the bound, a garbled holder, or a claim naming a dead session, judged through this
        store's own memory of the session pairs as an engine's discovery judges them."""
        expired = WorkflowClaim.objects.filter(
            holder_expires_at_ms__isnull=False, holder_expires_at_ms__lt=expired_before_ms
        )
        if expired.exists():
            return True
        # Read as discovery reads them, along their partial index: as an EXISTS (a LIMIT 1)
        # PostgreSQL's planner walked the whole table hoping for an early row, 200 ms at a
        # million claims (BENCHMARKS.md, "Fleet discovery"). There are none, or very few.
        if WorkflowClaim.objects.filter(HOLDER_GARBLED).values_list("workflow_id", flat=True):
            return True
        watch, dead = self._dead_pairs(expired_before_ms, pairs_fresh_within_ms)
        found = False
        # Every dead pair is judged, not only up to the first named: one left unjudged
        # would drop out of the watch (it is watched from this read's pairs only).
        for engine, epoch in dead:
            named = WorkflowClaim.objects.filter(
                holder_engine_id=engine, holder_session_epoch=epoch
            ).exists()
            watch.judged((engine, epoch), named=named)
            found = found or named
        return found

    def _dead_pairs(
        self, expired_before_ms: int, fresh_within_ms: int | None
    ) -> tuple[SessionPairWatch, list[tuple[str, int]]]:
        """This store's memory of the session pairs, and the pairs it finds dead now."""
        watch: SessionPairWatch = self.__dict__.setdefault("_pair_watch", SessionPairWatch())
        dead = watch.dead_pairs(
            expired_before_ms=expired_before_ms,
            read_unclosed=self.read_unclosed_sessions,
            read_pairs=self.list_session_pairs,
            read_sessions=self.read_sessions,
            fresh_within_ms=fresh_within_ms,
        )
        return watch, dead

    def _stale_session_holders(
        self,
        expired_before_ms: int,
        sweep_above: int | None,
        listing_engine: str = "",
        pairs_fresh_within_ms: int | None = None,
    ) -> tuple[list[str], dict[SessionPair, int]]:
        """The claims naming a session that is no longer alive: a read of the sessions not
        closed, every PAIRS_READ_EVERY_MS the pairs the claims name (one index step per
        pair), and one indexed read of the claims of each dead pair not found empty before
        (claims/store/session_pairs.py), of at most ``sweep_above`` + 1 of them: a pair
        naming more is counted instead, and swept; ``listing_engine``'s own are listed
        whole (an engine never sweeps its own sessions). Nothing to read in the
        workflow-lease mode."""
        watch, dead = self._dead_pairs(expired_before_ms, pairs_fresh_within_ms)
        stale: list[str] = []
        swept: dict[SessionPair, int] = {}
        for engine, epoch in dead:
            claims = WorkflowClaim.objects.filter(
                holder_engine_id=engine, holder_session_epoch=epoch
            )
            bound = None if engine == listing_engine else sweep_above
            named = list(
                claims.values_list("workflow_id", flat=True)
                if bound is None
                else claims.values_list("workflow_id", flat=True)[: bound + 1]
            )
            watch.judged((engine, epoch), named=bool(named))
            if bound is not None and len(named) > bound:
                swept[(engine, epoch)] = claims.count()
            else:
                stale += named
        return stale, swept

    def list_session_pairs(self) -> list[tuple[str, int]]:
        """Every (engine, session epoch) pair the claims name, in that order: one step along
        the session index per pair, whatever the number of claims."""
        statements = claim_statements(connection.vendor)
        if statements.session_pairs is not None:
            with connection.cursor() as cursor:
                cursor.execute(statements.session_pairs)
                return [(engine, session) for engine, session in cursor.fetchall()]
        sql = statements.next_session_pair
        pairs: list[tuple[str, int]] = []
        after: tuple[str, int] = ("", -1)
        with connection.cursor() as cursor:
            while True:
                cursor.execute(sql, list(after))
                found = cursor.fetchone()
                if found is None:
                    return pairs
                after = (found[0], found[1])
                pairs.append(after)

    def read_claim_moves(
        self, *, since_ms: int, moved_from: str | None = None
    ) -> list[tuple[str, int]]:
        """Along the moves' index (claim_event_moved_from_idx): with ``moved_from``, two
        ranges, the moves from that engine and those naming none before, as long as the
        moves of its own claims; without, the fleet's moves since then."""
        moves = ClaimEvent.objects.filter(
            at_ms__gte=since_ms, kind__in=MOVED_FROM_KINDS, epoch_after__isnull=False
        )
        if moved_from is not None:
            moves = moves.filter(Q(holder_before=moved_from) | Q(holder_before__isnull=True))
        rows = moves.values_list("workflow_id", "epoch_after")
        return [(workflow_id, epoch) for workflow_id, epoch in rows if epoch is not None]

    def list_held_by(self, *, engine_id: str) -> list[str]:
        return list(
            WorkflowClaim.objects.filter(HOLDER_PRESENT, holder_engine_id=engine_id)
            .order_by("workflow_id")
            .values_list("workflow_id", flat=True)
        )

    def list_granted_to(self, *, engine_id: str, claimed_since_ms: int) -> list[str]:
        # Along workflow_claim_granted_idx (engine, claim time): this engine's
        # grants since then, whatever it holds from before.
        return list(
            WorkflowClaim.objects.filter(
                HOLDER_PRESENT,
                holder_engine_id=engine_id,
                holder_claimed_at_ms__gte=claimed_since_ms,
            )
            .order_by("workflow_id")
            .values_list("workflow_id", flat=True)
        )
