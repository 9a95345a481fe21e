"""A query over the claim rows (the claims listing): the claim's own columns, its derived
state as the listing judges it, and its workflow's columns through one probe per row of
the workflow's primary key."""

from __future__ import annotations

from typing import cast

from django.db.models import F, OuterRef, Q

from claims.models import Engine, Workflow
from claims.protocol.states import CLAIM_STATES
from claims.query import InList, Match, Query, Term, matches
from claims.selectors.claims.conditions import filter_condition
from claims.selectors.claims.session_holders import holders_of
from claims.selectors.engines.names import engine_condition

from .context import QueryContext
from .terms import column_condition, combine, exists_in, text_match
from .workflow_columns import WORKFLOW_FIELDS, workflow_term

CLAIM_COLUMNS = {"id": "workflow_id", "epoch": "epoch", "claimed": "holder_claimed_at_ms"}


def claim_query_condition(query: Query, ctx: QueryContext) -> Q:
    """The claim rows ``query`` selects, as a condition on WorkflowClaim."""
    return combine(query, ctx, claim_term)


def claim_term(term: Term, ctx: QueryContext) -> Q:
    if term.field in CLAIM_COLUMNS:
        return column_condition(CLAIM_COLUMNS[term.field], term, ctx)
    if term.field == "engine":
        return engine_term("holder_engine_id", term)
    if term.field == "state":
        return state_term(term, ctx)
    if term.field == "expires":
        return expires_term(term, ctx)
    if term.field in WORKFLOW_FIELDS:
        workflow = Workflow.objects.filter(pk=OuterRef("workflow_id"))
        return exists_in(workflow, workflow_term(term, ctx))
    raise ValueError(f"no claim column for the field {term.field!r}")


def engine_term(column: str, term: Term) -> Q:
    """The holder's engine, by id or by its worker name: a row has both values."""
    present = Q(**{f"{column}__isnull": False})
    if isinstance(term, Match):
        named = (
            Engine.objects.exclude(name="").filter(text_match(F("name"), term)).values("engine_id")
        )
        return text_match(F(column), term) | Q(**{f"{column}__in": named})
    values = _texts(term)
    named_any = Q()
    for value in values:
        # An engine with an empty name has none: "" names no engine.
        named_any |= engine_condition(column, value) if value else Q(**{column: value})
    return present & ~named_any if _negated(term) else named_any


def state_term(term: Term, ctx: QueryContext) -> Q:
    """The derived states, as the listing's filters judge them (a row is in one of the five
    and may also be stranded or need attention)."""
    any_of = Q(pk__in=[])
    for state in _texts(term):
        sessions = ctx.sessions if state in CLAIM_STATES else None
        any_of |= filter_condition(state, ctx.now_ms, ctx.timing, sessions)
    return ~any_of if _negated(term) else any_of


def expires_term(term: Term, ctx: QueryContext) -> Q:
    """A holder's own expiry, or for a session holder its session's: the sessions whose
    expiry the term selects name their holders."""
    own = Q(holder_session_epoch__isnull=True) & column_condition("holder_expires_at_ms", term, ctx)
    # The sessions are few (one per engine), so the term is judged on each in Python by the
    # language's own meaning.
    selected = [
        pair
        for pair, expires_at_ms in ctx.session_expiries.items()
        if matches(term, {"expires": expires_at_ms}, ctx.now_ms)
    ]
    return own | holders_of(selected) if selected else own


def _negated(term: Term) -> bool:
    """``!=`` and NOT IN: true when none of the row's values is one listed."""
    return (isinstance(term, InList) and term.negated) or getattr(term, "op", "") == "!="


def _texts(term: Term) -> list[str]:
    if isinstance(term, InList):
        return [cast(str, value) for value in term.values]
    return [cast(str, term.value)]  # type: ignore[union-attr]
