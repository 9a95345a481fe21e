"""A dead session's claims taken over by the session, a chunk a statement (docs/design.md
§4, "A mass failure is split"; the statement is ``sql.session_claims``)."""

from __future__ import annotations

import json
from collections.abc import Sequence

from django.db import connection, transaction

from claims.models import ClaimEvent, ClaimEventKind, Workflow
from claims.protocol.records import SessionPair, SessionTakeover

from .sql.session_claims import take_over_session_statement


class SessionClaimQueries:
    def take_over_session_claims(
        self,
        pair: SessionPair,
        takeover: SessionTakeover,
        *,
        limit: int,
        workflow_types: Sequence[str] | None,
        skip: Sequence[str],
    ) -> dict[str, tuple[int, str]]:
        if limit < 1:
            return {}
        sql = take_over_session_statement()
        dead_engine, dead_epoch = pair
        taker = [takeover.engine_id, None, takeover.now_ms, takeover.session_epoch]
        types = None if workflow_types is None else sorted(workflow_types)
        if connection.vendor == "postgresql":
            params = [
                dead_engine,
                dead_epoch,
                types,
                types,
                list(skip),
                dead_engine,
                dead_epoch,
                limit,
                *taker,
                takeover.engine_id,
                takeover.now_ms,
                dead_engine,
            ]
            with connection.cursor() as cursor:
                cursor.execute(sql, params)
                return {wf: (epoch, status) for wf, epoch, status in cursor.fetchall()}
        types_json = None if types is None else json.dumps(types)
        params = [
            *taker,
            dead_engine,
            dead_epoch,
            types_json,
            types_json,
            json.dumps(list(skip)),
            dead_engine,
            dead_epoch,
            limit,
        ]
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(sql, params)
            epochs = dict(cursor.fetchall())
            statuses = dict(
                Workflow.objects.filter(workflow_id__in=list(epochs)).values_list(
                    "workflow_id", "status"
                )
            )
            ClaimEvent.objects.bulk_create(
                ClaimEvent(
                    workflow_id=wf,
                    kind=ClaimEventKind.TAKEOVER,
                    epoch_before=epoch - 1,
                    epoch_after=epoch,
                    engine_id=takeover.engine_id,
                    actor=None,
                    reason="",
                    at_ms=takeover.now_ms,
                    holder_before=dead_engine,
                )
                for wf, epoch in epochs.items()
            )
        return {wf: (epoch, statuses.get(wf, "")) for wf, epoch in epochs.items()}
